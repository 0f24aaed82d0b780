/**
 * GPT-NeoX's, Phi-2's, StableLM's, OLMo's and OLMoE's refusals and keys where
 * llama.cpp's converter writes less than transformers reads: no RoPE base or
 * scaling for the first three, Phi-2's fixed MLP width and KV heads, OLMo's
 * clamp, OLMoE's fixed epsilon. Their GGUFs are judged against the converter
 * and transformers in tests/interop/families_gguf_test.ts (fixtures
 * `gptneox`, `phi2`, `stablelm`, `olmo`, `olmoe`).
 */

import assert from "node:assert/strict";
import { configRefusal } from "../../src/arch/config_fields.ts";
import { GPTNEOX } from "../../src/arch/families/gptneox.ts";
import { OLMO } from "../../src/arch/families/olmo.ts";
import { OLMOE } from "../../src/arch/families/olmoe.ts";
import { GRANITEMOE_SHARED } from "../../src/arch/families/granitemoe.ts";
import { PHI2 } from "../../src/arch/families/phi2.ts";
import { STABLELM } from "../../src/arch/families/stablelm.ts";
import { type Family, TensorConfigMismatch } from "../../src/arch/family.ts";
import type { TensorInfo } from "../../src/tensor.ts";
import { KvWriter } from "../../src/arch/kv.ts";

async function config(fixture: string): Promise<Record<string, unknown>> {
  const url = new URL(`../testdata/families/hf/${fixture}/config.json`, import.meta.url);
  return JSON.parse(await Deno.readTextFile(url));
}

function writer(family: Family, base: Record<string, unknown>, change = {}): KvWriter {
  return new KvWriter({ ...base, ...change }, family.ggufArchitecture);
}

function refusal(family: Family, base: Record<string, unknown>, change = {}): string | undefined {
  const w = writer(family, base, change);
  return configRefusal(family.configFields, w) ?? family.gguf!.unsupported?.(w);
}

const ROPE = (extra: Record<string, unknown>) => ({
  rope_parameters: {
    rope_type: "default",
    rope_theta: 10000,
    partial_rotary_factor: 0.25,
    ...extra,
  },
});

Deno.test("gptneox, phi2, stablelm: a RoPE base or scaling the converter writes no key for is refused, naming llama.cpp's 10000", async () => {
  for (
    const [family, fixture] of [[GPTNEOX, "gptneox"], [PHI2, "phi2"], [
      STABLELM,
      "stablelm",
    ]] as const
  ) {
    const base = await config(fixture);
    assert.equal(refusal(family, base), undefined, fixture);
    assert.match(refusal(family, base, ROPE({ rope_theta: 1e6 }))!, /rope_theta 1000000.*10000/);
    assert.match(
      refusal(family, base, ROPE({ rope_type: "linear", factor: 2 }))!,
      /rope_type "linear"/,
    );
  }
});

Deno.test("gptneox: rotary_pct (published) or partial_rotary_factor (transformers 5) gives the rotated dimensions; biases are required", async () => {
  const base = await config("gptneox");
  const dims = (change: Record<string, unknown>) => {
    const w = writer(GPTNEOX, base, change);
    GPTNEOX.gguf!.writeKv(w);
    return w.entries().get("gptneox.rope.dimension_count")?.value;
  };
  assert.equal(dims({}), 4);
  assert.equal(dims({ rotary_pct: undefined, ...ROPE({ partial_rotary_factor: 0.5 }) }), 8);
  assert.match(refusal(GPTNEOX, base, { attention_bias: false })!, /attention_bias false/);
  // Each head's q, k, v rows regrouped as all q, all k, all v.
  assert.deepEqual(
    GPTNEOX.gguf!.rowBlocks!("gpt_neox.layers.1.attention.query_key_value.weight", [12, 4], 2),
    [0, 3, 1, 4, 2, 5],
  );
  assert.equal(
    GPTNEOX.gguf!.rowBlocks!("gpt_neox.layers.1.attention.dense.weight", [4, 4], 2),
    undefined,
  );
});

Deno.test("phi2: an MLP width, KV head count or Q/K norm the converter does not write, and tied embeddings, are refused", async () => {
  const base = await config("phi2");
  assert.match(refusal(PHI2, base, { intermediate_size: 128 })!, /intermediate_size 128.*256/);
  assert.match(refusal(PHI2, base, { num_key_value_heads: 2 })!, /num_key_value_heads 2/);
  assert.match(refusal(PHI2, base, { qk_layernorm: true })!, /qk_layernorm true/);
  assert.match(refusal(PHI2, base, { tie_word_embeddings: true })!, /tie_word_embeddings true/);
  assert.match(refusal(PHI2, base, { hidden_act: "relu" })!, /hidden_act "relu"/);
});

