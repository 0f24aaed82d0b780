import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import { parseKvOverride } from "../../../src/formats/gguf/kv_override.ts";
import { GgufValueType } from "../../../src/formats/gguf/header.ts";
import { UsageError } from "../../../src/errors.ts";

// llama.cpp's string_parse_kv_override and how llama_model_quantize_impl
// writes each type; whole files in tests/pipeline/llama_quantize_options_test.ts.

Deno.test("parseKvOverride() writes int as UINT32 of |v|, float as FLOAT32, bool and str as given", () => {
  assertEquals(parseKvOverride("a.b=int:-512"), ["a.b", {
    type: GgufValueType.UINT32,
    value: 512,
  }]);
  assertEquals(parseKvOverride("a.b=float:0.1"), ["a.b", {
    type: GgufValueType.FLOAT32,
    value: 0.1,
  }]);
  assertEquals(parseKvOverride("a.b=bool:false"), ["a.b", {
    type: GgufValueType.BOOL,
    value: false,
  }]);
  // The value is everything after the type's colon, '=' and ':' included.
  assertEquals(parseKvOverride("general.name=str:a=b:c"), [
    "general.name",
    { type: GgufValueType.STRING, value: "a=b:c" },
  ]);
});

Deno.test("parseKvOverride() refuses malformed pairs, bad values, long strings and the keys types are chosen by", () => {
  for (
    const bad of [
      "=int:1",
      "a.b",
      "a.b=int",
      "a.b=u32:1",
      "a.b=int:1.5",
      "a.b=int:4294967296",
      "a.b=float:x",
      "a.b=bool:yes",
      `a.b=str:${"x".repeat(128)}`,
      "llama.block_count=int:8",
      "qwen2.attention.head_count_kv=int:2",
      "general.architecture=str:qwen2",
    ]
  ) {
    throws(() => parseKvOverride(bad), UsageError, bad);
  }
});
