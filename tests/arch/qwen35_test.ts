/**
 * Qwen3.5's refusals and keys: M-RoPE sections llama.cpp aborts on, the
 * default sections the converter writes, and which tensors are made rather
 * than renamed. Its GGUF itself is judged against llama.cpp's converter and
 * transformers in tests/interop/families_gguf_test.ts (fixtures `qwen35`,
 * `qwen35-moe`, 2 key heads and 4 value heads: value heads regrouped).
 */

import assert from "node:assert/strict";
import { QWEN35, QWEN35MOE } from "../../src/arch/families/qwen35.ts";
import { configRefusal } from "../../src/arch/config_fields.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import type { TensorInfo } from "../../src/tensor.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/families/hf/qwen35/config.json", import.meta.url)),
) as Record<string, unknown>;
const ROPE = CONFIG["rope_parameters"] as Record<string, unknown>;

function refusal(change: Record<string, unknown>): string | undefined {
  const w = new KvWriter({ ...CONFIG, ...change }, "qwen35");
  return configRefusal(QWEN35.configFields, w) ?? QWEN35.gguf!.unsupported!(w);
}

Deno.test("qwen35: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  // Without mrope_section both take [11, 11, 10]: 32 sections for 16 × 0.25 = 4 rotated dims.
  const { mrope_section: _, ...noSections } = ROPE;
  assert.match(
    refusal({ rope_parameters: noSections })!,
    /mrope_section \[11,11,10,0\] \(the default; absent\), 32 sections for 4 rotated dims/,
  );
  assert.match(refusal({ linear_value_head_dim: 8 })!, /linear_value_head_dim 8/);
  assert.match(refusal({ attention_bias: true })!, /attention_bias true/);
  assert.match(refusal({ hidden_act: "gelu" })!, /hidden_act "gelu"/);
});

Deno.test("qwen35: M-RoPE's default sections are written when the config has none, after the rotated dims", () => {
  const { mrope_section: _, ...noSections } = ROPE;
  const w = new KvWriter({ ...CONFIG, rope_parameters: noSections }, "qwen35");
  QWEN35.gguf!.writeKv(w);
  const keys = [...w.entries().keys()];
  assert.deepEqual(w.entries().get("qwen35.rope.dimension_sections")?.value, [11, 11, 10, 0]);
  assert.equal(keys.at(-1), "qwen35.rope.dimension_sections");
  const given = new KvWriter(CONFIG, "qwen35");
  QWEN35.gguf!.writeKv(given);
  assert.deepEqual(given.entries().get("qwen35.rope.dimension_sections")?.value, [1, 1, 0, 0]);
});

Deno.test("qwen35: value heads are regrouped only when there are more of them than key heads", () => {
  const info = (name: string, shape: number[]): TensorInfo => ({
    name: `model.layers.0.linear_attn.${name}`,
    dtype: "F32",
    shape,
    byteLength: shape.reduce((a, b) => a * b, 4),
  });
  const tensors = (valueHeads: number) => [
    info("A_log", [valueHeads]),
    info("dt_bias", [valueHeads]),
    info("conv1d.weight", [64 + 16 * valueHeads, 1, 4]),
    info("in_proj_qkv.weight", [64 + 16 * valueHeads, 64]),
    info("in_proj_z.weight", [16 * valueHeads, 64]),
    info("in_proj_b.weight", [valueHeads, 64]),
    info("in_proj_a.weight", [valueHeads, 64]),
    info("out_proj.weight", [64, 16 * valueHeads]),
  ];
  const made = (valueHeads: number) =>
    QWEN35MOE.gguf!.made!(
      tensors(valueHeads),
      new KvWriter({ ...CONFIG, linear_num_value_heads: valueHeads }, "qwen35moe"),
    ).map((m) => m.info.name);
  assert.deepEqual(made(2), ["blk.0.ssm_a", "blk.0.ssm_conv1d.weight"]);
  assert.deepEqual(made(4), [
    "blk.0.ssm_a",
    "blk.0.ssm_dt.bias",
    "blk.0.ssm_conv1d.weight",
    "blk.0.attn_qkv.weight",
    "blk.0.attn_gate.weight",
    "blk.0.ssm_beta.weight",
    "blk.0.ssm_alpha.weight",
    "blk.0.ssm_out.weight",
  ]);
});

Deno.test("qwen35: multi-token-prediction layers are counted into block_count, named by nextn_predict_layers and marked attending, as the converter writes them by default", () => {
  const keys = (change: Record<string, unknown>) => {
    const w = new KvWriter({ ...CONFIG, ...change }, "qwen35");
    QWEN35.gguf!.writeKv(w);
    return w.entries();
  };
  const plain = keys({});
  assert.equal(plain.get("qwen35.block_count")?.value, 4);
  assert.equal(plain.has("qwen35.nextn_predict_layers"), false);
  const mtp = keys({ mtp_num_hidden_layers: 1 });
  assert.equal(mtp.get("qwen35.block_count")?.value, 5);
  assert.equal(mtp.get("qwen35.nextn_predict_layers")?.value, 1);
  assert.deepEqual(mtp.get("qwen35.attention.recurrent_layers")?.value, [
    true,
    true,
    true,
    false,
    false,
  ]);
  // The MTP module's tensors read as the block after the trunk.
  const h = { ...CONFIG, mtp_num_hidden_layers: 1 };
  const rename = (name: string) => QWEN35.gguf!.sourceName!(name, h);
  assert.equal(rename("mtp.fc.weight"), "model.layers.4.eh_proj.weight");
  assert.equal(rename("mtp.norm.weight"), "model.layers.4.shared_head.norm.weight");
  assert.equal(
    rename("mtp.layers.0.self_attn.q_proj.weight"),
    "model.layers.4.self_attn.q_proj.weight",
  );
  assert.equal(rename("model.mtp.pre_fc_norm_hidden.weight"), "model.layers.4.hnorm.weight");
  // Without a count in config.json they stay as they are (and are left out, as --no-mtp).
  assert.equal(QWEN35.gguf!.sourceName!("mtp.fc.weight", CONFIG), "mtp.fc.weight");
  assert.equal(QWEN35.gguf!.drops!("mtp.fc.weight", new KvWriter(CONFIG, "qwen35")), true);
  assert.equal(QWEN35MOE.gguf!.extraBlocks!({ mtp_num_hidden_layers: 2 }), 2);
  // A count no checkpoint has is refused before any key or array is made.
  assert.match(
    refusal({ mtp_num_hidden_layers: 2147483000 })!,
    /mtp_num_hidden_layers 2147483000, more than its num_hidden_layers 4/,
  );
  assert.equal(refusal({ mtp_num_hidden_layers: 4 }), undefined);
});
