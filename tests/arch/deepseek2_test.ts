/**
 * The DeepSeek family's refusals and dropped layers (its GGUF itself is
 * judged against llama.cpp's converter and transformers in
 * tests/interop/families_gguf_test.ts, fixtures `deepseek2` and `deepseek3`).
 */

import assert from "node:assert/strict";
import { DEEPSEEK2 } from "../../src/arch/families/deepseek2.ts";
import { KvWriter } from "../../src/arch/kv.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(
    new URL("../testdata/families/hf/deepseek3/config.json", import.meta.url),
  ),
) as Record<string, unknown>;

function refusal(change: Record<string, unknown>): string | undefined {
  return DEEPSEEK2.gguf!.unsupported!(new KvWriter({ ...CONFIG, ...change }, "deepseek2"));
}

Deno.test("deepseek2: a config llama.cpp would run otherwise than transformers is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  assert.match(refusal({ scoring_func: "softmax" })!, /scoring_func "softmax".*sigmoid/);
  // transformers' DeepseekV3Config has no scoring_func; without it llama.cpp uses a softmax.
  assert.match(refusal({ scoring_func: undefined })!, /scoring_func null/);
  const v2 = { model_type: "deepseek_v2", architectures: ["DeepseekV2ForCausalLM"] };
  assert.match(refusal({ ...v2 })!, /scoring_func "sigmoid".*softmax/);
  assert.equal(refusal({ ...v2, scoring_func: undefined }), undefined);
  assert.match(refusal({ q_lora_rank: null })!, /no q_lora_rank with 2 layers/);
  assert.equal(refusal({ q_lora_rank: null, num_hidden_layers: 27 }), undefined);
  assert.match(refusal({ num_key_value_heads: 1 })!, /num_key_value_heads 1/);
  assert.match(refusal({ rope_interleave: false })!, /rope_interleave false/);
});

Deno.test("deepseek2: YaRN's mscale other than mscale_all_dim is refused (llama.cpp's deepseek2 reads only the latter), naming both", () => {
  const yarn = CONFIG["rope_parameters"] as Record<string, unknown>;
  const rope = (change: Record<string, unknown>) =>
    refusal({ rope_parameters: { ...yarn, ...change } });
  // The fixture: DeepSeek-V3's 0.707 and 0.707; Kimi-K2's 1 and 1.
  assert.equal(rope({}), undefined);
  assert.equal(rope({ mscale: 1, mscale_all_dim: 1 }), undefined);
  // Measured 0.27 off transformers on the fixture's weights.
  assert.match(
    rope({ mscale: 1 })!,
    /YaRN mscale 1 and mscale_all_dim 0\.707: llama\.cpp's deepseek2 reads only mscale_all_dim/,
  );
  assert.match(rope({ mscale: undefined })!, /YaRN mscale null and mscale_all_dim 0\.707/);
  // Without mscale_all_dim both fall back to YaRN's own scale; at a factor of 1 nothing scales.
  assert.equal(rope({ mscale: 1, mscale_all_dim: undefined }), undefined);
  assert.equal(rope({ mscale: 1, factor: 1 }), undefined);
});

Deno.test("deepseek2: multi-token-prediction layers (from num_hidden_layers on) are dropped, as the converter drops them", () => {
  const w = new KvWriter({ ...CONFIG, num_hidden_layers: 61 }, "deepseek2");
  const drops = DEEPSEEK2.gguf!.drops!;
  assert.equal(drops("model.layers.60.self_attn.kv_b_proj.weight", w), false);
  assert.equal(drops("model.layers.61.eh_proj.weight", w), true);
  assert.equal(drops("model.layers.61.mlp.experts.0.up_proj.weight", w), true);
  assert.equal(drops("model.norm.weight", w), false);
});

Deno.test("deepseek2: kv_b_proj of the wrong shape is refused, naming the tensor", () => {
  const w = new KvWriter(CONFIG, "deepseek2");
  const info = {
    name: "model.layers.0.self_attn.kv_b_proj.weight",
    dtype: "F32" as const,
    shape: [100, 32],
    byteLength: 100 * 32 * 4,
  };
  assert.throws(() => DEEPSEEK2.gguf!.made!([info], w), /kv_b_proj\.weight.*\[100,32\]/);
});

Deno.test("deepseek2: without config.json's sizes kv_b_proj cannot be split, and says so", () => {
  const info = {
    name: "model.layers.0.self_attn.kv_b_proj.weight",
    dtype: "F32" as const,
    shape: [128, 32],
    byteLength: 128 * 32 * 4,
  };
  assert.throws(
    () => DEEPSEEK2.gguf!.made!([info], new KvWriter({}, "deepseek2")),
    /needs config\.json's num_attention_heads, qk_nope_head_dim and v_head_dim/,
  );
});
