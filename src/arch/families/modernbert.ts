// This module is browser compatible.

/**
 * ModernBERT sentence embedders (`ModernBertModel`: modernbert-embed,
 * gte-modernbert) and cross-encoders (`ModernBertForSequenceClassification`),
 * after llama.cpp's `ModernBertModel` (conversion/bert.py, GGUF
 * `modern-bert`): a pre-norm encoder with a fused QKV projection, RoPE with
 * one base for the global layers and another for the sliding-window ones,
 * and a GeGLU feed-forward. APR output keeps Hugging Face's tensors and
 * records the sentence-transformers pooling; GGUF output is refused (see
 * {@linkcode NO_LAYER_NORM_EPS}).
 *
 * @module
 */

import { activation, type ConfigFields, GELU } from "../config_fields.ts";
import type { Family } from "../family.ts";

/**
 * Why aprkit writes no ModernBERT GGUF: the converter writes `norm_eps` as
 * `modern-bert.attention.layer_norm_rms_epsilon`, and llama.cpp's
 * modern-bert loader requires `…attention.layer_norm_epsilon`, so it loads
 * no converter's file (measured: "Failed to load model" in node-llama-cpp
 * 3.22.1, "key not found" in llama-quantize). With that one key added the
 * file embeds as sentence-transformers does (cosine ≥ 0.999999, largest
 * difference 5.6·10⁻⁴ on the 20 sentences of tests/testdata/embeddings),
 * but aprkit writes what the converter writes or nothing.
 */
export const NO_LAYER_NORM_EPS =
  "llama.cpp's modern-bert loader requires attention.layer_norm_epsilon, which its converter " +
  "writes as attention.layer_norm_rms_epsilon (from norm_eps), so llama.cpp loads no " +
  "ModernBERT GGUF its converter makes; convert to APR or SafeTensors instead";

/**
 * ModernBertConfig's fields, as the converter would read them: the window,
 * the global layers' period, both RoPE bases (`rope_parameters`), the
 * activation and the epsilon written; llama.cpp's graph has no biases and a
 * GeGLU feed-forward.
 */
const MODERNBERT_FIELDS: ConfigFields = {
  written: [
    "local_attention",
    "global_attn_every_n_layers",
    "layer_types",
    "norm_eps",
    "hidden_activation",
  ],
  assumed: [
    activation("hidden_activation", GELU, "gelu"),
    { field: "attention_bias", hfDefault: false, llamaCpp: false },
    { field: "mlp_bias", hfDefault: false, llamaCpp: false },
    { field: "norm_bias", hfDefault: false, llamaCpp: false },
  ],
  irrelevant: {
    tie_word_embeddings:
      "an encoder has no language-model head to tie (the masked-LM head is dropped)",
    classifier_pooling: "the classification head's pooling (the `cls` one llama.cpp ranks by)",
    classifier_activation: "the classification head's activation (GELU, as llama.cpp's rank head)",
    classifier_bias: "the classification head's bias (a tensor when present)",
    classifier_dropout: "training only (dropout)",
    attention_dropout: "training only (dropout)",
    embedding_dropout: "training only (dropout)",
    mlp_dropout: "training only (dropout)",
    decoder_bias: "the masked-LM head's bias (the head is dropped)",
    sparse_prediction: "the masked-LM loss (training only)",
    sparse_pred_ignore_index: "the masked-LM loss (training only)",
    deterministic_flash_attn: "which attention kernel training runs, not what it computes",
    initializer_cutoff_factor: "training only (initialisation)",
    cls_token_id: "the vocabulary's special tokens, written from the tokenizer files",
    sep_token_id: "the vocabulary's special tokens, written from the tokenizer files",
  },
};

/** ModernBERT. */
export const MODERNBERT: Family = {
  configFields: MODERNBERT_FIELDS,
  name: "modernbert",
  source: "llama.cpp conversion/bert.py ModernBertModel; transformers ModernBertModel",
  hfArchitectures: ["ModernBertModel", "ModernBertForSequenceClassification"],
  hfModelTypes: ["modernbert"],
  ggufArchitecture: "modern-bert",
  ggufRopeType: "neox",
  hfBlockPrefix: "layers",
  // ModernBertForSequenceClassification: the base model under `model.`, the head beside it.
  hfHeadPrefix: "model.",
  blockNames: [
    ["attn_norm", "attn_norm"],
    ["attn_qkv", "attn.Wqkv"],
    ["attn_output", "attn.Wo"],
    ["ffn_norm", "mlp_norm"],
    ["ffn_up", "mlp.Wi"],
    ["ffn_down", "mlp.Wo"],
  ],
  globalNames: [
    ["token_embd", "embeddings.tok_embeddings"],
    ["token_embd_norm", "embeddings.norm"],
    ["output_norm", "final_norm"],
    ["cls", "head.dense"],
    ["cls.norm", "head.norm"],
    // No pair for `classifier`: the converter names it `cls.output` or `cls` by the labels (as BERT's).
  ],
  permutesQk: false,
  tiedByDefault: true,
  ggufRenamesOnly: false,
  ggufNamesKept: true,
  ggufRefusal: NO_LAYER_NORM_EPS,
};
