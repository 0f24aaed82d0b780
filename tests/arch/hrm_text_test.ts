/**
 * HRM-Text: its L and H stacks as GGUF blocks 0 and 1 though `block_count`
 * counts the cycles (6), in the model-shape check both ways; the training
 * config form; the refusals. Its GGUF itself is judged against llama.cpp's
 * converter and transformers in tests/interop/families_gguf_test.ts (fixture
 * `hrm-text`).
 */

import assert from "node:assert/strict";
import { FAMILIES } from "../../src/arch/registry.ts";
import { familyGgufWarnings } from "../../src/arch/gguf_plan.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { ggufBlocks, ggufShapeProblem, hfShapeProblem } from "../../src/arch/model_shape.ts";
import { fixtureConfig, refusalOf } from "./_fixture_refusal.ts";

const CONFIG = await fixtureConfig("hrm-text");
const FAMILY = FAMILIES.get("hrm_text")!;

const MANIFEST = JSON.parse(
  await Deno.readTextFile(
    new URL("../testdata/families/llama.cpp/hrm-text-f32.json", import.meta.url),
  ),
) as { kv: { key: string; value: unknown }[]; tensors: { name: string; ne: number[] }[] };
const KV = new Map(MANIFEST.kv.map((e) => [e.key, e.value]));
const GGUF_TENSORS = MANIFEST.tensors.map((t) => ({ name: t.name, shape: [...t.ne].reverse() }));

Deno.test("hrm-text: the GGUF holds 2 × layers_per_stack blocks, block_count counts the cycles", () => {
  const kv = (k: string) => KV.get(k);
  assert.equal(KV.get("hrm_text.block_count"), 6);
  assert.equal(ggufBlocks("hrm_text", kv), 2);
  assert.equal(ggufShapeProblem("hrm_text", kv, GGUF_TENSORS), undefined);
  const q = GGUF_TENSORS.find((t) => t.name === "blk.1.attn_q.weight")!;
  assert.equal(
    ggufShapeProblem("hrm_text", kv, [...GGUF_TENSORS, { ...q, name: "blk.2.attn_q.weight" }])
      ?.reason,
    "layer 2, but the model has 2 (2 × hrm_text.hrm.layers_per_stack)",
  );
  const noH = GGUF_TENSORS.filter((t) => !t.name.startsWith("blk.1."));
  assert.equal(ggufShapeProblem("hrm_text", kv, noH)?.tensor, "layer 1");
});

/** The fixture's Hugging Face tensors (names and shapes), as a shape check reads them. */
const HF = [
  ["lm_head.weight", [384, 64]],
  ["model.embed_tokens.weight", [384, 64]],
  ["model.z_L_init", [64]],
  ...["L", "H"].flatMap((s) => [
    [`model.${s}_module.layers.0.attn.gqkv_proj.weight`, [256, 64]],
    [`model.${s}_module.layers.0.attn.o_proj.weight`, [64, 64]],
    [`model.${s}_module.layers.0.mlp.gate_up_proj.weight`, [256, 64]],
    [`model.${s}_module.layers.0.mlp.down_proj.weight`, [64, 128]],
  ]),
] as [string, number[]][];

function hf(tensors: [string, number[]][]) {
  return tensors.map(([name, shape]) => ({
    name,
    shape,
    dtype: "F32" as const,
    byteLength: 4 * shape.reduce((a, b) => a * b, 1),
  }));
}

Deno.test("hrm-text: a checkpoint's stacks are checked as the blocks they become", () => {
  assert.equal(hfShapeProblem(FAMILY, CONFIG, hf(HF)), undefined);
  // An H layer past the stack: block 2 of 2.
  const extra = hf([...HF, ["model.H_module.layers.1.attn.o_proj.weight", [64, 64]]]);
  assert.equal(
    hfShapeProblem(FAMILY, CONFIG, extra)?.reason,
    "layer 2, but the model has 2 (2 × config.json's num_layers_per_stack)",
  );
  // The H stack missing.
  assert.equal(
    hfShapeProblem(FAMILY, CONFIG, hf(HF.filter(([n]) => !n.includes("H_module"))))?.tensor,
    "layer 1",
  );
  // The attention output as wide as 2 heads.
  const narrow = hf(
    HF.map(([n, s]) => [n, n.endsWith("L_module.layers.0.attn.o_proj.weight") ? [64, 32] : s]),
  );
  assert.match(
    hfShapeProblem(FAMILY, CONFIG, narrow)!.reason,
    /^shape \[64, 32\], expected \[64, 64\]/,
  );
});

Deno.test("hrm-text: a training config (the stack's layers in num_hidden_layers) counts the cycles as transformers does", () => {
  const training: Record<string, unknown> = { ...CONFIG, num_hidden_layers: 1 };
  delete training["num_layers_per_stack"];
  const w = new KvWriter(training, "hrm_text");
  FAMILY.gguf!.writeKv(w);
  const kv = w.entries();
  assert.equal(kv.get("hrm_text.block_count")?.value, 6);
  assert.equal(kv.get("hrm_text.hrm.layers_per_stack")?.value, 1);
});

Deno.test("hrm-text: biases, which llama.cpp loads none of, are refused", () => {
  assert.equal(refusalOf("hrm_text", CONFIG, {}), undefined);
  assert.match(refusalOf("hrm_text", CONFIG, { attention_bias: true })!, /attention_bias true/);
  assert.match(refusalOf("hrm_text", CONFIG, { mlp_bias: true })!, /mlp_bias true/);
  assert.match(refusalOf("hrm_text", CONFIG, { hidden_act: "gelu" })!, /hidden_act "gelu"/);
});

Deno.test("hrm-text: prefix_lm (transformers' default) is written with one warning: llama.cpp attends causally", () => {
  const warn = (change: Record<string, unknown>) =>
    familyGgufWarnings({
      architecture: "hrm_text",
      hf_config: { ...CONFIG, ...change },
      original_format: "safetensors",
    });
  assert.deepEqual(warn({}), []);
  for (const config of [{ prefix_lm: true }, { prefix_lm: undefined }]) {
    const w = warn(config);
    assert.equal(w.length, 1);
    assert.match(w[0]!, /prefix_lm .*token_type_ids 1.*attends causally/);
    const kv = new KvWriter({ ...CONFIG, ...config }, "hrm_text");
    FAMILY.gguf!.writeKv(kv);
    assert.equal(kv.entries().get("hrm_text.hrm.prefix_lm")?.value, true);
  }
});
