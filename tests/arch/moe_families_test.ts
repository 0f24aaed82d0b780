/**
 * The refusals of issue 31's mixture-of-experts families: config fields
 * that change what transformers computes and that llama.cpp's graph
 * hard-codes. Their GGUF itself is judged against llama.cpp's converter and
 * transformers in tests/interop/families_gguf_test.ts (one fixture each).
 */

import assert from "node:assert/strict";
import { familyGgufRefusal, familyGgufWarnings } from "../../src/arch/gguf_plan.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { FAMILIES } from "../../src/arch/registry.ts";

const FIXTURES = new URL("../testdata/families/hf/", import.meta.url).pathname;

/** The refusal of a fixture's config with `change` applied (`undefined` deletes a key). */
async function refusal(
  fixture: string,
  architecture: string,
  change: Record<string, unknown>,
): Promise<string | undefined> {
  const config = {
    ...JSON.parse(await Deno.readTextFile(`${FIXTURES}${fixture}/config.json`)),
    ...change,
  };
  for (const [k, v] of Object.entries(change)) if (v === undefined) delete config[k];
  return familyGgufRefusal({ architecture, hf_config: config, original_format: "safetensors" });
}

Deno.test("minimax-m2: a router other than transformers' sigmoid is refused; no scoring_func is written as sigmoid", async () => {
  assert.equal(await refusal("minimax-m2", "minimax-m2", {}), undefined);
  assert.equal(await refusal("minimax-m2", "minimax-m2", { scoring_func: undefined }), undefined);
  // Without it the converter writes no expert_gating_func, and llama.cpp aborts.
  const { scoring_func: _, ...config } = JSON.parse(
    await Deno.readTextFile(`${FIXTURES}minimax-m2/config.json`),
  );
  const w = new KvWriter(config, "minimax-m2");
  FAMILIES.get("minimax-m2")!.gguf!.writeKv(w);
  assert.deepEqual(w.entries().get("minimax-m2.expert_gating_func"), { type: "UINT32", value: 2 });
  assert.match(
    (await refusal("minimax-m2", "minimax-m2", { scoring_func: "softmax" }))!,
    /scoring_func "softmax"; transformers scores MiniMax-M2's experts with a sigmoid/,
  );
  assert.match(
    (await refusal("minimax-m2", "minimax-m2", { hidden_act: "gelu" }))!,
    /hidden_act "gelu"; llama\.cpp's minimax-m2 .* as with "silu"/,
  );
});

