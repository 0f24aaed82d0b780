/**
 * LFM2: the SwiGLU width as transformers derives it, the layer pattern as
 * per-layer KV heads, and a convolution bias (which llama.cpp loads no
 * tensor for) refused. Its GGUF itself is judged against llama.cpp's
 * converter and transformers in tests/interop/families_gguf_test.ts (fixture
 * `lfm2`).
 */

import assert from "node:assert/strict";
import { LFM2, LFM2_MOE } from "../../src/arch/families/lfm2.ts";
import { familyGgufRefusal } from "../../src/arch/gguf_plan.ts";
import { KvWriter } from "../../src/arch/kv.ts";

const CONFIG = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/families/hf/lfm2/config.json", import.meta.url)),
) as Record<string, unknown>;

function keys(change: object): Map<string, unknown> {
  const w = new KvWriter({ ...CONFIG, ...change }, "lfm2");
  LFM2.gguf!.writeKv(w);
  return new Map([...w.entries()].map(([k, e]) => [k, e.value]));
}

Deno.test("lfm2: the feed-forward width and layer pattern as transformers builds them", () => {
  // 2/3 of 192, rounded up to a multiple of 32.
  assert.equal(keys({}).get("lfm2.feed_forward_length"), 128);
  assert.equal(keys({ block_ffn_dim_multiplier: 1.5 }).get("lfm2.feed_forward_length"), 192);
  assert.equal(keys({ block_auto_adjust_ff_dim: false }).get("lfm2.feed_forward_length"), 192);
  assert.equal(LFM2.hfWidth!(CONFIG), 128);
  assert.deepEqual(keys({}).get("lfm2.attention.head_count_kv"), [0, 2, 0, 2]);
  // A config with only full_attn_idxs (transformers derives layer_types from it).
  assert.deepEqual(
    keys({ layer_types: undefined, full_attn_idxs: [2] }).get("lfm2.attention.head_count_kv"),
    [0, 0, 2, 0],
  );
});

Deno.test("lfm2: a convolution bias, which llama.cpp loads no tensor for, is refused", () => {
  const refusal = (change: object) =>
    familyGgufRefusal({ architecture: LFM2.name, hf_config: { ...CONFIG, ...change } });
  assert.equal(refusal({}), undefined);
  assert.match(refusal({ conv_bias: true })!, /conv_bias true.*false/);
});

Deno.test("lfm2-moe: routing llama.cpp's lfm2moe fixes (normalised, unscaled, biased) is checked", async () => {
  const moe = JSON.parse(
    await Deno.readTextFile(
      new URL("../testdata/families/hf/lfm2-moe/config.json", import.meta.url),
    ),
  ) as Record<string, unknown>;
  const refusal = (change: object) =>
    familyGgufRefusal({ architecture: LFM2_MOE.name, hf_config: { ...moe, ...change } });
  assert.equal(refusal({}), undefined);
  assert.match(refusal({ norm_topk_prob: false })!, /norm_topk_prob false.*true/);
  assert.match(refusal({ routed_scaling_factor: 2.5 })!, /routed_scaling_factor 2\.5.*1/);
  assert.match(refusal({ use_expert_bias: false })!, /use_expert_bias false/);
  const w = new KvWriter(moe, "lfm2moe");
  LFM2_MOE.gguf!.writeKv(w);
  assert.deepEqual(w.entries().get("lfm2moe.attention.head_count_kv")?.value, [0, 2, 0, 2]);
  assert.equal(w.entries().get("lfm2moe.leading_dense_block_count")?.value, 1);
});
