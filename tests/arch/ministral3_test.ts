/**
 * Ministral 3's refusals: the YaRN settings llama.cpp's `mistral3` reads no
 * key for. Its GGUF itself is judged against llama.cpp's converter and
 * transformers in tests/interop/families_gguf_test.ts (fixture `ministral3`).
 */

import assert from "node:assert/strict";
import { MINISTRAL3 } from "../../src/arch/families/ministral3.ts";
import { KvWriter } from "../../src/arch/kv.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(
    new URL("../testdata/families/hf/ministral3/config.json", import.meta.url),
  ),
) as Record<string, unknown>;
const ROPE = CONFIG["rope_parameters"] as Record<string, unknown>;

function refusal(rope: Record<string, unknown>): string | undefined {
  const config = { ...CONFIG, rope_parameters: { ...ROPE, ...rope } };
  return MINISTRAL3.gguf!.unsupported!(new KvWriter(config, "mistral3"));
}

Deno.test("ministral3: a YaRN llama.cpp would compute otherwise is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  // mscale is read by no key: llama.cpp computes as with 1.
  assert.match(refusal({ mscale: 0.707 })!, /YaRN mscale 0\.707 .*as with 1/);
  // Both 0.707 (DeepSeek's): transformers' factor is 1, llama.cpp's mscale(1)/mscale(0.707).
  assert.match(refusal({ mscale: 0.707, mscale_all_dim: 0.707 })!, /mscale 0\.707/);
  // Without mscale_all_dim both compute mscale(factor, 1).
  assert.equal(refusal({ mscale: 2, mscale_all_dim: undefined }), undefined);
  assert.match(refusal({ attention_factor: 1.2 })!, /attention_factor 1\.2/);
  assert.match(
    refusal({ rope_type: "default", factor: undefined })!,
    /without YaRN and llama_4_scaling_beta \(rope_type "default"\)/,
  );
  assert.match(refusal({ llama_4_scaling_beta: undefined })!, /llama_4_scaling_beta/);
});

Deno.test("ministral3: the converter's extra keys are written after LlamaModel's", () => {
  const w = new KvWriter(CONFIG, "mistral3");
  MINISTRAL3.gguf!.writeKv(w);
  const keys = [...w.entries().keys()];
  assert.deepEqual(keys.slice(-2), [
    "mistral3.rope.scaling.yarn_log_multiplier",
    "mistral3.attention.temperature_scale",
  ]);
  assert.equal(w.entries().get("mistral3.attention.temperature_scale")!.value, 0.5);
});