Deno.test("stablelm: StableLM 2 12B's per-head Q/K norms are stacked per layer in head order, and unstacked back; a count other than the heads is refused", async () => {
  const base = await config("stablelm-qk");
  assert.equal(refusal(STABLELM, base), undefined);
  const norm = (layer: number, qk: string, head: number): TensorInfo => ({
    name: `model.layers.${layer}.self_attn.${qk}_layernorm.norms.${head}.weight`,
    dtype: "F32",
    shape: [16],
    byteLength: 64,
  });
  // Out of order in the checkpoint: stacked by head index.
  const tensors = [3, 1, 0, 2].map((h) => norm(1, "q", h)).concat([
    norm(1, "k", 1),
    norm(1, "k", 0),
  ]);
  const made = STABLELM.gguf!.made!(tensors, writer(STABLELM, base));
  assert.deepEqual(made.map((m) => [m.info.name, m.info.shape, m.info.byteLength]), [
    ["blk.1.attn_q_norm.weight", [4, 16], 256],
    ["blk.1.attn_k_norm.weight", [2, 16], 128],
  ]);
  assert.deepEqual(made[0]!.needs, [0, 1, 2, 3].map((h) => norm(1, "q", h).name));
  assert.deepEqual(
    STABLELM.gguf!.unstacked!("model.layers.1.self_attn.k_norm.weight", [2, 16]),
    made[1]!.needs,
  );
  assert.equal(STABLELM.gguf!.unstacked!("model.layers.1.input_layernorm.weight", [64]), undefined);
  assert.throws(
    () => STABLELM.gguf!.made!(tensors.slice(1), writer(STABLELM, base)),
    (e: unknown) =>
      e instanceof TensorConfigMismatch &&
      /layer 1 has 3 q_layernorm norms, config.json's num_attention_heads is 4/.test(e.reason),
  );
});

Deno.test("olmo: clip_qkv written as attention.clamp_kqv, none without it; attention biases refused", async () => {
  const base = await config("olmo");
  const keys = (change: Record<string, unknown>) => {
    const w = writer(OLMO, base, change);
    OLMO.gguf!.writeKv(w);
    return w.entries();
  };
  assert.equal(keys({}).get("olmo.attention.clamp_kqv")?.value, 1);
  assert.equal(keys({ clip_qkv: null }).has("olmo.attention.clamp_kqv"), false);
  assert.equal(keys({}).get("olmo.attention.layer_norm_epsilon")?.value, 1e-5);
  assert.match(refusal(OLMO, base, { attention_bias: true })!, /attention_bias true/);
});

Deno.test("olmoe: the RMSNorm epsilon the converter writes (1e-5), router weights not renormalised, no GQA", async () => {
  const base = await config("olmoe");
  assert.equal(refusal(OLMOE, base), undefined);
  assert.match(refusal(OLMOE, base, { rms_norm_eps: 1e-6 })!, /rms_norm_eps 0\.000001.*0\.00001/);
  assert.match(refusal(OLMOE, base, { norm_topk_prob: true })!, /norm_topk_prob true/);
  assert.match(refusal(OLMOE, base, { clip_qkv: 8 })!, /clip_qkv 8/);
  assert.match(refusal(OLMOE, base, { num_key_value_heads: 2 })!, /num_key_value_heads 2/);
});

Deno.test("granitemoeshared: expert_shared_feed_forward_length when the width is set; the shared input_linear halves as gate then up", async () => {
  const base = await config("granitemoe-shared");
  const keys = (change: Record<string, unknown>) => {
    const w = writer(GRANITEMOE_SHARED, base, change);
    GRANITEMOE_SHARED.gguf!.writeKv(w);
    return w.entries();
  };
  assert.equal(keys({}).get("granitemoe.expert_shared_feed_forward_length")?.value, 64);
  assert.equal(
    keys({ shared_intermediate_size: 0 }).has("granitemoe.expert_shared_feed_forward_length"),
    false,
  );
  const info = {
    name: "model.layers.1.shared_mlp.input_linear.weight",
    dtype: "F32" as const,
    shape: [128, 64],
    byteLength: 128 * 64 * 4,
  };
  const made = GRANITEMOE_SHARED.gguf!.made!([info], writer(GRANITEMOE_SHARED, base));
  assert.deepEqual(made.map((m) => [m.info.name, m.info.shape]), [
    ["blk.1.ffn_gate_shexp.weight", [64, 64]],
    ["blk.1.ffn_up_shexp.weight", [64, 64]],
  ]);
  assert.throws(
    () =>
      GRANITEMOE_SHARED.gguf!.made!(
        [{ ...info, shape: [127, 64] }],
        writer(GRANITEMOE_SHARED, base),
      ),
    /Cannot split/,
  );
});
