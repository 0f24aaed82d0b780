/**
 * Nemotron-H: the layer pattern in both spellings (the published
 * `hybrid_override_pattern`, transformers 5's `layers_block_type`), the MoE
 * variant told from it, Nemotron 3 Super's latent width and
 * multi-token-prediction block, and what llama.cpp would compute otherwise
 * refused. Its GGUF itself is judged against llama.cpp's converter and
 * transformers in tests/interop/families_gguf_test.ts (fixtures `nemotron-h`,
 * `nemotron-h-moe`, `nemotron-h-latent`, `nemotron-h-latent-mtp`).
 */

import assert from "node:assert/strict";
import { NEMOTRON_H, NEMOTRON_H_MOE } from "../../src/arch/families/nemotron_h.ts";
import { familyGgufRefusal } from "../../src/arch/gguf_plan.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { ggufShapeProblem } from "../../src/arch/model_shape.ts";
import { architectureOfHf } from "../../src/arch/registry.ts";

async function config(fixture: string): Promise<Record<string, unknown>> {
  const url = new URL(`../testdata/families/hf/${fixture}/config.json`, import.meta.url);
  return JSON.parse(await Deno.readTextFile(url));
}
const DENSE = await config("nemotron-h");
const MOE = await config("nemotron-h-moe");
const SUPER = await config("nemotron-h-latent-mtp");

function keys(family: typeof NEMOTRON_H, hparams: object): Map<string, unknown> {
  const w = new KvWriter(hparams as Record<string, unknown>, family.ggufArchitecture);
  family.gguf!.writeKv(w);
  return new Map([...w.entries()].map(([k, e]) => [k.replace(/^[^.]+\./, ""), e.value]));
}

Deno.test("nemotron-h: the pattern as per-layer KV heads and MLP widths, in either spelling", () => {
  const published = keys(NEMOTRON_H, DENSE);
  assert.deepEqual(published.get("attention.head_count_kv"), [0, 0, 0, 2, 0]);
  assert.deepEqual(published.get("feed_forward_length"), [0, 128, 0, 0, 128]);
  assert.equal(published.get("ssm.inner_size"), 128);
  // transformers 5's spelling, which the converter reads without its MLP layers.
  const { hybrid_override_pattern: _p, ...rest } = DENSE;
  const saved = {
    ...rest,
    layers_block_type: ["linear_attention", "mlp", "linear_attention", "full_attention", "mlp"],
    // NemotronHConfig's MoE defaults, which transformers 5 writes into every config.json.
    n_routed_experts: 8,
    num_experts_per_tok: 2,
    n_group: 1,
    topk_group: 1,
  };
  assert.deepEqual(keys(NEMOTRON_H, saved), published);
  assert.deepEqual(keys(NEMOTRON_H_MOE, MOE).get("feed_forward_length"), [0, 32, 0, 0, 32]);
  // Older configs' mamba_-prefixed names.
  const { n_groups, conv_kernel, ...modern } = DENSE;
  assert.deepEqual(
    keys(NEMOTRON_H, { ...modern, mamba_n_groups: n_groups, mamba_d_conv: conv_kernel }),
    published,
  );
});

Deno.test("nemotron-h: Nemotron 3 Super's latent width and MTP block, as the converter writes them", () => {
  const super3 = keys(NEMOTRON_H_MOE, SUPER);
  assert.equal(super3.get("block_count"), 8);
  assert.equal(super3.get("moe_latent_size"), 32);
  assert.equal(super3.get("nextn_predict_layers"), 1);
  // The MTP block (7) is both an attention and a MoE layer.
  assert.deepEqual(super3.get("attention.head_count_kv"), [0, 0, 0, 0, 0, 2, 0, 2]);
  assert.deepEqual(super3.get("feed_forward_length"), [0, 48, 0, 48, 0, 0, 48, 48]);
  // Without MTP layers: the trunk only, and no latent key where the config has none.
  const trunk = keys(NEMOTRON_H_MOE, { ...SUPER, num_nextn_predict_layers: 0 });
  assert.equal(trunk.get("block_count"), 7);
  assert.equal(trunk.has("nextn_predict_layers"), false);
  assert.equal(keys(NEMOTRON_H_MOE, MOE).has("moe_latent_size"), false);
  // The MTP layer's tensors as the block after the trunk, as the converter renames them.
  const source = (name: string) => NEMOTRON_H_MOE.gguf!.sourceName!(name, SUPER);
  assert.equal(source("mtp.layers.0.enorm.weight"), "backbone.layers.7.enorm.weight");
  assert.equal(source("mtp.layers.0.mixer.q_proj.weight"), "backbone.layers.7.mixer.q_proj.weight");
  assert.equal(
    source("mtp.layers.1.norm.weight"),
    "backbone.layers.7.post_attention_layernorm.weight",
  );
  assert.equal(
    source("mtp.layers.1.final_layernorm.weight"),
    "backbone.layers.7.shared_head.norm.weight",
  );
  // Its router: the converter's F32 list, matched with block 1, misses it.
  assert.deepEqual(NEMOTRON_H_MOE.gguf!.convertedAnyway!(SUPER), ["blk.7.ffn_gate_inp.weight"]);
  assert.deepEqual(NEMOTRON_H_MOE.gguf!.convertedAnyway!(MOE), []);
});

