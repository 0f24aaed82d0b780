// This module is browser compatible.

/**
 * BERT sentence embedders (`BertModel`, `BertForMaskedLM`: all-MiniLM,
 * bge, e5) and cross-encoders (`BertForSequenceClassification`:
 * ms-marco-MiniLM), after llama.cpp's `BertModel` (conversion/bert.py): an
 * encoder with non-causal attention, absolute position and token-type
 * embeddings, LayerNorms with biases after attention and after the
 * feed-forward, and the sentence-transformers pooling as
 * `{arch}.pooling_type`. The pooler and the masked-LM head are dropped, as
 * the converter drops them; a classifier's labels are written (for
 * XLM-RoBERTa's and RoBERTa's cross-encoders, whose head their families name
 * `cls` and `cls.output`). A `BertForSequenceClassification` GGUF is refused
 * (see {@linkcode BERT_PAIR_REFUSAL}), so its bare `classifier` is never
 * written.
 *
 * @module
 */

import { activation, type ConfigFields, GELU } from "../config_fields.ts";
import type { Family } from "../family.ts";
import { type KvWriter, record } from "../kv.ts";
import { writePoolingType } from "../pooling.ts";
import { writeTextModelKv } from "../text_model.ts";

/**
 * A classifier's labels as the converter keeps them (`BertModel.__init__`):
 * `id2label` by id, none when it is absent or AutoConfig's two dummy labels
 * (`LABEL_0`, …).
 */
function classifierLabels(w: KvWriter): string[] | undefined {
  const labels = record(w.hparams["id2label"]);
  if (labels === undefined) return undefined;
  const ids = Object.keys(labels).sort((a, b) => Number(a) - Number(b));
  if (ids.length === 0 || (ids.length === 2 && labels["0"] === "LABEL_0")) return undefined;
  const values = ids.map((id) => labels[id]);
  if (!values.every((v): v is string => typeof v === "string")) {
    throw new RangeError("config.json: id2label is not a map of ids to strings");
  }
  return values;
}

/** `BertModel.set_gguf_parameters`: the common keys, non-causal attention, the pooling, the labels. */
export function writeBertKv(w: KvWriter): void {
  writeTextModelKv(w);
  w.set("attention.causal", "BOOL", false);
  writePoolingType(w);
  const labels = classifierLabels(w);
  if (labels !== undefined) w.setArray("classifier.output_labels", "STRING", labels);
}

/**
 * Why aprkit writes no `BertForSequenceClassification` GGUF. llama.cpp's
 * rank pooling (`build_pooling`, src/llama-graph.cpp) computes
 * `cls_out(tanh(cls · h[CLS] + b))`: BERT's pooler then its classifier, if
 * the pooler (`bert.pooler.dense`, which the converter drops, so its file
 * scores `sigmoid(classifier(h[CLS]))`, measured up to 0.49 from
 * transformers on `bert-reranker`) were written as `cls`. Written so, it
 * equals transformers on llama.cpp's own input within 2·10⁻⁴, but that input
 * is not BERT's pair: node-llama-cpp ranks `[CLS] q [SEP] [SEP] d [SEP]` and
 * llama.cpp's bert graph adds token type 0 to every token, where
 * transformers encodes `[CLS] q [SEP] d [SEP]` with the document as type 1
 * (measured up to 0.10 off after the sigmoid). No tensor makes the document
 * tokens type 1, so neither file gives transformers' scores.
 */
export const BERT_PAIR_REFUSAL =
  "llama.cpp ranks a pair as [CLS] q [SEP] [SEP] d [SEP] with every token of type 0, where " +
  "BertForSequenceClassification reads [CLS] q [SEP] d [SEP] with the document as type 1 (and " +
  "through the pooler, which the converter drops), so no GGUF of it scores as transformers " +
  "does; convert to APR or SafeTensors instead";