Deno.test("dots1: GQA, an o_proj bias, another router are refused; a sliding window llama.cpp ignores is warned of", async () => {
  assert.equal(await refusal("dots1", "dots1", {}), undefined);
  assert.match(
    (await refusal("dots1", "dots1", { num_key_value_heads: 2 }))!,
    /num_key_value_heads 2 and num_attention_heads 4; llama\.cpp's dots1 loads keys and values for every attention head/,
  );
  assert.match(
    (await refusal("dots1", "dots1", { attention_bias: true }))!,
    /attention_bias true; llama\.cpp's dots1 loads no attn_output\.bias/,
  );
  assert.match(
    (await refusal("dots1", "dots1", { scoring_func: "softmax" }))!,
    /scoring_func "softmax"; transformers scores dots\.llm1's experts with a sigmoid/,
  );
  const config = JSON.parse(await Deno.readTextFile(`${FIXTURES}dots1/config.json`));
  const warned = familyGgufWarnings({
    architecture: "dots1",
    hf_config: { ...config, layer_types: ["full_attention", "sliding_attention"] },
    original_format: "safetensors",
  });
  assert.equal(warned.length, 1);
  assert.match(warned[0]!, /sliding window of 4096 tokens on layers 1, which llama\.cpp's dots1/);
  assert.deepEqual(
    familyGgufWarnings({
      architecture: "dots1",
      hf_config: config,
      original_format: "safetensors",
    }),
    [],
  );
});

Deno.test("exaone-moe: what llama.cpp's exaone-moe would run otherwise is refused, naming the field", async () => {
  assert.equal(await refusal("exaone-moe", "exaone-moe", {}), undefined);
  assert.match(
    (await refusal("exaone-moe", "exaone-moe", { sliding_window: null }))!,
    /no sliding_window: llama\.cpp's exaone-moe needs one/,
  );
  assert.match(
    (await refusal("exaone-moe", "exaone-moe", {
      rope_parameters: { rope_type: "yarn", rope_theta: 1e4, factor: 4 },
    }))!,
    /rope_type "yarn"; llama\.cpp's converter writes exaone-moe's RoPE scaling as none/,
  );
  assert.match(
    (await refusal("exaone-moe", "exaone-moe", {
      mlp_layer_types: ["dense", "sparse", "dense", "sparse"],
    }))!,
    /mlp_layer_types \["dense","sparse","dense","sparse"\]/,
  );
  // MTP layers are written, one (exaone-moe-mtp) or more sharing mtp.fc and its norms
  // (exaone-moe-mtp2, which the converter copies into each).
  for (const n of [1, 2]) {
    assert.equal(
      await refusal("exaone-moe", "exaone-moe", { num_nextn_predict_layers: n }),
      undefined,
    );
  }
  assert.match(
    (await refusal("exaone-moe", "exaone-moe", { scoring_func: "softmax" }))!,
    /scoring_func "softmax"; transformers scores K-EXAONE's experts with a sigmoid/,
  );
  // llama.cpp's exaone-moe requires expert_gating_func: sigmoid, also without scoring_func.
  const { scoring_func: _, ...config } = JSON.parse(
    await Deno.readTextFile(`${FIXTURES}exaone-moe/config.json`),
  );
  const w = new KvWriter(config, "exaone-moe");
  FAMILIES.get("exaone-moe")!.gguf!.writeKv(w);
  assert.deepEqual(w.entries().get("exaone-moe.expert_gating_func"), { type: "UINT32", value: 2 });
});

Deno.test("afmoe: what llama.cpp's afmoe would run otherwise is refused, naming the field", async () => {
  assert.equal(await refusal("afmoe", "afmoe", {}), undefined);
  assert.match(
    (await refusal("afmoe", "afmoe", {
      layer_types: ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
    }))!,
    /layer_types .*; llama\.cpp's afmoe rotates and slides every layer but each 4th/,
  );
  assert.match(
    (await refusal("afmoe", "afmoe", { mup_enabled: false }))!,
    /mup_enabled false; llama\.cpp's afmoe reads no key for it and computes as with true/,
  );
  assert.match(
    (await refusal("afmoe", "afmoe", { mup_enabled: undefined }))!,
    /mup_enabled false \(transformers' default; absent\)/,
  );
  assert.match(
    (await refusal("afmoe", "afmoe", { route_norm: false }))!,
    /route_norm false; transformers normalises AFMoE's top-k weights regardless/,
  );
  assert.match(
    (await refusal("afmoe", "afmoe", { attention_bias: true }))!,
    /attention_bias true; llama\.cpp's afmoe loads no attn_output\.bias/,
  );
  // Without route_norm (not a transformers field) the converter writes no
  // expert_weights_norm, which llama.cpp reads as false: true is written.
  const { route_norm: _, ...config } = JSON.parse(
    await Deno.readTextFile(`${FIXTURES}afmoe/config.json`),
  );
  const w = new KvWriter(config, "afmoe");
  FAMILIES.get("afmoe")!.gguf!.writeKv(w);
  assert.deepEqual(w.entries().get("afmoe.expert_weights_norm"), { type: "BOOL", value: true });
});

Deno.test("glm4moe-lite: DeepSeek-V3's refusals, mlp_layer_types, and keys the converter would leave out", async () => {
  assert.equal(await refusal("glm4moe-lite", "glm4moe-lite", {}), undefined);
  assert.match(
    (await refusal("glm4moe-lite", "glm4moe-lite", { mlp_layer_types: ["sparse", "dense"] }))!,
    /mlp_layer_types \["sparse","dense"\]; llama\.cpp's deepseek2 runs the first 1 layers dense/,
  );
  assert.match(
    (await refusal("glm4moe-lite", "glm4moe-lite", { scoring_func: "softmax" }))!,
    /scoring_func "softmax", and transformers scores glm4_moe_lite experts with a sigmoid/,
  );
  assert.match(
    (await refusal("glm4moe-lite", "glm4moe-lite", { rope_interleave: false }))!,
    /rope_interleave false/,
  );
  assert.equal(
    await refusal("glm4moe-lite", "glm4moe-lite", { scoring_func: undefined }),
    undefined,
  );
  const config = JSON.parse(await Deno.readTextFile(`${FIXTURES}glm4moe-lite/config.json`));
  const keys = (change: Record<string, unknown>) => {
    const c = { ...config, ...change };
    for (const [k, v] of Object.entries(change)) if (v === undefined) delete c[k];
    const w = new KvWriter(c, "deepseek2");
    FAMILIES.get("glm4moe-lite")!.gguf!.writeKv(w);
    return w.entries();
  };
  // The trunk and the multi-token-prediction layer, as the converter counts them.
  assert.equal(keys({}).get("deepseek2.block_count")?.value, 3);
  assert.equal(keys({}).get("deepseek2.nextn_predict_layers")?.value, 1);
  // Without first_k_dense_replace (not a transformers field), from mlp_layer_types.
  assert.equal(
    keys({ first_k_dense_replace: undefined }).get("deepseek2.leading_dense_block_count")?.value,
    1,
  );
  // Without scoring_func llama.cpp would use a softmax here: transformers' sigmoid is written.
  assert.equal(keys({ scoring_func: undefined }).get("deepseek2.expert_gating_func")?.value, 2);
  // GLM-4.7-Flash's own shape, where llama.cpp assumes the sigmoid: nothing written, as the converter.
  assert.equal(
    keys({ scoring_func: undefined, num_hidden_layers: 47, vocab_size: 154880 })
      .get("deepseek2.expert_gating_func"),
    undefined,
  );
});

Deno.test("cohere2moe: what llama.cpp's cohere2moe would run otherwise is refused, naming the field", async () => {
  assert.equal(await refusal("cohere2moe", "cohere2moe", {}), undefined);
  assert.match(
    (await refusal("cohere2moe", "cohere2moe", { norm_topk_prob: false }))!,
    /norm_topk_prob false with expert_selection_fn softmax/,
  );
  // A sigmoid router normalises only with norm_topk_prob, as llama.cpp does.
  assert.equal(
    await refusal("cohere2moe", "cohere2moe", {
      expert_selection_fn: "sigmoid",
      norm_topk_prob: false,
    }),
    undefined,
  );
  assert.match(
    (await refusal("cohere2moe", "cohere2moe", { shared_expert_combination_strategy: "sum" }))!,
    /shared_expert_combination_strategy "sum"; llama\.cpp's cohere2moe averages/,
  );
  assert.match(
    (await refusal("cohere2moe", "cohere2moe", { prefix_dense_sliding_window_pattern: 2 }))!,
    /prefix_dense_sliding_window_pattern 2; llama\.cpp's cohere2moe rotates every leading dense layer/,
  );
  assert.match(
    (await refusal("cohere2moe", "cohere2moe", {
      mlp_layer_types: ["sparse", "dense", "sparse", "sparse"],
    }))!,
    /mlp_layer_types \["sparse","dense","sparse","sparse"\]/,
  );
  assert.match(
    (await refusal("cohere2moe", "cohere2moe", { sliding_window: null }))!,
    /no sliding_window; llama\.cpp's cohere2moe needs one/,
  );
  assert.match(
    (await refusal("cohere2moe", "cohere2moe", { attention_bias: true }))!,
    /attention_bias true/,
  );
});

Deno.test("dbrx: what llama.cpp's dbrx would run otherwise is refused, naming the field", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${FIXTURES}dbrx/config.json`));
  const ffn = (change: Record<string, unknown>) => ({
    ffn_config: { ...config.ffn_config, ...change },
  });
  const attn = (change: Record<string, unknown>) => ({
    attn_config: { ...config.attn_config, ...change },
  });
  assert.equal(await refusal("dbrx", "dbrx", {}), undefined);
  assert.match(
    (await refusal("dbrx", "dbrx", ffn({ moe_normalize_expert_weights: null })))!,
    /ffn_config\.moe_normalize_expert_weights null; llama\.cpp's dbrx normalises/,
  );
  assert.match(
    (await refusal("dbrx", "dbrx", ffn({ moe_normalize_expert_weights: 2 })))!,
    /moe_normalize_expert_weights 2/,
  );
  assert.match(
    (await refusal("dbrx", "dbrx", ffn({ ffn_act_fn: { name: "gelu" } })))!,
    /ffn_config\.ffn_act_fn "gelu"; llama\.cpp's dbrx computes SiLU/,
  );
  assert.match(
    (await refusal("dbrx", "dbrx", attn({ clip_qkv: null })))!,
    /attn_config\.clip_qkv null; llama\.cpp's dbrx needs attention\.clamp_kqv/,
  );
  assert.match(
    (await refusal("dbrx", "dbrx", attn({ rope_theta: 10000 })))!,
    /attn_config\.rope_theta 10000 and rope_parameters\.rope_theta 500000/,
  );
  // transformers 4's form: the base only in attn_config, which the converter writes.
  const w = new KvWriter({ ...config, rope_parameters: undefined }, "dbrx");
  FAMILIES.get("dbrx")!.gguf!.writeKv(w);
  assert.deepEqual(w.entries().get("dbrx.rope.freq_base"), { type: "FLOAT32", value: 500000 });
});

Deno.test("hy-v3: MTP layers count into block_count and nextn_predict_layers; an MTP block's final_layernorm is read as shared_head.norm", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${FIXTURES}hy-v3-mtp/config.json`));
  const hy = FAMILIES.get("hy-v3")!;
  assert.equal(await refusal("hy-v3-mtp", "hy-v3", {}), undefined);
  const w = new KvWriter(config, "hy_v3");
  hy.gguf!.writeKv(w);
  assert.deepEqual(w.entries().get("hy_v3.block_count"), { type: "UINT32", value: 3 });
  assert.deepEqual(w.entries().get("hy_v3.nextn_predict_layers"), { type: "UINT32", value: 1 });
  const name = hy.gguf!.sourceName!;
  assert.equal(
    name("model.layers.2.final_layernorm.weight", config),
    "model.layers.2.shared_head.norm.weight",
  );
  // A trunk layer's name is left as it is.
  assert.equal(
    name("model.layers.1.final_layernorm.weight", config),
    "model.layers.1.final_layernorm.weight",
  );
  const plain = new KvWriter({ ...config, num_nextn_predict_layers: 0 }, "hy_v3");
  hy.gguf!.writeKv(plain);
  assert.deepEqual(plain.entries().get("hy_v3.block_count"), { type: "UINT32", value: 2 });
  assert.equal(plain.entries().get("hy_v3.nextn_predict_layers"), undefined);
});
