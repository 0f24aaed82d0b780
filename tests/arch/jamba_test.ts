/**
 * Jamba: the attention pattern as per-layer KV heads, and the projection
 * bias and missing convolution bias (llama.cpp's jamba loads the one and
 * requires the other) refused. Its GGUF itself is judged against llama.cpp's
 * converter and transformers in tests/interop/families_gguf_test.ts (fixture
 * `jamba`).
 */

import assert from "node:assert/strict";
import { JAMBA } from "../../src/arch/families/jamba.ts";
import { familyGgufRefusal } from "../../src/arch/gguf_plan.ts";
import { KvWriter } from "../../src/arch/kv.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/families/hf/jamba/config.json", import.meta.url)),
) as Record<string, unknown>;

Deno.test("jamba: attention every attn_layer_period layers from attn_layer_offset", () => {
  const kv = (change: object) => {
    const w = new KvWriter({ ...CONFIG, ...change }, "jamba");
    JAMBA.gguf!.writeKv(w);
    return w.entries().get("jamba.attention.head_count_kv")?.value;
  };
  assert.deepEqual(kv({}), [0, 2, 0, 2]);
  assert.deepEqual(kv({ num_hidden_layers: 8, attn_layer_period: 8, attn_layer_offset: 4 }), [
    0,
    0,
    0,
    0,
    2,
    0,
    0,
    0,
  ]);
});

Deno.test("jamba: biases llama.cpp's jamba does not load as transformers uses them are refused", () => {
  const refusal = (change: object) =>
    familyGgufRefusal({ architecture: JAMBA.name, hf_config: { ...CONFIG, ...change } });
  assert.equal(refusal({}), undefined);
  assert.match(refusal({ mamba_proj_bias: true })!, /mamba_proj_bias true/);
  assert.match(refusal({ mamba_conv_bias: false })!, /mamba_conv_bias false/);
});
