import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import { llamaQuantizeParams } from "../../src/quant/llama_quantize_params.ts";
import { presetTensorTypes } from "../../src/quant/llama_presets.ts";
import { UsageError } from "../../src/errors.ts";
import type { TensorInfo } from "../../src/tensor.ts";

// The flags as tools/quantize/quantize.cpp parses them; whole files against
// llama-quantize are in tests/pipeline/llama_quantize_options_test.ts.

Deno.test("llamaQuantizeParams() reads --tensor-type as llama-quantize: split at the first '=', pattern lowercased, type any case", () => {
  const p = llamaQuantizeParams({ tensorTypes: ["BLK\\.1\\.ATTN_V=Q8_0", "ffn=f16"] });
  assertEquals(p.tensorTypes!.map((o) => [o.pattern.source, o.type]), [
    ["blk\\.1\\.attn_v", "Q8_0"],
    ["ffn", "F16"],
  ]);
  // "=q8_0=x": the type is everything after the first '=', not a ggml type.
  throws(() => llamaQuantizeParams({ tensorTypes: ["a=q8_0=x"] }), UsageError);
  // \D lowercased is \d, as llama-quantize's std::transform(tolower) makes it.
  assertEquals(
    llamaQuantizeParams({ tensorTypes: ["\\D=q8_0"] }).tensorTypes![0]!.pattern.source,
    "\\d",
  );
});

Deno.test("llamaQuantizeParams() refuses unknown types, types aprkit does not write and bad patterns with a UsageError", () => {
  for (
    const flags of [
      { outputTensorType: "q4_9" },
      { tokenEmbeddingType: "i8" },
      { tensorTypes: ["(attn=q8_0"] },
      { tensorTypes: ["attn_q="] },
    ]
  ) {
    throws(() => llamaQuantizeParams(flags), UsageError, JSON.stringify(flags));
  }
});

const t = (name: string, shape: number[]): TensorInfo => ({
  name,
  dtype: "F32",
  shape,
  byteLength: 0,
});

Deno.test("presetTensorTypes(): a type given by --output-tensor-type has no fallback, so rows that are not whole blocks of it are refused", () => {
  const tensors = [t("token_embd.weight", [64, 136]), t("output.weight", [64, 136])];
  const metadata = { architecture: "llama", num_layers: 1 };
  // The mix's own choice falls back (Q6_K → Q8_0 → F16 for rows of 136).
  assertEquals(presetTensorTypes(tensors, metadata, "Q4_K_M"), ["F16", "F16"]);
  throws(
    () =>
      presetTensorTypes(tensors, metadata, "Q4_K_M", {
        params: { outputTensorType: "Q8_0" },
      }),
    /"output\.weight" to Q8_0: its rows of 136 values are not whole 32-value blocks/,
  );
});

Deno.test("presetTensorTypes(): --keep-split's file order changes what the per-layer counters count", () => {
  // Q3_K_M gives the first two attn_v tensors visited Q5_K, the rest Q4_K.
  const tensors = [2, 0, 1].map((i) => t(`blk.${i}.attn_v.weight`, [256, 256]));
  const metadata = { architecture: "llama", num_layers: 3 };
  assertEquals(presetTensorTypes(tensors, metadata, "Q3_K_M"), ["Q4_K", "Q5_K", "Q5_K"]);
  assertEquals(
    presetTensorTypes(tensors, metadata, "Q3_K_M", { params: { fileOrder: true } }),
    ["Q5_K", "Q5_K", "Q4_K"],
  );
});