Deno.test("nemotron-h: a GGUF's latent experts are checked against its moe_latent_size", () => {
  const kv = new Map<string, unknown>([
    ["nemotron_h_moe.block_count", 1],
    ["nemotron_h_moe.embedding_length", 64],
    ["nemotron_h_moe.expert_count", 8],
    ["nemotron_h_moe.moe_latent_size", 32],
  ]);
  const tensors = [
    { name: "blk.0.ffn_latent_down.weight", shape: [32, 64] },
    { name: "blk.0.ffn_latent_up.weight", shape: [64, 32] },
    { name: "blk.0.ffn_up_exps.weight", shape: [8, 48, 32] },
    { name: "blk.0.ffn_down_exps.weight", shape: [8, 32, 48] },
  ];
  assert.equal(ggufShapeProblem("nemotron_h_moe", (k) => kv.get(k), tensors), undefined);
  kv.set("nemotron_h_moe.moe_latent_size", 16);
  assert.match(
    ggufShapeProblem("nemotron_h_moe", (k) => kv.get(k), tensors)!.reason,
    /expected \[16, 64\] \(nemotron_h_moe\.embedding_length 64, nemotron_h_moe\.moe_latent_size 16\)/,
  );
  // Without the key, llama.cpp loads the projections square and the experts hidden-wide.
  kv.delete("nemotron_h_moe.moe_latent_size");
  assert.match(
    ggufShapeProblem("nemotron_h_moe", (k) => kv.get(k), tensors)!.reason,
    /shape \[32, 64\], expected \[64, 64\]/,
  );
});

Deno.test("nemotron-h: a pattern with MoE layers is the nemotron_h_moe family", () => {
  assert.equal(architectureOfHf("NemotronHForCausalLM", "nemotron_h", DENSE), "nemotron_h");
  assert.equal(architectureOfHf("NemotronHForCausalLM", "nemotron_h", MOE), "nemotron_h_moe");
  // A dense config.json as transformers 5 writes it, its MoE defaults included.
  assert.equal(
    architectureOfHf("NemotronHForCausalLM", "nemotron_h", { ...DENSE, num_experts_per_tok: 2 }),
    "nemotron_h",
  );
});

Deno.test("nemotron-h: what llama.cpp's graph computes otherwise is refused", () => {
  const refusal = (family: typeof NEMOTRON_H, base: object, change: object) =>
    familyGgufRefusal({ architecture: family.name, hf_config: { ...base, ...change } });
  assert.equal(refusal(NEMOTRON_H, DENSE, {}), undefined);
  assert.equal(refusal(NEMOTRON_H_MOE, MOE, {}), undefined);
  assert.match(
    refusal(NEMOTRON_H, DENSE, { mlp_hidden_act: "silu" })!,
    /mlp_hidden_act "silu".*"relu2"/,
  );
  assert.match(refusal(NEMOTRON_H, DENSE, { time_step_limit: [0, 10] })!, /time_step_limit/);
  assert.match(
    refusal(NEMOTRON_H, DENSE, { time_step_limit: undefined, mamba_dt_limit: [0, 10] })!,
    /time_step_limit \[0,10\]/,
  );
  assert.match(refusal(NEMOTRON_H, DENSE, { hybrid_override_pattern: "*-*-*" })!, /no Mamba-2/);
  assert.match(refusal(NEMOTRON_H, DENSE, { hybrid_override_pattern: "M-E*-" })!, /both MLP/);
  // Nemotron 3 Super's latent width and one MTP layer are written.
  assert.equal(refusal(NEMOTRON_H_MOE, SUPER, {}), undefined);
  assert.equal(refusal(NEMOTRON_H_MOE, MOE, { moe_latent_size: 32 }), undefined);
  assert.match(
    refusal(NEMOTRON_H_MOE, MOE, { num_nextn_predict_layers: 2 })!,
    /num_nextn_predict_layers 2.*one block/,
  );
  // transformers' biases on the shared expert and latent projections, which llama.cpp never adds.
  assert.match(refusal(NEMOTRON_H_MOE, SUPER, { mlp_bias: true })!, /mlp_bias true/);
  // The converter folds the MTP layers as attention then MoE, whatever the config says:
  // a model with MTP layers of other kinds is refused.
  const withMtp = { num_nextn_predict_layers: 1 };
  for (const same of [["attention", "moe"], ["full_attention", "moe"], null]) {
    assert.equal(
      refusal(NEMOTRON_H_MOE, MOE, { ...withMtp, mtp_layers_block_type: same }),
      undefined,
    );
  }
  assert.match(
    refusal(NEMOTRON_H_MOE, MOE, { ...withMtp, mtp_layers_block_type: ["moe", "full_attention"] })!,
    /mtp_layers_block_type \["moe","full_attention"\].*attention, then MoE/,
  );
  assert.match(
    refusal(NEMOTRON_H_MOE, MOE, { ...withMtp, mtp_layers_block_type: ["full_attention"] })!,
    /mtp_layers_block_type \["full_attention"\]/,
  );
  assert.match(
    refusal(NEMOTRON_H_MOE, MOE, { ...withMtp, mtp_hybrid_override_pattern: "E*" })!,
    /mtp_hybrid_override_pattern "E\*"/,
  );
  // Without MTP layers nothing built reads the field.
  assert.equal(
    refusal(NEMOTRON_H_MOE, MOE, { mtp_layers_block_type: ["moe", "full_attention"] }),
    undefined,
  );
  // A dense model's converter writes no MTP layer: the field is not read.
  assert.equal(refusal(NEMOTRON_H, DENSE, { mtp_layers_block_type: ["moe"] }), undefined);
});
