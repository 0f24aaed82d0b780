/**
 * Generated RoPE tensors equal what llama.cpp's converter computes, byte for
 * byte: Llama 3's `rope_freqs.weight` (reference values made by the
 * converter's own code with torch: tests/testdata/arch/make_rope_factors.py)
 * and Phi-3's LongRoPE factors and attention factor.
 */

import assert from "node:assert/strict";
import { KvWriter } from "../../src/arch/kv.ts";
import { llama3RopeFreqs, phi3RopeFactors } from "../../src/arch/rope_factors.ts";

const REFERENCE = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/arch/rope_factors.json", import.meta.url)),
) as Record<string, { config: Record<string, number>; f32_hex: string }>;

function hex(values: Float32Array): string {
  return [...new Uint8Array(values.buffer, values.byteOffset, values.byteLength)]
    .map((b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test("llama3RopeFreqs(): the converter's float32 factors, bit for bit", async (t) => {
  for (const [name, { config, f32_hex }] of Object.entries(REFERENCE)) {
    await t.step(name, () => {
      const { head_dim, rope_theta, ...scaling } = config;
      // transformers 5's rope_parameters …
      const v5 = new KvWriter({
        head_dim,
        hidden_size: head_dim! * 4,
        num_attention_heads: 4,
        rope_parameters: { rope_type: "llama3", rope_theta, ...scaling },
      }, "llama");
      const [tensor] = llama3RopeFreqs(v5);
      assert.equal(tensor?.name, "rope_freqs.weight");
      assert.equal(hex(tensor!.values), f32_hex);
      // … and the rope_scaling + rope_theta of most Hub configs (no head_dim: hidden / heads).
      const v4 = new KvWriter({
        hidden_size: head_dim! * 4,
        num_attention_heads: 4,
        rope_theta,
        rope_scaling: { rope_type: "llama3", ...scaling },
      }, "llama");
      assert.equal(hex(llama3RopeFreqs(v4)[0]!.values), f32_hex);
    });
  }
});

Deno.test("llama3RopeFreqs(): nothing for other RoPE types", () => {
  for (const rope of [{ rope_type: "default" }, { rope_type: "linear", factor: 2 }, undefined]) {
    const w = new KvWriter(
      { hidden_size: 64, num_attention_heads: 4, rope_parameters: rope },
      "llama",
    );
    assert.deepEqual(llama3RopeFreqs(w), []);
  }
});

Deno.test("phi3RopeFactors(): LongRoPE factors as F32 and the attention factor key", () => {
  const long = [1.0, 1.25, 2.0, 3.25, 5.0, 7.25, 10.0, 13.25];
  const short = [1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75];
  const config = {
    hidden_size: 64,
    num_attention_heads: 4,
    max_position_embeddings: 256,
    rope_parameters: {
      rope_type: "longrope",
      rope_theta: 10000,
      original_max_position_embeddings: 32,
      partial_rotary_factor: 1,
      long_factor: long,
      short_factor: short,
    },
  };
  const w = new KvWriter(config, "phi3");
  const tensors = phi3RopeFactors(w);
  assert.deepEqual(tensors.map((t) => t.name), [
    "rope_factors_long.weight",
    "rope_factors_short.weight",
  ]);
  assert.deepEqual([...tensors[0]!.values], long);
  assert.deepEqual([...tensors[1]!.values], short);
  // llama.cpp's converter wrote 1.264911 (sqrt(1 + ln 8 / ln 32)) for this config.
  const attn = w.entries().get("phi3.rope.scaling.attn_factor");
  assert.equal(attn?.type, "FLOAT32");
  assert.equal(
    Math.fround(attn!.value as number),
    Math.fround(Math.sqrt(1 + Math.log(8) / Math.log(32))),
  );
  assert.equal(Math.fround(attn!.value as number).toFixed(6), "1.264911");
});

Deno.test("phi3RopeFactors(): factors of the wrong length are refused", () => {
  const w = new KvWriter({
    hidden_size: 64,
    num_attention_heads: 4,
    max_position_embeddings: 256,
    original_max_position_embeddings: 32,
    rope_scaling: { type: "longrope", long_factor: [1, 2], short_factor: [1, 2] },
  }, "phi3");
  assert.throws(() => phi3RopeFactors(w), /must have 8 values each/);
});
