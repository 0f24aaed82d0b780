/**
 * Mellum 2's refusals: what llama.cpp's `mellum` computes otherwise than
 * transformers or loads no tensor for. Its GGUF itself is judged against
 * llama.cpp's converter and transformers in tests/interop/families_gguf_test.ts
 * (fixture `mellum`).
 */

import assert from "node:assert/strict";
import { MELLUM } from "../../src/arch/families/mellum.ts";
import { KvWriter } from "../../src/arch/kv.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/families/hf/mellum/config.json", import.meta.url)),
) as Record<string, unknown>;
const ROPE = CONFIG["rope_parameters"] as Record<string, Record<string, unknown>>;

function refusal(change: Record<string, unknown>): string | undefined {
  return MELLUM.gguf!.unsupported!(new KvWriter({ ...CONFIG, ...change }, "mellum"));
}

Deno.test("mellum: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  const published = {
    full_attention: { rope_type: "default", rope_theta: 5e5 },
    sliding_attention: { rope_type: "default", rope_theta: 1e4 },
  };
  // transformers' default bases differ: refused only with a sliding layer.
  assert.match(
    refusal({ rope_parameters: published })!,
    /rope_theta 10000 for sliding_attention and 500000 for full_attention/,
  );
  assert.equal(
    refusal({ rope_parameters: published, layer_types: ["full_attention", "full_attention"] }),
    undefined,
  );
  assert.match(
    refusal({
      rope_parameters: { ...ROPE, sliding_attention: { rope_type: "linear", factor: 2 } },
    })!,
    /rope_type "linear" for sliding_attention/,
  );
  assert.match(refusal({ mlp_layer_types: ["dense", "sparse"] })!, /mlp_layer_types/);
  assert.match(refusal({ layer_types: undefined })!, /no layer_types/);
  assert.match(refusal({ attention_bias: true })!, /attention_bias true/);
  assert.match(refusal({ tie_word_embeddings: true })!, /tie_word_embeddings true/);
});
