import assert from "node:assert/strict";
import { ggufToHfName, hfToGgufName } from "../../../src/formats/gguf/names.ts";

const PAIRS: [string, string][] = [
  ["token_embd.weight", "model.embed_tokens.weight"],
  ["output_norm.weight", "model.norm.weight"],
  ["output.weight", "lm_head.weight"],
  ["blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight"],
  ["blk.0.attn_q.bias", "model.layers.0.self_attn.q_proj.bias"],
  ["blk.1.attn_k.weight", "model.layers.1.self_attn.k_proj.weight"],
  ["blk.1.attn_k.bias", "model.layers.1.self_attn.k_proj.bias"],
  ["blk.12.attn_v.weight", "model.layers.12.self_attn.v_proj.weight"],
  ["blk.12.attn_v.bias", "model.layers.12.self_attn.v_proj.bias"],
  ["blk.3.attn_output.weight", "model.layers.3.self_attn.o_proj.weight"],
  ["blk.3.attn_q_norm.weight", "model.layers.3.self_attn.q_norm.weight"],
  ["blk.3.attn_k_norm.weight", "model.layers.3.self_attn.k_norm.weight"],
  ["blk.4.ffn_gate.weight", "model.layers.4.mlp.gate_proj.weight"],
  ["blk.4.ffn_up.weight", "model.layers.4.mlp.up_proj.weight"],
  ["blk.4.ffn_down.weight", "model.layers.4.mlp.down_proj.weight"],
  ["blk.5.attn_norm.weight", "model.layers.5.input_layernorm.weight"],
  ["blk.5.ffn_norm.weight", "model.layers.5.post_attention_layernorm.weight"],
];

Deno.test("ggufToHfName() and hfToGgufName() map the llama layout both ways", async (t) => {
  for (const [gguf, hf] of PAIRS) {
    await t.step(gguf, () => {
      assert.equal(ggufToHfName(gguf), hf);
      assert.equal(hfToGgufName(hf), gguf);
    });
  }
});

Deno.test("ggufToHfName() and hfToGgufName() keep unknown names", () => {
  for (
    const name of [
      "rope_freqs.weight",
      "blk.0.attn_qkv.weight",
      "blk.x.attn_q.weight",
      "output",
      "tensor_0",
    ]
  ) {
    assert.equal(ggufToHfName(name), name);
  }
  for (
    const name of [
      "model.layers.0.self_attn.qkv_proj.weight",
      "model.embed_tokens",
      "transformer.h.0.attn.c_attn.weight",
    ]
  ) {
    assert.equal(hfToGgufName(name), name);
  }
});
