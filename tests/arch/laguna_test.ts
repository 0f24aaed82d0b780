/**
 * Laguna's refusals: what llama.cpp's `laguna` computes otherwise than
 * transformers (its fixed sliding-window pattern, no o_proj bias). Its GGUF
 * itself is judged against llama.cpp's converter and transformers in
 * tests/interop/families_gguf_test.ts (fixture `laguna`).
 */

import assert from "node:assert/strict";
import { LAGUNA } from "../../src/arch/families/laguna.ts";
import { KvWriter } from "../../src/arch/kv.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/families/hf/laguna/config.json", import.meta.url)),
) as Record<string, unknown>;
const ROPE = CONFIG["rope_parameters"] as Record<string, Record<string, unknown>>;
const FULL = ["full_attention", "full_attention", "full_attention", "full_attention"];

function refusal(change: Record<string, unknown>): string | undefined {
  return LAGUNA.gguf!.unsupported!(new KvWriter({ ...CONFIG, ...change }, "laguna"));
}

Deno.test("laguna: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  // No window: every layer global, as Laguna-M.1.
  assert.equal(refusal({ sliding_window: null, layer_types: FULL }), undefined);
  // transformers' default layer_types (all global) with its default window of 512.
  assert.match(refusal({ layer_types: FULL })!, /layer_types .* with sliding_window 16/);
  assert.match(refusal({ sliding_window: 0 })!, /slides none/);
  assert.match(
    refusal({ mlp_layer_types: ["dense", "sparse", "dense", "sparse"] })!,
    /mlp_layer_types/,
  );
  assert.match(refusal({ gating: false })!, /gating false/);
  assert.equal(refusal({ gating: "per-element" }), undefined);
  assert.match(refusal({ attention_bias: true })!, /attention_bias true/);
  assert.match(
    refusal({
      rope_parameters: { ...ROPE, sliding_attention: { rope_type: "linear", factor: 2 } },
    })!,
    /rope_type "linear" for sliding_attention/,
  );
  // More rotated dimensions than the 16-wide head has, or none.
  const shares: [string, number, RegExp][] = [
    [
      "sliding_attention",
      2,
      /sliding_attention\.partial_rotary_factor 2, 32 rotated dimensions of a 16-wide head/,
    ],
    ["full_attention", 0.01, /full_attention\.partial_rotary_factor 0\.01, 0 rotated dimensions/],
  ];
  for (const [kind, share, want] of shares) {
    const rope = { ...ROPE, [kind]: { ...ROPE[kind], partial_rotary_factor: share } };
    assert.match(refusal({ rope_parameters: rope })!, want);
  }
});