/**
 * Why a BERT cross-encoder's GGUF (the converter's: `cls.output`) is not
 * read back: its checkpoint's pooler, which the classifier reads, is not in
 * it.
 */
const CROSS_ENCODER_READ_BACK =
  "aprkit does not read a BERT cross-encoder GGUF back into Hugging Face's layout (llama.cpp's " +
  "converter dropped the pooler its classifier reads); --keep-names keeps its GGUF tensors";

/** `BertForSequenceClassification`: refused (see {@linkcode BERT_PAIR_REFUSAL}). */
function unsupported(w: KvWriter): string | undefined {
  const classes = w.hparams["architectures"];
  return Array.isArray(classes) && classes[0] === "BertForSequenceClassification"
    ? BERT_PAIR_REFUSAL
    : undefined;
}

/** The pooler, `position_ids` and the masked-LM and next-sentence heads: not used for embeddings. */
const DROPPED =
  /^(embeddings\.position_ids|pooler\.dense\.(weight|bias)|cls\.(predictions|seq_relationship)\..*)$/;

/**
 * BertConfig's fields: the token-type count and LayerNorm epsilon are
 * written; llama.cpp's bert graph is an encoder with GELU (the tanh form,
 * within 2·10⁻⁴ of BERT's erf `gelu`), no decoder or cross-attention.
 */
export const BERT_FIELDS: ConfigFields = {
  written: ["type_vocab_size", "layer_norm_eps"],
  assumed: [
    activation("hidden_act", GELU, "gelu"),
    { field: "is_decoder", hfDefault: false, llamaCpp: false },
    { field: "add_cross_attention", hfDefault: false, llamaCpp: false },
  ],
  irrelevant: {
    tie_word_embeddings:
      "an encoder has no language-model head to tie (the masked-LM head is dropped)",
    classifier_dropout: "training only (dropout)",
    attention_probs_dropout_prob: "training only (dropout)",
    hidden_dropout_prob: "training only (dropout)",
  },
};

/** BERT. */
export const BERT: Family = {
  configFields: BERT_FIELDS,
  name: "bert",
  source: "llama.cpp conversion/bert.py BertModel; transformers BertModel",
  hfArchitectures: ["BertModel", "BertForMaskedLM", "BertForSequenceClassification"],
  hfModelTypes: ["bert"],
  ggufArchitecture: "bert",
  // llama_model_rope_type() lists BERT as NEOX, though its graph rotates nothing.
  ggufRopeType: "neox",
  hfBlockPrefix: "encoder.layer",
  blockNames: [
    ["attn_q", "attention.self.query"],
    ["attn_k", "attention.self.key"],
    ["attn_v", "attention.self.value"],
    ["attn_output", "attention.output.dense"],
    ["attn_output_norm", "attention.output.LayerNorm"],
    ["ffn_up", "intermediate.dense"],
    ["ffn_down", "output.dense"],
    ["layer_output_norm", "output.LayerNorm"],
  ],
  globalNames: [
    ["token_embd", "embeddings.word_embeddings"],
    ["token_types", "embeddings.token_type_embeddings"],
    ["position_embd", "embeddings.position_embeddings"],
    ["token_embd_norm", "embeddings.LayerNorm"],
  ],
  permutesQk: false,
  tiedByDefault: true,
  ggufRenamesOnly: false,
  ggufReadBackRefusalOf: (names) =>
    names.has("cls.output.weight") || names.has("cls.weight") ? CROSS_ENCODER_READ_BACK : undefined,
  gguf: {
    writeKv: writeBertKv,
    unsupported,
    // `BertModel.filter_tensors`: a `bert.` prefix (BertForMaskedLM) and the old `gamma`/`beta`.
    hfName: (name) =>
      name.replace(/^bert\./, "").replace(/\.gamma$/, ".weight").replace(/\.beta$/, ".bias"),
    drops: (name) => DROPPED.test(name.replace(/^bert\./, "")),
  },
};
