/**
 * Seed-OSS's refusals: the biases llama.cpp's `seed_oss` loads no tensor for.
 * Its GGUF itself is judged against llama.cpp's converter and transformers
 * in tests/interop/families_gguf_test.ts (fixture `seed-oss`).
 */

import assert from "node:assert/strict";
import { SEED_OSS } from "../../src/arch/families/seed_oss.ts";
import { KvWriter } from "../../src/arch/kv.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/families/hf/seed-oss/config.json", import.meta.url)),
) as Record<string, unknown>;

function refusal(change: Record<string, unknown>): string | undefined {
  return SEED_OSS.gguf!.unsupported!(new KvWriter({ ...CONFIG, ...change }, "seed_oss"));
}

Deno.test("seed_oss: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  // Q/K/V biases are what the fixture has, and llama.cpp loads them.
  assert.equal(CONFIG["attention_bias"], true);
  assert.match(refusal({ attention_out_bias: true })!, /attention_out_bias true/);
  assert.match(refusal({ mlp_bias: true })!, /mlp_bias true/);
  assert.match(
    refusal({ rope_parameters: { rope_type: "llama3", rope_theta: 1e4, factor: 8 } })!,
    /rope_type llama3/,
  );
});
