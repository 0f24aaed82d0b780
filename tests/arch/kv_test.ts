/**
 * The GGUF keys families derive from config.json, as llama.cpp's converter
 * classes do: both RoPE config forms (most Hub configs' `rope_scaling` +
 * `rope_theta`, transformers 5's `rope_parameters`) give the same keys;
 * Granite's multipliers, Gemma 2's soft-caps, and Gemma 3's layer pattern
 * written only when it is not llama.cpp's assumed one.
 */

import assert from "node:assert/strict";
import { FILE_TYPE_KEY, KvWriter } from "../../src/arch/kv.ts";
import { FAMILIES } from "../../src/arch/registry.ts";

function keys(family: string, config: Record<string, unknown>): Map<string, unknown> {
  const f = FAMILIES.get(family)!;
  const w = new KvWriter(config, f.ggufArchitecture);
  f.gguf!.writeKv(w);
  return new Map([...w.entries()].map(([k, e]) => [k, e.value]));
}

const BASE = {
  num_hidden_layers: 2,
  max_position_embeddings: 131072,
  hidden_size: 64,
  intermediate_size: 128,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-5,
  vocab_size: 384,
};

Deno.test("rope_scaling (Hub configs) and rope_parameters (transformers 5) give the same keys", () => {
  for (
    const scaling of [
      { rope_type: "yarn", factor: 4, original_max_position_embeddings: 32768, beta_fast: 32 },
      { type: "linear", factor: 2 },
      { rope_type: "llama3", factor: 8, low_freq_factor: 1, high_freq_factor: 4 },
    ]
  ) {
    const v4 = keys("llama", { ...BASE, rope_theta: 500000, rope_scaling: scaling });
    const { type, ...rest } = scaling as Record<string, unknown>;
    const v5 = keys("llama", {
      ...BASE,
      rope_parameters: { rope_type: type ?? rest["rope_type"], ...rest, rope_theta: 500000 },
    });
    assert.deepEqual([...v4], [...v5], JSON.stringify(scaling));
    assert.equal(v4.get("llama.rope.freq_base"), 500000);
  }
  const yarn = keys("qwen2", {
    ...BASE,
    rope_theta: 1e6,
    rope_scaling: { type: "yarn", factor: 4, original_max_position_embeddings: 32768 },
  });
  assert.equal(yarn.get("qwen2.rope.scaling.type"), "yarn");
  assert.equal(yarn.get("qwen2.rope.scaling.factor"), 4);
  assert.equal(yarn.get("qwen2.rope.scaling.original_context_length"), 32768);
  // The common keys end with the file type, where the converter writes it.
  assert.equal([...yarn.keys()].at(-1), FILE_TYPE_KEY);
});

Deno.test("Granite's multipliers, head_dim ignored; Gemma 2's soft-caps", () => {
  const granite = keys("granite", {
    ...BASE,
    head_dim: 32,
    rope_theta: 10000,
    attention_multiplier: 0.0078125,
    embedding_multiplier: 12,
    residual_multiplier: 0.22,
    logits_scaling: 8,
  });
  assert.equal(granite.get("granite.attention.scale"), 0.0078125);
  assert.equal(granite.get("granite.embedding_scale"), 12);
  assert.equal(granite.get("granite.residual_scale"), 0.22);
  assert.equal(granite.get("granite.logit_scale"), 8);
  assert.equal(granite.has("granite.attention.key_length"), false);
  assert.equal(granite.get("granite.rope.dimension_count"), 16);
  const gemma2 = keys("gemma2", {
    ...BASE,
    head_dim: 16,
    attn_logit_softcapping: 50,
    final_logit_softcapping: 30,
    sliding_window: 4096,
  });
  assert.deepEqual(
    [...gemma2.keys()].slice(-4),
    [
      FILE_TYPE_KEY,
      "gemma2.attn_logit_softcapping",
      "gemma2.final_logit_softcapping",
      "gemma2.attention.sliding_window",
    ],
  );
});

Deno.test("Gemma 3: the layer pattern is written only when it is not llama.cpp's pattern of 6", () => {
  const config = (types: string[]) => ({
    ...BASE,
    num_hidden_layers: types.length,
    head_dim: 16,
    sliding_window: 512,
    layer_types: types,
    rope_parameters: {
      full_attention: { rope_type: "default", rope_theta: 1e6 },
      sliding_attention: { rope_type: "default", rope_theta: 1e4 },
    },
  });
  const published = Array.from(
    { length: 12 },
    (_, i) => i % 6 === 5 ? "full_attention" : "sliding_attention",
  );
  const usual = keys("gemma3", config(published));
  assert.equal(usual.has("gemma3.attention.sliding_window_pattern"), false);
  assert.equal(usual.get("gemma3.rope.freq_base"), 1e6);
  assert.equal(usual.get("gemma3.rope.freq_base_swa"), 1e4);
  const unusual = keys("gemma3", config(["sliding_attention", "full_attention"]));
  assert.deepEqual(unusual.get("gemma3.attention.sliding_window_pattern"), [true, false]);
});

Deno.test("a config without what a family needs is refused, naming the keys", () => {
  assert.throws(() => keys("phi3", { ...BASE }), /original_max_position_embeddings/);
  assert.throws(() => keys("gemma2", { ...BASE, head_dim: 16 }), /attn_logit_softcapping/);
});
