/**
 * BLOOM's and Falcon's fused Q/K/V orders and Falcon's refusals (ALiBi,
 * biases, sequential blocks, another MLP width, RoPE the converter writes no
 * key for). Their GGUFs are judged against llama.cpp's converter and
 * transformers in tests/interop/families_gguf_test.ts (fixtures `bloom`,
 * `falcon`).
 */

import assert from "node:assert/strict";
import { configRefusal } from "../../src/arch/config_fields.ts";
import { BLOOM } from "../../src/arch/families/bloom.ts";
import { FALCON } from "../../src/arch/families/falcon.ts";
import { KvWriter } from "../../src/arch/kv.ts";

const FALCON_CONFIG = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/families/hf/falcon/config.json", import.meta.url)),
) as Record<string, unknown>;

function falconRefusal(change: Record<string, unknown>): string | undefined {
  const w = new KvWriter({ ...FALCON_CONFIG, ...change }, "falcon");
  return configRefusal(FALCON.configFields, w) ?? FALCON.gguf!.unsupported!(w);
}

Deno.test("falcon: what llama.cpp's falcon cannot run as transformers does is refused, naming the field", () => {
  assert.equal(falconRefusal({}), undefined);
  assert.match(falconRefusal({ alibi: true })!, /alibi true.*RoPE/);
  assert.match(falconRefusal({ bias: true })!, /bias true/);
  assert.match(falconRefusal({ parallel_attn: false })!, /parallel_attn false/);
  assert.match(falconRefusal({ ffn_hidden_size: 128 })!, /ffn_hidden_size 128.*256/);
  // transformers knows one LayerNorm or two (the tensors say which: model_shape.ts).
  assert.equal(falconRefusal({ num_ln_in_parallel_attn: 1 }), undefined);
  assert.equal(falconRefusal({ num_ln_in_parallel_attn: null }), undefined);
  assert.match(
    falconRefusal({ num_ln_in_parallel_attn: 3 })!,
    /num_ln_in_parallel_attn 3; transformers' Falcon builds one LayerNorm \(1\) or two \(2\)/,
  );
  assert.match(
    falconRefusal({ rope_parameters: { rope_type: "default", rope_theta: 5e5 } })!,
    /rope_theta 500000/,
  );
});

Deno.test("falcon: KV heads as transformers counts them (Falcon-7B's multi_query is one), written as head_count_kv", () => {
  const kv = (change: Record<string, unknown>) => {
    const w = new KvWriter({ ...FALCON_CONFIG, ...change }, "falcon");
    FALCON.gguf!.writeKv(w);
    return w.entries().get("falcon.attention.head_count_kv")?.value;
  };
  assert.equal(kv({}), 2);
  // transformers 5 sets num_kv_heads to the head count when a 7B config leaves it out.
  assert.equal(kv({ new_decoder_architecture: false, multi_query: true, num_kv_heads: 4 }), 1);
  assert.equal(kv({ new_decoder_architecture: false, multi_query: false }), 4);
});

Deno.test("falcon: Q/K/V regrouped from KV groups (q…q k v per group) to all q, k, v; ln_mlp reads back as input_layernorm without an attn_norm_2", () => {
  const order = FALCON.gguf!.rowBlocks!;
  // 4 heads in 2 groups of 2: group g holds blocks 4g..4g+3 = q q k v.
  assert.deepEqual(
    order("transformer.h.0.self_attention.query_key_value.weight", [128, 64], 4),
    [0, 1, 4, 5, 2, 6, 3, 7],
  );
  // Multi-query (one group): q q q q k v.
  assert.deepEqual(
    order("transformer.h.0.self_attention.query_key_value.weight", [96, 64], 4),
    [0, 1, 2, 3, 4, 5],
  );
  assert.throws(
    () => order("transformer.h.0.self_attention.query_key_value.weight", [100, 64], 4),
    /Cannot regroup/,
  );
  const back = FALCON.gguf!.hfNameBack!;
  const name = "transformer.h.3.ln_mlp.weight";
  assert.equal(back(name, new Set(["blk.3.attn_norm.weight", "blk.3.attn_norm_2.weight"])), name);
  assert.equal(
    back(name, new Set(["blk.3.attn_norm.weight"])),
    "transformer.h.3.input_layernorm.weight",
  );
  assert.equal(back(name), name);
});

Deno.test("bloom: Q/K/V regrouped per head as GPT-NeoX's; the context is seq_length, else the width", () => {
  assert.deepEqual(
    BLOOM.gguf!.rowBlocks!("transformer.h.1.self_attention.query_key_value.bias", [192], 4),
    [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11],
  );
  const ctx = (config: Record<string, unknown>) => {
    const w = new KvWriter({
      hidden_size: 64,
      n_head: 4,
      n_layer: 2,
      layer_norm_epsilon: 1e-5,
      ...config,
    }, "bloom");
    BLOOM.gguf!.writeKv(w);
    return w.entries().get("bloom.context_length")?.value;
  };
  assert.equal(ctx({}), 64);
  assert.equal(ctx({ seq_length: 2048 }), 2048);
  const w = new KvWriter({ apply_residual_connection_post_layernorm: true }, "bloom");
  assert.match(
    configRefusal(BLOOM.configFields, w)!,
    /apply_residual_connection_post_layernorm true/,
  );
});
