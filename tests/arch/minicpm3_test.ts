/**
 * MiniCPM3's refusals: what llama.cpp's `minicpm3` hard-codes or reads no
 * key for, set otherwise in config.json. Its GGUF itself is judged against
 * llama.cpp's converter and transformers in tests/interop/families_gguf_test.ts
 * (fixture `minicpm3`).
 */

import assert from "node:assert/strict";
import { FAMILIES } from "../../src/arch/registry.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { fixtureConfig, refusalOf } from "./_fixture_refusal.ts";

const CONFIG = await fixtureConfig("minicpm3");
const ROPE = CONFIG["rope_parameters"] as Record<string, unknown>;
const refusal = (change: Record<string, unknown>) => refusalOf("minicpm3", CONFIG, change);

Deno.test("minicpm3: a config llama.cpp would not run as transformers does is refused, naming the field", () => {
  assert.equal(refusal({}), undefined);
  // The muP scales llama.cpp's graph hard-codes (12, 1.4, 256).
  assert.match(refusal({ scale_emb: 10 })!, /scale_emb 10; .*computes as with 12/);
  assert.match(refusal({ scale_depth: 1.0 })!, /scale_depth 1; .*computes as with 1\.4/);
  assert.match(refusal({ dim_model_base: 64 })!, /dim_model_base 64; .*computes as with 256/);
  assert.match(refusal({ hidden_act: "gelu" })!, /hidden_act "gelu"/);
  // What the converter does not write.
  assert.match(
    refusal({ v_head_dim: 8 })!,
    /v_head_dim 8; .*hidden_size \/ num_attention_heads = 16/,
  );
  assert.match(
    refusal({ rope_parameters: { ...ROPE, rope_theta: 1e6 } })!,
    /rope_theta 1000000; the converter writes no RoPE base/,
  );
  assert.match(
    refusal({ rope_parameters: { rope_type: "yarn", rope_theta: 10000, factor: 4 } })!,
    /rope_type "yarn"/,
  );
  assert.match(
    refusal({ rope_parameters: { ...ROPE, original_max_position_embeddings: 32 } })!,
    /original_max_position_embeddings 32, not max_position_embeddings 256/,
  );
  assert.match(
    refusal({ rope_parameters: { ...ROPE, attention_factor: 1.2 } })!,
    /LongRoPE attention_factor 1\.2/,
  );
  assert.match(
    refusal({ rope_parameters: { ...ROPE, mscale_all_dim: 0.707 } })!,
    /LongRoPE mscale_all_dim 0\.707/,
  );
  // What llama.cpp's minicpm3 loads no tensor for, or caches otherwise.
  assert.match(refusal({ q_lora_rank: null })!, /q_lora_rank null/);
  assert.match(refusal({ num_key_value_heads: 2 })!, /num_key_value_heads 2/);
  assert.match(refusal({ attention_bias: true })!, /attention_bias true/);
  assert.match(refusal({ mlp_bias: true })!, /mlp_bias true/);
  // Without LongRoPE, plain RoPE at llama.cpp's base runs as written.
  assert.equal(
    refusal({ rope_parameters: { rope_type: "default", rope_theta: 10000 } }),
    undefined,
  );
});

Deno.test("minicpm3: the published config form (transformers 4's rope_scaling, no rope_theta) converts as the fixture's", () => {
  const published: Record<string, unknown> = {
    ...CONFIG,
    rope_parameters: undefined,
    rope_scaling: {
      type: "longrope",
      long_factor: ROPE["long_factor"],
      short_factor: ROPE["short_factor"],
      original_max_position_embeddings: 256,
    },
  };
  delete published["rope_parameters"];
  assert.equal(refusalOf("minicpm3", published, {}), undefined);
  assert.match(refusalOf("minicpm3", published, { rope_theta: 1e6 })!, /rope_theta 1000000/);
  const gguf = FAMILIES.get("minicpm3")!.gguf!;
  const [long, short] = gguf.generate!(new KvWriter(published, "minicpm3"));
  assert.deepEqual([...long!.values], ROPE["long_factor"]);
  assert.deepEqual([...short!.values], ROPE["short_factor"]);
  assert.equal(long!.name, "rope_factors_long.weight");
});
