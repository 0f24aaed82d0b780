/**
 * Nemotron's refusals and RoPE scaling key. Its GGUF itself is judged against
 * llama.cpp's converter and transformers in tests/interop/families_gguf_test.ts
 * (fixture `nemotron`).
 */

import assert from "node:assert/strict";
import { NEMOTRON } from "../../src/arch/families/nemotron.ts";
import { KvWriter } from "../../src/arch/kv.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/families/hf/nemotron/config.json", import.meta.url)),
) as Record<string, unknown>;

function writer(change: Record<string, unknown>): KvWriter {
  return new KvWriter({ ...CONFIG, ...change }, "nemotron");
}

Deno.test("nemotron: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(NEMOTRON.gguf!.unsupported!(writer({})), undefined);
  assert.match(NEMOTRON.gguf!.unsupported!(writer({ head_dim: 32 }))!, /head_dim 32/);
  const yarn = { rope_type: "yarn", rope_theta: 1e4, factor: 8, partial_rotary_factor: 0.5 };
  assert.match(NEMOTRON.gguf!.unsupported!(writer({ rope_parameters: yarn }))!, /rope_type "yarn"/);
  const linear = { rope_type: "linear", rope_theta: 1e4, factor: 4, partial_rotary_factor: 0.5 };
  assert.equal(NEMOTRON.gguf!.unsupported!(writer({ rope_parameters: linear })), undefined);
});

Deno.test("nemotron: RoPE scaling is written as none, or linear with its factor, as the converter does", () => {
  const plain = writer({});
  NEMOTRON.gguf!.writeKv(plain);
  const keys = new Map(plain.entries());
  assert.equal(keys.get("nemotron.rope.scaling.type")?.value, "none");
  assert.equal(keys.get("nemotron.rope.dimension_count")?.value, 8);
  const linear = writer({
    rope_parameters: {
      rope_type: "linear",
      rope_theta: 1e4,
      factor: 4,
      partial_rotary_factor: 0.5,
    },
  });
  NEMOTRON.gguf!.writeKv(linear);
  const scaled = new Map(linear.entries());
  assert.equal(scaled.get("nemotron.rope.scaling.type")?.value, "linear");
  assert.equal(scaled.get("nemotron.rope.scaling.factor")?.value, 4);
});
