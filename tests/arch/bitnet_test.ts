/**
 * BitNet's refusals: what llama.cpp's `bitnet` graph hard-codes (SiLU, the
 * token embedding as the output layer, no biases, no RoPE scaling). Its GGUF
 * is judged against llama.cpp's converter and transformers in
 * tests/interop/families_gguf_test.ts (fixture `bitnet`); the ternary
 * rounding in ternary_test.ts.
 */

import assert from "node:assert/strict";
import { fixtureConfig, refusalOf } from "./_fixture_refusal.ts";

const CONFIG = await fixtureConfig("bitnet");
const refusal = (change: Record<string, unknown>) => refusalOf("bitnet", CONFIG, change);

Deno.test("bitnet: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  // transformers' default (and the published 2B-4T's) is relu2; llama.cpp's graph is SwiGLU.
  assert.match(
    refusal({ hidden_act: "relu2" })!,
    /hidden_act "relu2"; llama\.cpp's bitnet reads no key for it and computes as with "silu"/,
  );
  const { hidden_act: _, ...withoutAct } = CONFIG;
  assert.match(
    refusalOf("bitnet", withoutAct, {})!,
    /hidden_act "relu2" \(transformers' default; absent\)/,
  );
  assert.match(
    refusal({ tie_word_embeddings: false })!,
    /tie_word_embeddings false.*token embedding/,
  );
  const { tie_word_embeddings: __, ...untied } = CONFIG;
  assert.match(refusalOf("bitnet", untied, {})!, /tie_word_embeddings false \(by default\)/);
  assert.match(refusal({ attention_bias: true })!, /attention_bias true/);
  assert.match(
    refusal({ rope_parameters: { rope_type: "linear", factor: 2, rope_theta: 500000 } })!,
    /rope_type linear/,
  );
});
