/**
 * Kimi Linear's refusals (what llama.cpp's `kimi-linear` hard-codes or reads
 * no key for, set otherwise in config.json), and its keys from either form of
 * config.json: the published one (`linear_attn_config`, `first_k_dense_replace`)
 * and the one transformers 5 saves (`layer_types`, `linear_*`,
 * `mlp_layer_types`). Its GGUF itself is judged against llama.cpp's converter
 * and transformers in tests/interop/families_gguf_test.ts (fixture `kimi-linear`).
 */

import assert from "node:assert/strict";
import { KvWriter } from "../../src/arch/kv.ts";
import { hfToGgufName } from "../../src/arch/names.ts";
import { KIMI_LINEAR } from "../../src/arch/families/kimi_linear.ts";
import { fixtureConfig, refusalOf } from "./_fixture_refusal.ts";

const CONFIG = await fixtureConfig("kimi-linear");
const LINEAR = CONFIG["linear_attn_config"] as Record<string, unknown>;
const refusal = (change: Record<string, unknown>) => refusalOf("kimi-linear", CONFIG, change);

Deno.test("kimi-linear: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  assert.match(refusal({ q_lora_rank: 32 })!, /q_lora_rank 32; .*attn_q alone/);
  assert.match(
    refusal({ linear_attn_config: { ...LINEAR, num_heads: 2, head_dim: 32 } })!,
    /2 linear-attention heads .*num_attention_heads 4/,
  );
  assert.match(
    refusal({ num_key_value_heads: 2 })!,
    /num_key_value_heads 2 and num_attention_heads 4/,
  );
  assert.match(refusal({ moe_renormalize: false })!, /moe_renormalize false; .*always normalises/);
  assert.match(
    refusal({ num_expert_group: 2, topk_group: 1 })!,
    /num_expert_group 2 with topk_group 1/,
  );
  // All groups used: no limit, as llama.cpp computes.
  assert.equal(refusal({ num_expert_group: 2, topk_group: 2 }), undefined);
  assert.match(
    refusal({ mlp_layer_types: ["sparse", "dense", "sparse", "sparse"] })!,
    /dense layers after expert ones/,
  );
  assert.match(refusal({ moe_layer_freq: 2 })!, /moe_layer_freq 2/);
  assert.match(refusal({ mla_use_nope: false })!, /mla_use_nope false/);
  assert.match(refusal({ moe_router_activation_func: "softmax" })!, /scoring_func "softmax"/);
  assert.match(refusal({ hidden_act: "gelu" })!, /hidden_act "gelu"/);
  assert.match(refusal({ attention_bias: true })!, /attention_bias true/);
});

/** The keys KimiLinearModel.set_gguf_parameters writes for a config, as JSON. */
function keys(config: Record<string, unknown>): string {
  const w = new KvWriter(config, "kimi-linear");
  KIMI_LINEAR.gguf!.writeKv(w);
  return JSON.stringify([...w.entries()]);
}

Deno.test("kimi-linear: transformers 5's own config.json form gives the published form's keys", () => {
  const {
    linear_attn_config: _linear,
    first_k_dense_replace: _dense,
    moe_router_activation_func: _scoring,
    ...rest
  } = CONFIG;
  const transformers = {
    ...rest,
    layer_types: ["linear_attention", "full_attention", "linear_attention", "full_attention"],
    mlp_layer_types: ["dense", "sparse", "sparse", "sparse"],
    linear_head_dim: LINEAR["head_dim"],
    linear_num_heads: LINEAR["num_heads"],
    linear_conv_kernel_dim: LINEAR["short_conv_kernel_size"],
  };
  assert.equal(keys(transformers), keys(CONFIG));
  // transformers' head_dim is qk_rope_head_dim unless config.json says (published: 72), and the
  // converter writes it as value_length.
  const { head_dim: _head, ...headless } = CONFIG;
  assert.equal(keys(headless), keys(CONFIG));
  const published = new KvWriter({ ...CONFIG, head_dim: 72 }, "kimi-linear");
  KIMI_LINEAR.gguf!.writeKv(published);
  assert.equal(published.entries().get("kimi-linear.attention.value_length")?.value, 72);
  // Without either, transformers' defaults: MLA on every 4th layer from layer 4 on, one dense layer.
  const w = new KvWriter(
    { ...transformers, layer_types: undefined, mlp_layer_types: undefined, num_hidden_layers: 6 },
    "kimi-linear",
  );
  KIMI_LINEAR.gguf!.writeKv(w);
  const kv = w.entries().get("kimi-linear.attention.head_count_kv")?.value;
  assert.deepEqual(kv, [0, 0, 0, 0, 1, 0]);
  assert.equal(w.entries().get("kimi-linear.leading_dense_block_count")?.value, 1);
});

Deno.test("kimi-linear: transformers 5's tensor names map as the published ones", () => {
  const gguf = (name: string) => hfToGgufName(KIMI_LINEAR.gguf!.hfName!(name), KIMI_LINEAR);
  // transformers 5 saves the dense MLP under block_sparse_moe.
  assert.equal(gguf("model.layers.0.block_sparse_moe.gate_proj.weight"), "blk.0.ffn_gate.weight");
  assert.equal(gguf("model.layers.0.mlp.down_proj.weight"), "blk.0.ffn_down.weight");
  assert.equal(gguf("model.layers.0.self_attn.dt_bias"), "blk.0.ssm_dt.bias");
  assert.equal(
    gguf("model.layers.1.block_sparse_moe.gate.e_score_correction_bias"),
    "blk.1.exp_probs_b.bias",
  );
});

Deno.test("kimi-linear: a checkpoint without lm_head (KimiLinearModel's own save) is refused for GGUF", () => {
  const w = new KvWriter(CONFIG, "kimi-linear");
  const tensor = (name: string) => ({ name, dtype: "F32" as const, shape: [4], byteLength: 16 });
  assert.throws(
    () => KIMI_LINEAR.gguf!.made!([tensor("embed_tokens.weight"), tensor("norm.weight")], w),
    /without lm_head\.weight .*needs output\.weight/,
  );
  assert.deepEqual(KIMI_LINEAR.gguf!.made!([tensor("lm_head.weight")], w), []);
});
