/**
 * Arcee's refusals: what llama.cpp's `arcee` loads no tensor for or computes
 * otherwise. Its GGUF itself is judged against llama.cpp's converter and
 * transformers in tests/interop/families_gguf_test.ts (fixture `arcee`).
 */

import assert from "node:assert/strict";
import { fixtureConfig, refusalOf } from "./_fixture_refusal.ts";

const CONFIG = await fixtureConfig("arcee");
const refusal = (change: Record<string, unknown>) => refusalOf("arcee", CONFIG, change);

Deno.test("arcee: a config llama.cpp's arcee would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  assert.match(refusal({ hidden_act: "silu" })!, /hidden_act "silu".*as with "relu2"/);
  assert.match(refusal({ attention_bias: true })!, /attention_bias true; llama\.cpp's arcee/);
  assert.match(refusal({ mlp_bias: true })!, /mlp_bias true/);
  assert.match(
    refusal({
      rope_parameters: {
        rope_type: "longrope",
        rope_theta: 1e4,
        short_factor: [1],
        long_factor: [1],
      },
    })!,
    /rope_type longrope/,
  );
});
