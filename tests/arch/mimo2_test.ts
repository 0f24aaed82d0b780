/**
 * MiMo-V2-Flash's refusals (what llama.cpp's `mimo2` would compute otherwise
 * than transformers: the published keys the converter writes against the
 * fields transformers computes with) and its keys from a config.json saved
 * by transformers, which the converter cannot read. Its GGUF itself is
 * judged against llama.cpp's converter and transformers in
 * tests/interop/families_gguf_test.ts (fixtures `mimo2`, `mimo2-mtp`).
 */

import assert from "node:assert/strict";
import { MIMO2 } from "../../src/arch/families/mimo2.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { fixtureConfig, refusalOf } from "./_fixture_refusal.ts";

const CONFIG = await fixtureConfig("mimo2");

function refusal(change: Record<string, unknown>): string | undefined {
  return refusalOf("mimo2", CONFIG, change);
}

Deno.test("mimo2: a config llama.cpp would not run as transformers does is refused, naming the field", async (t) => {
  const cases: [Record<string, unknown>, RegExp | undefined][] = [
    [{}, undefined],
    // The published null (transformers: 1).
    [{ routed_scaling_factor: 1 }, undefined],
    [{ routed_scaling_factor: 2.5 }, /routed_scaling_factor/],
    [{ norm_topk_prob: false }, /norm_topk_prob/],
    [{ attention_bias: true }, /attention_bias/],
    [{ hidden_act: "gelu" }, /hidden_act/],
    [{ swa_head_dim: 16 }, /swa_head_dim 16, not head_dim 24/],
    [{ swa_v_head_dim: 24 }, /swa_v_head_dim 24/],
    [{ swa_num_attention_heads: 8 }, /swa_num_attention_heads 8/],
    [{ swa_num_key_value_heads: 4 }, /swa_num_key_value_heads 4 \(transformers builds twice/],
    [{ topk_method: "greedy" }, /topk_method "greedy"/],
    [{ scoring_func: "softmax" }, /scoring_func "softmax"/],
    [{ add_full_attention_sink_bias: true }, /add_full_attention_sink_bias true/],
    // transformers ignores hybrid_layer_pattern: it computes its default layer_types.
    [{ hybrid_layer_pattern: [0, 1, 1, 1, 1, 1] }, /hybrid_layer_pattern \[0,1,1,1,1,1\]/],
    [{ hybrid_layer_pattern: [0, 1, 1] }, /hybrid_layer_pattern/],
    // Neither full (0) nor sliding (1): the converter gives it the full layers' KV heads
    // (== 1), llama.cpp slides it (non-zero); transformers' layer_types agree on "full".
    [{ hybrid_layer_pattern: [0, 1, 1, 1, 1, 2] }, /whose layer 5 is 2, neither 0/],
    [{ hybrid_layer_pattern: [0, 1, 1, 1, 1, -1] }, /whose layer 5 is -1/],
    // …or the layer_types config.json gives it.
    [{ layer_types: Array(6).fill("full_attention") }, /layer_types \["full_attention"/],
    // transformers ignores rope_theta, swa_rope_theta and partial_rotary_factor (its
    // rope_parameters, else its defaults), which the converter writes.
    [{ rope_theta: 1e6 }, /rope_theta 1000000 \(written\) but transformers computes with 5000000/],
    [{ swa_rope_theta: 5e6 }, /swa_rope_theta 5000000 .* with 10000/],
    [{ swa_rope_theta: undefined }, /swa_rope_theta 5000000/],
    [{ partial_rotary_factor: 0.5 }, /partial_rotary_factor 0.5/],
    [{ layernorm_epsilon: 1e-6 }, /layernorm_epsilon 0.000001 .* rms_norm_eps 0.00001/],
    [{ rms_norm_eps: 1e-6 }, /rms_norm_eps 0.000001/],
    [
      {
        rope_parameters: {
          full_attention: { rope_type: "default", rope_theta: 5e6, partial_rotary_factor: 0.334 },
          sliding_attention: { rope_type: "linear", factor: 2, rope_theta: 1e4 },
        },
      },
      /rope_type "linear"/,
    ],
  ];
  for (const [change, want] of cases) {
    await t.step(JSON.stringify(change), () => {
      const why = refusal(change);
      if (want === undefined) assert.equal(why, undefined);
      else assert.match(why ?? "(none)", want);
    });
  }
});

/** The published keys transformers 5.18's MiMoV2FlashConfig does not read. */
const HUB_KEYS = [
  "hybrid_layer_pattern",
  "moe_layer_freq",
  "swa_num_attention_heads",
  "swa_num_key_value_heads",
  "swa_head_dim",
  "swa_v_head_dim",
  "rope_theta",
  "swa_rope_theta",
  "partial_rotary_factor",
  "layernorm_epsilon",
  "sliding_window_size",
  "add_full_attention_sink_bias",
  "add_swa_attention_sink_bias",
  "topk_method",
  "scoring_func",
  "n_shared_experts",
];

Deno.test("mimo2: a config.json saved by transformers (its own fields only) gets the published one's keys", () => {
  const saved: Record<string, unknown> = Object.fromEntries(
    Object.entries(CONFIG).filter(([k]) => !HUB_KEYS.includes(k)),
  );
  Object.assign(saved, {
    layer_types: ["full_attention", ...Array(4).fill("sliding_attention"), "full_attention"],
    mlp_layer_types: ["dense", ...Array(5).fill("sparse")],
    rms_norm_eps: 1e-5,
    routed_scaling_factor: 1,
    rope_parameters: {
      full_attention: { rope_type: "default", rope_theta: 5e6, partial_rotary_factor: 0.334 },
      sliding_attention: { rope_type: "default", rope_theta: 1e4, partial_rotary_factor: 0.334 },
    },
  });
  const keys = (config: Record<string, unknown>) => {
    const w = new KvWriter(config, "mimo2");
    assert.equal(MIMO2.gguf!.unsupported!(w), undefined);
    MIMO2.gguf!.writeKv(w);
    return Object.fromEntries(w.entries());
  };
  const published = keys(CONFIG);
  // Only scoring_func names the router's function (llama.cpp's mimo2 uses a sigmoid either way).
  const { ["mimo2.expert_gating_func"]: gating, ...rest } = published;
  assert.deepEqual(gating, { type: "UINT32", value: 2 });
  assert.deepEqual(keys(saved), rest);
  assert.deepEqual(published["mimo2.attention.head_count_kv"]?.value, [1, 2, 2, 2, 2, 1, 2, 2, 2]);
});
