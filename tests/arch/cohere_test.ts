/**
 * The Cohere families' refusals (their GGUF itself is judged against
 * llama.cpp's converter and transformers in
 * tests/interop/families_gguf_test.ts, fixtures `command-r`, `command-r-plus`
 * and `cohere2`).
 */

import assert from "node:assert/strict";
import { COHERE2, COMMAND_R } from "../../src/arch/families/cohere.ts";
import type { Family } from "../../src/arch/family.ts";
import { KvWriter } from "../../src/arch/kv.ts";

async function config(fixture: string): Promise<Record<string, unknown>> {
  return JSON.parse(
    await Deno.readTextFile(
      new URL(`../testdata/families/hf/${fixture}/config.json`, import.meta.url),
    ),
  );
}

function refusal(
  family: Family,
  base: Record<string, unknown>,
  change: Record<string, unknown>,
): string | undefined {
  const w = new KvWriter({ ...base, ...change }, family.ggufArchitecture);
  return family.gguf!.unsupported!(w);
}

Deno.test("command-r: Q/K norms only with 64 layers or more, as llama.cpp loads them; no attention bias or RoPE scaling", async () => {
  const r = await config("command-r");
  const plus = await config("command-r-plus");
  assert.equal(refusal(COMMAND_R, r, {}), undefined);
  assert.equal(refusal(COMMAND_R, plus, {}), undefined);
  assert.match(refusal(COMMAND_R, r, { use_qk_norm: true })!, /use_qk_norm true with 2 layers/);
  assert.match(refusal(COMMAND_R, plus, { use_qk_norm: false })!, /use_qk_norm false with 64/);
  assert.match(refusal(COMMAND_R, r, { attention_bias: true })!, /attention_bias true/);
  const linear = { rope_parameters: { rope_type: "linear", factor: 2, rope_theta: 10000 } };
  assert.match(refusal(COMMAND_R, r, linear)!, /rope_type "linear"/);
});

Deno.test("cohere2: every fourth layer global, rotary_pct 1, as llama.cpp assumes and transformers computes", async () => {
  const c = await config("cohere2");
  assert.equal(refusal(COHERE2, c, {}), undefined);
  const types = ["sliding_attention", "full_attention", "sliding_attention", "full_attention"];
  assert.match(refusal(COHERE2, c, { layer_types: types })!, /layer_types \(layer 1/);
  assert.match(refusal(COHERE2, c, { rotary_pct: 0.5 })!, /rotary_pct 0.5/);
  assert.match(refusal(COHERE2, c, { rotary_pct: undefined })!, /rotary_pct null/);
  assert.match(refusal(COHERE2, c, { attention_bias: true })!, /attention_bias true/);
});
