/**
 * Granite SWA's refusal: a per-layer RoPE base, which the converter cannot
 * write. Its GGUF itself is judged against llama.cpp's converter and
 * transformers in tests/interop/families_gguf_test.ts (fixture `granite-swa`).
 */

import assert from "node:assert/strict";
import { GRANITE_SWA } from "../../src/arch/families/granite_swa.ts";
import { KvWriter } from "../../src/arch/kv.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(
    new URL("../testdata/families/hf/granite-swa/config.json", import.meta.url),
  ),
) as Record<string, unknown>;

function refusal(change: Record<string, unknown>): string | undefined {
  return GRANITE_SWA.gguf!.unsupported!(new KvWriter({ ...CONFIG, ...change }, "granite_swa"));
}

Deno.test("granite_swa: a per-layer RoPE base other than the global one is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  assert.deepEqual(CONFIG["layer_rope_theta"], [10000, 10000, 10000, 10000]);
  assert.match(
    refusal({ layer_rope_theta: [10000, 0, 0, 0] })!,
    /layer_rope_theta \[10000,0,0,0\]/,
  );
});
