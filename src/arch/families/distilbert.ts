// This module is browser compatible.

/**
 * DistilBERT sentence embedders (`DistilBertModel`, `DistilBertForMaskedLM`:
 * msmarco-distilbert, distiluse's encoder), after llama.cpp's
 * `DistilBertModel` (conversion/bert.py): BERT's graph and keys (GGUF
 * `bert`) under DistilBERT's own tensor names, a `distilbert.` prefix and
 * the masked-LM head (`vocab_transform`, `vocab_layer_norm`,
 * `vocab_projector`) dropped, no token-type embeddings, and the LayerNorm
 * epsilon transformers hard-codes (1e-12) written first, as the converter
 * writes it before the common keys.
 *
 * `DistilBertForSequenceClassification` is APR only (see
 * {@linkcode DISTILBERT_PAIR_REFUSAL}).
 *
 * @module
 */

import { activation, type ConfigFields, GELU } from "../config_fields.ts";
import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { BERT, BERT_FIELDS, writeBertKv } from "./bert.ts";

/** `nn.LayerNorm(eps=1e-12)` in every DistilBERT module; its config has no field for it. */
const DISTILBERT_LAYER_NORM_EPS = 1e-12;

/**
 * Why aprkit writes no `DistilBertForSequenceClassification` GGUF: the
 * converter writes `pre_classifier` as `cls` and `classifier` as
 * `cls.output`, and llama.cpp's rank pooling applies `tanh` after `cls`
 * where DistilBERT applies ReLU; node-llama-cpp's input also repeats the
 * separator (`[CLS] q [SEP] [SEP] d [SEP]`), which DistilBERT's pair has once.
 */
export const DISTILBERT_PAIR_REFUSAL =
  "llama.cpp's ranking head applies tanh after pre_classifier where " +
  "DistilBertForSequenceClassification applies ReLU, and it ranks [CLS] q [SEP] [SEP] d [SEP], " +
  "so no GGUF of it scores as transformers does; convert to APR or SafeTensors instead";

/** `DistilBertForSequenceClassification`: refused (see {@linkcode DISTILBERT_PAIR_REFUSAL}). */
function unsupported(w: KvWriter): string | undefined {
  const classes = w.hparams["architectures"];
  return Array.isArray(classes) && classes[0] === "DistilBertForSequenceClassification"
    ? DISTILBERT_PAIR_REFUSAL
    : undefined;
}

/** `DistilBertModel.set_gguf_parameters`: the fixed epsilon, then BERT's keys. */
function writeDistilBertKv(w: KvWriter): void {
  w.f32("attention.layer_norm_epsilon", DISTILBERT_LAYER_NORM_EPS);
  writeBertKv(w);
}

/** The converter's reading of a name: `distilbert.` dropped, then BERT's. */
function hfName(name: string): string {
  return BERT.gguf!.hfName!(name.replace(/^distilbert\./, ""));
}

/**
 * DistilBertConfig's fields: its sizes under its own names, which
 * `TextModel.set_gguf_parameters` finds as the converter's `find_hparam`
 * does; GELU; nothing else llama.cpp reads.
 */
const DISTILBERT_FIELDS: ConfigFields = {
  written: ["dim", "hidden_dim", "n_heads", "n_layers"],
  assumed: [activation("activation", GELU, "gelu")],
  irrelevant: {
    sinusoidal_pos_embds: "the sinusoidal table is made at initialisation and saved as the " +
      "position embedding, which is written as it is",
    tie_word_embeddings: BERT_FIELDS.irrelevant!["tie_word_embeddings"]!,
    dropout: "training only (dropout)",
    attention_dropout: "training only (dropout)",
    qa_dropout: "training only (dropout)",
    seq_classif_dropout: "training only (dropout)",
  },
};

/** DistilBERT. */
export const DISTILBERT: Family = {
  ...BERT,
  configFields: DISTILBERT_FIELDS,
  name: "distilbert",
  source: "llama.cpp conversion/bert.py DistilBertModel; transformers DistilBertModel",
  hfArchitectures: [
    "DistilBertModel",
    "DistilBertForMaskedLM",
    "DistilBertForSequenceClassification",
  ],
  hfModelTypes: ["distilbert"],
  hfBlockPrefix: "transformer.layer",
  blockNames: [
    ["attn_q", "attention.q_lin"],
    ["attn_k", "attention.k_lin"],
    ["attn_v", "attention.v_lin"],
    ["attn_output", "attention.out_lin"],
    ["attn_output_norm", "sa_layer_norm"],
    ["ffn_up", "ffn.lin1"],
    ["ffn_down", "ffn.lin2"],
    ["layer_output_norm", "output_layer_norm"],
  ],
  globalNames: [
    ["token_embd", "embeddings.word_embeddings"],
    ["position_embd", "embeddings.position_embeddings"],
    ["token_embd_norm", "embeddings.LayerNorm"],
  ],
  // A `bert` GGUF with a WordPiece vocabulary and no token-type embeddings, which every BertModel
  // has (asked of GGUF names only: an APR file read back from it has Hugging Face's).
  ggufClaims: (names, metadata) =>
    metadata["tokenizer.model_type"] === "bert" && names.has("token_embd.weight") &&
    !names.has("token_types.weight"),
  gguf: {
    ...BERT.gguf!,
    writeKv: writeDistilBertKv,
    unsupported,
    hfName,
    drops: (name, w) => /^vocab_/.test(hfName(name)) || BERT.gguf!.drops!(hfName(name), w),
  },
};
