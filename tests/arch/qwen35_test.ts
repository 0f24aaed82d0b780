/**
 * Qwen3.5's refusals and keys: M-RoPE sections llama.cpp aborts on, the
 * default sections the converter writes, and which tensors are made rather
 * than renamed. Its GGUF itself is judged against llama.cpp's converter and
 * transformers in tests/interop/families_gguf_test.ts (fixtures `qwen35`,
 * `qwen35-moe`, 2 key heads and 4 value heads: value heads regrouped).
 */

import assert from "node:assert/strict";
import { QWEN35, QWEN35MOE } from "../../src/arch/families/qwen35.ts";
import { configRefusal, configWarnings } from "../../src/arch/config_fields.ts";
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

Deno.test("qwen35: a config with multi-token-prediction layers is written without them, said in one warning naming how many", () => {
  const warnings = (change: Record<string, unknown>) =>
    configWarnings(QWEN35.configFields, new KvWriter({ ...CONFIG, ...change }, "qwen35"));
  assert.deepEqual(warnings({}), []);
  assert.deepEqual(warnings({ mtp_num_hidden_layers: 0 }), []);
  const [one, ...rest] = warnings({ mtp_num_hidden_layers: 1 });
  assert.equal(rest.length, 0);
  assert.match(one!, /^its 1 multi-token-prediction layer \(mtp\.\*.*\) is left out, .*--no-mtp/);
  assert.equal(
    configWarnings(QWEN35MOE.configFields, new KvWriter({ mtp_num_hidden_layers: 2 }, "qwen35moe"))
      .length,
    1,
  );
});
