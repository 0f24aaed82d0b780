/**
 * Granite 4.0-H: the layer pattern read in both spellings of `layer_types`,
 * and the configs llama.cpp would not run as transformers computes them
 * refused, naming the field. Its GGUF itself is judged against llama.cpp's
 * converter and transformers in tests/interop/families_gguf_test.ts (fixture
 * `granite-hybrid`).
 */

import assert from "node:assert/strict";
import { BAMBA, GRANITE_HYBRID } from "../../src/arch/families/granite_hybrid.ts";
import { familyGgufRefusal } from "../../src/arch/gguf_plan.ts";
import { KvWriter } from "../../src/arch/kv.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(
    new URL("../testdata/families/hf/granite-hybrid/config.json", import.meta.url),
  ),
) as Record<string, unknown>;

const refusal = (change: object) =>
  familyGgufRefusal({ architecture: GRANITE_HYBRID.name, hf_config: { ...CONFIG, ...change } });

function keys(config: Record<string, unknown>): Map<string, unknown> {
  const w = new KvWriter(config, "granitehybrid");
  GRANITE_HYBRID.gguf!.writeKv(w);
  return new Map([...w.entries()].map(([k, e]) => [k, e.value]));
}

Deno.test("granite-hybrid: the layer pattern is read in the published spelling and in transformers 5's", () => {
  // The fixture has the published spelling, which llama.cpp's converter reads.
  assert.deepEqual(CONFIG["layer_types"], ["mamba", "attention", "mamba", "mamba"]);
  const published = keys(CONFIG);
  assert.deepEqual(published.get("granitehybrid.attention.head_count_kv"), [0, 2, 0, 0]);
  // transformers 5 saves "linear_attention"/"full_attention" (the converter then
  // finds no attention layer); aprkit writes the same file from either.
  const saved = keys({
    ...CONFIG,
    layer_types: ["linear_attention", "full_attention", "linear_attention", "linear_attention"],
  });
  assert.deepEqual([...saved], [...published]);
});

Deno.test("granite-hybrid: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  assert.equal(refusal({ position_embedding_type: null }), undefined);
  assert.match(refusal({ position_embedding_type: "rope" })!, /position_embedding_type "rope"/);
  assert.match(refusal({ time_step_limit: [0, 0.1] })!, /time_step_limit \[0,0\.1\]/);
  assert.match(refusal({ mamba_proj_bias: true })!, /mamba_proj_bias true/);
  assert.match(refusal({ hidden_act: "gelu" })!, /hidden_act "gelu"/);
  assert.match(
    refusal({ layer_types: ["attention", "attention", "attention", "attention"] })!,
    /no Mamba layer/,
  );
});

Deno.test("bamba: a partial rotary factor, which llama.cpp rotates otherwise than transformers, is refused", async () => {
  const bamba = JSON.parse(
    await Deno.readTextFile(new URL("../testdata/families/hf/bamba/config.json", import.meta.url)),
  ) as Record<string, unknown>;
  const refused = (change: object) =>
    familyGgufRefusal({ architecture: BAMBA.name, hf_config: { ...bamba, ...change } });
  assert.equal(refused({}), undefined);
  // transformers' default (0.5) applies when config.json names none (a transformers 4 config).
  assert.match(
    refused({ rope_parameters: undefined, partial_rotary_factor: undefined, rope_theta: 1e4 })!,
    /partial_rotary_factor 0\.5 .*default/,
  );
  assert.match(
    refused({
      rope_parameters: { rope_type: "default", rope_theta: 1e4, partial_rotary_factor: 0.5 },
    })!,
    /partial_rotary_factor 0\.5/,
  );
  assert.match(refused({ attn_layer_indices: [0, 1, 2, 3] })!, /no Mamba layer/);
  // The layer pattern from attn_layer_indices, as per layer head_count_kv.
  const w = new KvWriter(bamba, "granitehybrid");
  BAMBA.gguf!.writeKv(w);
  assert.deepEqual(w.entries().get("granitehybrid.attention.head_count_kv")?.value, [0, 2, 0, 0]);
  assert.equal(w.entries().get("granitehybrid.rope.scaling.finetuned")?.value, true);
});
