// This module is browser compatible.

/**
 * GLM-4 (`GlmForCausalLM`: glm-4-9b-chat-hf, glm-4-9b-hf), after llama.cpp's
 * `ChatGLMModel` (conversion/chatglm.py), GGUF architecture `chatglm`: GLM's
 * block without GLM-4-0414's post-norms (Q/K/V biases, `gate_up_proj` kept
 * fused as `ffn_up`), half of each head rotated by adjacent pairs (llama.cpp's
 * NORM): renamed only.
 *
 * The converter writes its own keys, not `TextModel`'s: `context_length` from
 * `seq_length`, else the hidden size (it has no other for this class), no RoPE
 * scaling, `add_bos_token` false among them. Two of them it hard-codes for
 * this class, where llama.cpp reads a key: the RMS epsilon (1e-5: it reads only
 * ChatGLM's `layernorm_epsilon`) and the RoPE base (10000 × ChatGLM's
 * `rope_ratio`). aprkit writes the config's values instead, so llama.cpp
 * computes what transformers computes; with the converter's values (as the
 * fixture has them) the file is the converter's.
 *
 * llama.cpp's `chatglm` knows no head size of its own (its output projection
 * is hidden × hidden) and no RoPE scaling: such a config is refused for GGUF.
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { activation, SILU } from "../config_fields.ts";
import { GLM_APR, GLM_BLOCK, glmRopeDims, glmUnsupported } from "./glm4.ts";

/** `GlmConfig`'s `rms_norm_eps` default, what transformers computes with when config.json has none. */
const GLM_RMS_EPS = 1.5625e-7;

/** `ChatGLMModel.set_gguf_parameters`. */
function writeKv(w: KvWriter): void {
  const hidden = w.need("hidden_size", "n_embed");
  const heads = w.need("n_head", "num_attention_heads");
  w.u32("context_length", w.num("seq_length") ?? hidden);
  w.u32("embedding_length", hidden);
  w.u32("feed_forward_length", w.num("ffn_hidden_size", "intermediate_size") ?? 4 * hidden);
  w.u32("block_count", w.need("num_hidden_layers", "num_layers"));
  w.u32("attention.head_count", heads);
  w.u32("attention.head_count_kv", w.num("multi_query_group_num", "num_key_value_heads") ?? heads);
  w.f32(
    "attention.layer_norm_rms_epsilon",
    w.num("layernorm_epsilon", "rms_norm_eps") ?? GLM_RMS_EPS,
  );
  w.fileType();
  w.u32("rope.dimension_count", glmRopeDims(w));
  w.put("tokenizer.ggml.add_bos_token", { type: "BOOL", value: false });
  const ratio = w.num("rope_ratio");
  const theta = w.fullRope["rope_theta"];
  w.f32("rope.freq_base", ratio !== undefined ? 10000 * ratio : theta ?? 10000);
}

function unsupported(w: KvWriter): string | undefined {
  const hidden = w.need("hidden_size");
  const heads = w.need("num_attention_heads");
  const headDim = w.num("head_dim");
  if (headDim !== undefined && headDim * heads !== hidden) {
    return `its config.json has head_dim ${headDim} with ${heads} heads of hidden size ${hidden}; ` +
      `llama.cpp's chatglm reads no head size (it projects hidden × hidden)`;
  }
  const type = w.fullRope["rope_type"] ?? "default";
  if (type !== "default") {
    return `its config.json has rope_type ${JSON.stringify(type)}; llama.cpp's converter ` +
      `writes no RoPE scaling for chatglm, which then computes without it`;
  }
  return glmUnsupported(w);
}

/** GLM-4-9B (transformers' port). */
export const GLM: Family = {
  name: "glm",
  apr: GLM_APR,
  source: "llama.cpp conversion/chatglm.py ChatGLMModel; transformers GlmForCausalLM",
  configFields: { assumed: [activation("hidden_act", SILU)], checked: ["head_dim"] },
  hfArchitectures: ["GlmForCausalLM"],
  hfModelTypes: ["glm"],
  ggufArchitecture: "chatglm",
  ggufRopeType: "norm",
  blockNames: GLM_BLOCK,
  permutesQk: false,
  hfRopeInterleaved: true,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv, unsupported },
  // ChatGLMModel.set_vocab: only where the files name none of these kinds.
  specialTokensByName: [
    ["eos", "<|endoftext|>"],
    ["eot", "<|user|>"],
    ["unk", "<|endoftext|>"],
  ],
  preTokenizer: "chatglm-bpe",
};
