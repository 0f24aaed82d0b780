/**
 * Falcon-H1: its µP multipliers folded into the weights as torch multiplies
 * (float32 products rounded to the tensor's type), and what llama.cpp would
 * compute otherwise refused. Its GGUF itself is judged against llama.cpp's
 * converter and transformers in tests/interop/families_gguf_test.ts (fixture
 * `falcon-h1`).
 */

import assert from "node:assert/strict";
import { FALCON_H1 } from "../../src/arch/families/falcon_h1.ts";
import { familyGgufRefusal } from "../../src/arch/gguf_plan.ts";
import { scaleFloats } from "../../src/arch/transforms.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(
    new URL("../testdata/families/hf/falcon-h1/config.json", import.meta.url),
  ),
) as Record<string, unknown>;

Deno.test("falcon-h1: what llama.cpp's falcon-h1 computes otherwise is refused", () => {
  const refusal = (change: object) =>
    familyGgufRefusal({ architecture: FALCON_H1.name, hf_config: { ...CONFIG, ...change } });
  assert.equal(refusal({}), undefined);
  // The gated norm after the gate, as llama.cpp computes it, is fine.
  assert.equal(refusal({ mamba_rms_norm: true, mamba_norm_before_gate: false }), undefined);
  assert.match(refusal({ mamba_rms_norm: true, mamba_norm_before_gate: true })!, /before its norm/);
  assert.match(refusal({ tie_word_embeddings: true })!, /lm_head_multiplier 2/);
  assert.equal(
    refusal({ tie_word_embeddings: true, embedding_multiplier: 1.5, lm_head_multiplier: 1.5 }),
    undefined,
  );
  assert.match(refusal({ projectors_bias: true })!, /projectors_bias true/);
  assert.match(refusal({ time_step_limit: [0, 10] })!, /time_step_limit/);
  assert.match(
    refusal({ rope_parameters: { rope_type: "linear", rope_theta: 1e4, factor: 2 } })!,
    /rope type "linear"/,
  );
});

async function scaled(dtype: "F32" | "BF16", bytes: Uint8Array, factors: number[]) {
  const out = scaleFloats(ReadableStream.from([bytes]), dtype, () => factors);
  return new Uint8Array(await new Response(out).arrayBuffer());
}

Deno.test("scaleFloats: float32 products of float32 factors, rounded to the payload's type after each", async () => {
  const x = new Float32Array([0.1, -3.3, 1e-3]);
  const f32 = new Float32Array(
    (await scaled("F32", new Uint8Array(x.buffer), [0.390625, 1.25])).buffer,
  );
  x.forEach((v, i) => assert.equal(f32[i], Math.fround(Math.fround(v * 0.390625) * 1.25)));
  // BF16 1.0 (0x3f80) × 1.1 rounds to 1.1015625 (0x3f8d), then × 1.1 again.
  const bf16 = await scaled("BF16", new Uint8Array([0x80, 0x3f]), [1.1, 1.1]);
  assert.deepEqual([...bf16], [0x9b, 0x3f]);
});
