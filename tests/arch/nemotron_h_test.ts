/**
 * Nemotron-H: the layer pattern in both spellings (the published
 * `hybrid_override_pattern`, transformers 5's `layers_block_type`), the MoE
 * variant told from it, and what llama.cpp would compute otherwise refused.
 * Its GGUF itself is judged against llama.cpp's converter and transformers in
 * tests/interop/families_gguf_test.ts (fixtures `nemotron-h`, `nemotron-h-moe`).
 */

import assert from "node:assert/strict";
import { NEMOTRON_H, NEMOTRON_H_MOE } from "../../src/arch/families/nemotron_h.ts";
import { familyGgufRefusal } from "../../src/arch/gguf_plan.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { architectureOfHf } from "../../src/arch/registry.ts";

async function config(fixture: string): Promise<Record<string, unknown>> {
  const url = new URL(`../testdata/families/hf/${fixture}/config.json`, import.meta.url);
  return JSON.parse(await Deno.readTextFile(url));
}
const DENSE = await config("nemotron-h");
const MOE = await config("nemotron-h-moe");

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
  assert.match(refusal(NEMOTRON_H_MOE, MOE, { moe_latent_size: 32 })!, /moe_latent_size 32/);
  assert.match(
    refusal(NEMOTRON_H_MOE, MOE, { num_nextn_predict_layers: 1 })!,
    /num_nextn_predict_layers 1/,
  );
  // The converter folds the MTP layers as attention then MoE, whatever the config says:
  // a model with MTP layers of other kinds is refused for that first.
  const withMtp = { num_nextn_predict_layers: 1 };
  for (const same of [["attention", "moe"], ["full_attention", "moe"], null]) {
    assert.match(
      refusal(NEMOTRON_H_MOE, MOE, { ...withMtp, mtp_layers_block_type: same })!,
      /num_nextn_predict_layers 1/,
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
