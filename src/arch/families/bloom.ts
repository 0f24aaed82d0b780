// This module is browser compatible.

/**
 * BLOOM (`BloomForCausalLM`), after llama.cpp's `BloomModel`
 * (conversion/bloom.py): `transformer.h.N` blocks with LayerNorms with
 * biases, a LayerNorm after the embedding (`token_embd_norm`), ALiBi instead
 * of positions (llama.cpp's bloom hard-codes a maximum bias of 8, BLOOM's
 * slopes), a GELU MLP 4 × hidden, tied embeddings. Its fused
 * `query_key_value` holds each head's q, k and v rows together, which the
 * converter regroups as GPT-NeoX's.
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { qkvPerHeadOrder } from "./gptneox.ts";

/** `BloomModel.set_gguf_parameters`: the context is `seq_length`, else (sic) the width. */
function writeBloomKv(w: KvWriter): void {
  const hidden = w.need("hidden_size", "n_embed");
  const heads = w.need("n_head", "num_attention_heads");
  w.u32("context_length", w.num("seq_length") ?? hidden);
  w.u32("embedding_length", hidden);
  w.cite("hidden_size", "n_embed");
  w.u32("feed_forward_length", 4 * hidden);
  w.u32("block_count", w.need("n_layer", "num_hidden_layers"));
  w.u32("attention.head_count", heads);
  w.u32("attention.head_count_kv", heads);
  w.f32("attention.layer_norm_epsilon", w.need("layer_norm_epsilon"));
  w.fileType();
}

function qkvByPart(name: string, _shape: readonly number[], heads: number): number[] | undefined {
  return /^transformer\.h\.\d+\.self_attention\.query_key_value\.(weight|bias)$/.test(name)
    ? qkvPerHeadOrder(heads)
    : undefined;
}

/** BLOOM, BLOOMZ. */
export const BLOOM: Family = {
  name: "bloom",
  source: "llama.cpp conversion/bloom.py BloomModel; transformers BloomForCausalLM",
  configFields: {
    written: ["n_layer", "n_head", "layer_norm_epsilon"],
    assumed: [
      // Residuals taken after the LayerNorm: no llama.cpp graph does that.
      { field: "apply_residual_connection_post_layernorm", hfDefault: false, llamaCpp: false },
    ],
    irrelevant: {
      slow_but_exact: "merges tensor-parallel slices of the same products (pretraining_tp > 1)",
    },
  },
  hfArchitectures: ["BloomForCausalLM"],
  hfModelTypes: ["bloom"],
  ggufArchitecture: "bloom",
  ggufRopeType: "none",
  hfBlockPrefix: "transformer.h",
  blockNames: [
    ["attn_norm", "input_layernorm"],
    ["attn_qkv", "self_attention.query_key_value"],
    ["attn_output", "self_attention.dense"],
    ["ffn_norm", "post_attention_layernorm"],
    ["ffn_up", "mlp.dense_h_to_4h"],
    ["ffn_down", "mlp.dense_4h_to_h"],
  ],
  globalNames: [
    ["token_embd", "transformer.word_embeddings"],
    ["token_embd_norm", "transformer.word_embeddings_layernorm"],
    ["output_norm", "transformer.ln_f"],
  ],
  permutesQk: false,
  noRope: true,
  tiedByDefault: true,
  ggufRenamesOnly: false,
  gguf: { writeKv: writeBloomKv, rowBlocks: qkvByPart },
};
