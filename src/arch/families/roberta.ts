// This module is browser compatible.

/**
 * RoBERTa sentence embedders and cross-encoders (`RobertaModel`:
 * stsb-roberta, all-distilroberta; `RobertaForSequenceClassification`),
 * after llama.cpp's `RobertaModel` (conversion/bert.py): XLM-RoBERTa's
 * tensors and keys (GGUF `bert`, a `roberta.` prefix dropped, the position
 * embedding's first `pad_token_id + 1` rows cut, the classification head's
 * `dense` and `out_proj` as `cls` and `cls.output`) with RoBERTa's byte-level
 * BPE as llama.cpp's `gpt2` vocabulary, pre-tokenizer `roberta-bpe` (GPT-2's
 * regex; llama.cpp adds the separator), and the token-type count written
 * after it.
 *
 * `CamembertModel`, which the converter reads as BERT, is APR only (see
 * {@linkcode CAMEMBERT_REFUSAL}).
 *
 * @module
 */

import type { Family } from "../family.ts";
import { XLM_ROBERTA } from "./xlm_roberta.ts";

/** RoBERTa. */
export const ROBERTA: Family = {
  ...XLM_ROBERTA,
  name: "roberta",
  source: "llama.cpp conversion/bert.py RobertaModel; transformers RobertaModel",
  hfArchitectures: ["RobertaModel", "RobertaForSequenceClassification"],
  hfModelTypes: ["roberta"],
  t5Vocabulary: false,
  preTokenizer: "roberta-bpe",
  bpeTokenTypeCount: true,
  // A `bert` GGUF with a byte-level BPE vocabulary; its GGUF names are kept, as XLM-RoBERTa's.
  ggufClaims: (_, metadata) => metadata["tokenizer.model_type"] === "gpt2",
};

/**
 * Why aprkit writes no Camembert GGUF: llama.cpp's converter registers
 * `CamembertModel` under its `BertModel` class, which writes the
 * SentencePiece pieces in WordPiece's phantom-space form (`▁le` → `▁▁le`),
 * so llama.cpp's bert tokenizer matches almost none of them, and keeps the
 * position rows RoBERTa skips, so every position is off by
 * `pad_token_id + 1` (fixture `camembert-embed`: llama.cpp's ids differ from
 * transformers' on all 20 sentences, cosine down to 0.83).
 */
export const CAMEMBERT_REFUSAL =
  "llama.cpp's converter reads CamembertModel as BERT: it writes its SentencePiece pieces in " +
  "WordPiece's form, which llama.cpp's bert tokenizer does not match, and keeps the position rows " +
  "RoBERTa skips, so llama.cpp embeds no Camembert GGUF as transformers does; convert to APR or " +
  "SafeTensors instead";

// RoBERTa's tensors and fields, without what only its GGUF needs.
const {
  gguf: _gguf,
  preTokenizer: _pre,
  bpeTokenTypeCount: _count,
  ggufClaims: _claims,
  ...ROBERTA_TENSORS
} = ROBERTA;

/** Camembert (`CamembertModel`: sentence-camembert), APR only. */
export const CAMEMBERT: Family = {
  ...ROBERTA_TENSORS,
  name: "camembert",
  source: "llama.cpp conversion/bert.py BertModel (CamembertModel); transformers CamembertModel",
  hfArchitectures: ["CamembertModel"],
  hfModelTypes: ["camembert"],
  ggufRefusal: CAMEMBERT_REFUSAL,
};
