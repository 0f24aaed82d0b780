/**
 * Gemma 4's refusals: what llama.cpp's `gemma4` computes otherwise than
 * transformers, or reads no key for (its KV reuse, the sliding layers' RoPE,
 * one head size per layer type). Its GGUF itself is judged against llama.cpp's
 * converter and transformers in tests/interop/families_gguf_test.ts (fixtures
 * `gemma4`, `gemma4-moe`).
 */

import assert from "node:assert/strict";
import { KvWriter } from "../../src/arch/kv.ts";
import { GEMMA4 } from "../../src/arch/families/gemma4.ts";
import { familyGgufPlan, familyGgufRefusal } from "../../src/arch/gguf_plan.ts";
import { fixtureConfig } from "./_fixture_refusal.ts";

const DENSE = await fixtureConfig("gemma4");
const MOE = await fixtureConfig("gemma4-moe");
const ROPE = DENSE["rope_parameters"] as Record<string, Record<string, unknown>>;
const S = "sliding_attention";
const F = "full_attention";

/** Why aprkit refuses `config` with `change` for GGUF (a gemma4 vocabulary read), or `undefined`. */
function refusalOf(
  _: string,
  config: Record<string, unknown>,
  change: Record<string, unknown>,
): string | undefined {
  return familyGgufRefusal({
    architecture: "gemma4",
    hf_config: { ...config, ...change },
    original_format: "safetensors",
    "tokenizer.ggml_model": "gemma4",
  });
}

Deno.test("gemma4: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusalOf("gemma4", DENSE, {}), undefined);
  assert.equal(refusalOf("gemma4", MOE, {}), undefined);
  // llama.cpp reuses the KV of the layer just before the shared ones for full layers, of
  // the one before it for sliding ones; transformers the last earlier layer of each type.
  assert.match(
    refusalOf("gemma4", DENSE, { layer_types: [S, F, S, S, S, F] })!,
    /num_kv_shared_layers 3 .* layer 2's KV for full-attention layers and layer 1's/,
  );
  assert.match(
    refusalOf("gemma4", DENSE, { num_kv_shared_layers: 5, layer_types: [F, S, S, S, S, F] })!,
    /num_kv_shared_layers 5/,
  );
  assert.match(
    refusalOf("gemma4", DENSE, {
      rope_parameters: { ...ROPE, [S]: { ...ROPE[S], rope_type: "linear", factor: 2 } },
    })!,
    /sliding-attention RoPE "linear"/,
  );
  assert.match(
    refusalOf("gemma4", DENSE, { rope_parameters: { ...ROPE, [F]: { ...ROPE[F], factor: 8 } } })!,
    /proportional RoPE has factor 8/,
  );
  assert.match(
    refusalOf("gemma4", DENSE, {
      per_layer_config: { "2": { head_dim: 32 }, "5": { head_dim: 64 } },
    })!,
    /per_layer_config differs between full-attention layers/,
  );
  assert.match(
    refusalOf("gemma4", DENSE, { per_layer_config: { "0": { head_dim: 32 } } })!,
    /per_layer_config sets head_dim on layer 0/,
  );
  assert.match(
    refusalOf("gemma4", DENSE, { vocab_size_per_layer_input: 262144 })!,
    /vocab_size_per_layer_input 262144; .* vocab_size \(384\) rows/,
  );
  assert.match(refusalOf("gemma4", DENSE, { attention_bias: true })!, /attention_bias true/);
  assert.match(
    refusalOf("gemma4", DENSE, { num_global_key_value_heads: 1 })!,
    /num_global_key_value_heads 1 without attention_k_eq_v/,
  );
  assert.match(
    refusalOf("gemma4", DENSE, { use_bidirectional_attention: "all" })!,
    /use_bidirectional_attention "all"/,
  );
  assert.equal(refusalOf("gemma4", DENSE, { use_bidirectional_attention: "vision" }), undefined);
  assert.match(refusalOf("gemma4", DENSE, { hidden_activation: "silu" })!, /hidden_activation/);
  // No byte-fallback BPE tokenizer.json: no vocabulary the converter would write.
  assert.match(
    familyGgufRefusal({
      architecture: "gemma4",
      hf_config: DENSE,
      original_format: "safetensors",
    })!,
    /a "gemma4" vocabulary from a byte-fallback BPE tokenizer.json\): it has no tokenizer.json/,
  );
});

Deno.test("gemma4: published configs' global_head_dim / num_global_key_value_heads are read as transformers 5.18's per_layer_config", () => {
  const keys = (config: Record<string, unknown>) =>
    familyGgufPlan({ architecture: "gemma4", hf_config: config, original_format: "safetensors" })!
      .keys;
  const { per_layer_config: _, ...published } = MOE;
  const a = keys(MOE);
  const b = keys({ ...published, global_head_dim: 32, num_global_key_value_heads: 1 });
  assert.deepEqual([...b], [...a]);
  assert.equal(a.get("gemma4.attention.key_length")?.value, 32);
  assert.equal(a.get("gemma4.attention.key_length_swa")?.value, 16);
  assert.deepEqual(a.get("gemma4.attention.head_count_kv")?.value, [2, 2, 2, 2, 2, 1]);
});

Deno.test("gemma4: without rope_parameters, transformers' defaults (proportional, a quarter of the full heads)", () => {
  const { rope_parameters: _, ...config } = DENSE;
  const w = new KvWriter(config, "gemma4");
  const [freqs] = GEMMA4.gguf!.generate!(w);
  assert.equal(freqs!.name, "rope_freqs.weight");
  assert.deepEqual([...freqs!.values], [1, 1, 1, 1, ...new Array(12).fill(1e30).map(Math.fround)]);
  assert.equal(refusalOf("gemma4", config, {}), undefined);
});

Deno.test("gemma4: full layers as wide as the sliding ones (per_layer_config saved empty) have head_dim", () => {
  const keys = familyGgufPlan({
    architecture: "gemma4",
    hf_config: { ...DENSE, per_layer_config: {} },
    original_format: "safetensors",
  })!.keys;
  assert.equal(keys.get("gemma4.attention.key_length")?.value, 16);
  assert.equal(keys.get("gemma4.rope.dimension_count")?.value, 16);
});
