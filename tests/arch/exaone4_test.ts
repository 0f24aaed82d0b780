/**
 * EXAONE 4's refusals and sliding-window pattern (its GGUF itself is judged
 * against llama.cpp's converter and transformers in
 * tests/interop/families_gguf_test.ts, fixtures `exaone4` and `exaone4-swa`).
 */

import assert from "node:assert/strict";
import { EXAONE4 } from "../../src/arch/families/exaone4.ts";
import { KvWriter } from "../../src/arch/kv.ts";

async function config(fixture: string): Promise<Record<string, unknown>> {
  return JSON.parse(
    await Deno.readTextFile(
      new URL(`../testdata/families/hf/${fixture}/config.json`, import.meta.url),
    ),
  );
}

function writer(base: Record<string, unknown>, change: Record<string, unknown>): KvWriter {
  return new KvWriter({ ...base, ...change }, "exaone4");
}

Deno.test("exaone4: a sliding window exactly with 64 layers, as llama.cpp runs one; llama3 RoPE needs its factor", async () => {
  const plain = await config("exaone4");
  const swa = await config("exaone4-swa");
  const refusal = (base: Record<string, unknown>, change: Record<string, unknown>) =>
    EXAONE4.gguf!.unsupported!(writer(base, change));
  assert.equal(refusal(plain, {}), undefined);
  assert.equal(refusal(swa, {}), undefined);
  assert.match(refusal(plain, { sliding_window: 8 })!, /sliding_window 8 with 2 layers/);
  assert.match(refusal(swa, { sliding_window: null })!, /sliding_window null with 64 layers/);
  assert.match(
    refusal(swa, { layer_types: undefined, sliding_window_pattern: undefined })!,
    /no layer_types or sliding_window_pattern/,
  );
  const rope = { rope_type: "llama3", rope_theta: 10000, original_max_position_embeddings: 32 };
  assert.match(refusal(plain, { rope_parameters: rope })!, /llama3 without factor/);
});

Deno.test("exaone4: the pattern from layer_types, else sliding_window_pattern as a string or a period", async () => {
  const swa = await config("exaone4-swa");
  const pattern = (change: Record<string, unknown>) => {
    const w = writer(swa, { num_hidden_layers: 64, ...change });
    EXAONE4.gguf!.writeKv(w);
    return w.entries().get("exaone4.attention.sliding_window_pattern")?.value as boolean[];
  };
  const lllg = Array.from({ length: 64 }, (_, i) => i % 4 !== 3);
  assert.deepEqual(pattern({}), lllg);
  assert.deepEqual(pattern({ layer_types: undefined, sliding_window_pattern: "LLLG" }), lllg);
  assert.deepEqual(pattern({ layer_types: undefined, sliding_window_pattern: 4 }), lllg);
  assert.deepEqual(
    pattern({ layer_types: undefined, sliding_window_pattern: "LG" }),
    Array.from({ length: 64 }, (_, i) => i % 2 === 0),
  );
});
