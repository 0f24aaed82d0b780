// This module is browser compatible.

/**
 * A SentencePiece Unigram `tokenizer.json` (XLM-RoBERTa's) as llama.cpp's
 * converter writes it for its XLM-R class (`_xlmroberta_set_vocab`,
 * conversion/bert.py, from `tokenizer.json` when the folder has no
 * `sentencepiece.bpe.model`): ggml model `t5` (llama.cpp's Unigram, UGM),
 * pre-tokenizer `default`, the normaliser's precompiled charsmap, the
 * vocabulary padded to `vocab_size` with `[PAD<id>]` tokens.
 *
 * @module
 */

import { TokenType } from "./token_types.ts";

/** The score the converter gives ids past the tokenizer's vocabulary. */
const PAD_SCORE = -10000;

/** What the converter reads besides the vocabulary. */
export interface T5VocabularyInput {
  /** The parsed `tokenizer.json`. */
  tokenizer: Readonly<Record<string, unknown>>;
  /** The parsed `tokenizer_config.json` (`{}` when absent). */
  tokenizerConfig: Readonly<Record<string, unknown>>;
  /** The vocabulary by id as APR holds it (`[PAD<id>]` past the tokenizer's). */
  tokens: readonly string[];
  /** Ids of the added tokens. */
  added: ReadonlySet<number>;
  /** The special tokens' ids (`all_special_ids`). */
  specialIds: ReadonlySet<number>;
  /** The unknown token's id. */
  unkId: number | undefined;
}

/**
 * The `tokenizer.*` APR keys of a `t5` vocabulary, or why there is none.
 *
 * @param input The tokenizer's files and vocabulary.
 * @returns The keys, or a one-sentence reason the converter would fail.
 */
export function t5VocabularyFields(input: T5VocabularyInput): Record<string, unknown> | string {
  const model = input.tokenizer["model"] as Record<string, unknown> | undefined;
  const vocab = model?.["vocab"];
  if (model?.["type"] !== "Unigram" || !Array.isArray(vocab)) {
    return "its tokenizer.json is not a SentencePiece Unigram model";
  }
  // The converter reads `normalizer.precompiled_charsmap` and fails on any other normaliser.
  const normalizer = input.tokenizer["normalizer"] as Record<string, unknown> | null | undefined;
  const charsmap = normalizer?.["precompiled_charsmap"];
  if (normalizer?.["type"] !== "Precompiled" || typeof charsmap !== "string") {
    return "its tokenizer.json's normaliser is not one Precompiled charsmap, which llama.cpp's " +
      "converter reads for an XLM-RoBERTa vocabulary";
  }
  const scores: number[] = [];
  const types: number[] = [];
  input.tokens.forEach((_, id) => {
    const entry = vocab[id];
    if (!Array.isArray(entry)) {
      scores.push(PAD_SCORE);
      types.push(TokenType.UNUSED);
      return;
    }
    scores.push(typeof entry[1] === "number" ? entry[1] : 0);
    types.push(
      id === input.unkId
        ? TokenType.UNKNOWN
        : input.specialIds.has(id)
        ? TokenType.CONTROL
        : input.added.has(id)
        ? TokenType.USER_DEFINED
        : TokenType.NORMAL,
    );
  });
  const flag = (key: string, otherwise: boolean): boolean => {
    const v = input.tokenizerConfig[key];
    return typeof v === "boolean" ? v : otherwise;
  };
  return {
    "tokenizer.ggml_model": "t5",
    "tokenizer.pre": "default",
    "tokenizer.pre_type": "default",
    "tokenizer.scores": scores,
    "tokenizer.token_type": types,
    // XLMRobertaTokenizer's attributes, with transformers 5's defaults.
    "tokenizer.add_space_prefix": flag("add_prefix_space", true),
    "tokenizer.remove_extra_whitespaces": flag("clean_up_tokenization_spaces", false),
    ...(charsmap === "" ? {} : { "tokenizer.precompiled_charsmap": charsmap }),
  };
}
