/**
 * Jais 2's refusals: the biases llama.cpp's `jais2` requires. Its GGUF itself
 * is judged against llama.cpp's converter and transformers in
 * tests/interop/families_gguf_test.ts (fixture `jais2`).
 */

import assert from "node:assert/strict";
import { JAIS2 } from "../../src/arch/families/jais2.ts";
import { KvWriter } from "../../src/arch/kv.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/families/hf/jais2/config.json", import.meta.url)),
) as Record<string, unknown>;

function refusal(change: Record<string, unknown>): string | undefined {
  return JAIS2.gguf!.unsupported!(new KvWriter({ ...CONFIG, ...change }, "jais2"));
}

Deno.test("jais2: a config without the biases llama.cpp's jais2 requires is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  assert.match(refusal({ attention_bias: false })!, /attention_bias false; llama\.cpp's jais2/);
  assert.match(refusal({ mlp_bias: false })!, /mlp_bias false/);
});
