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

import { encodeBase64 } from "../runtime/_base64.ts";
import type { SentencePieceModel } from "./sentencepiece_model.ts";
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

/** SentencePiece's piece types the converter keeps (`IsUnknown`, `IsControl`, `IsUnused`, `IsByte`). */
const KEPT_PIECE_TYPES: ReadonlySet<number> = new Set([
  TokenType.UNKNOWN,
  TokenType.CONTROL,
  TokenType.UNUSED,
  TokenType.BYTE,
]);

/** XLM-R's first four ids in transformers' order, which the converter puts before the pieces. */
const FAIRSEQ_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"];

/**
 * The `tokenizer.*` APR keys of a `t5` vocabulary from XLM-R's
 * `sentencepiece.bpe.model`, as the converter builds it when the folder has
 * one: the pieces (user-defined ones typed NORMAL, as it types them), padded
 * with `[PAD<id>]` to `vocab_size`, then "realigned" to transformers' ids:
 * `<s> <pad> </s> <unk>`, the pieces from id 3 on, and the padding without
 * its last entry (so the last id, transformers' `<mask>`, is a `[PAD<id>]`
 * placeholder there). The vocabulary itself is among the keys.
 *
 * @param model The parsed `sentencepiece.bpe.model`.
 * @param vocabSize `config.json`'s `vocab_size`.
 * @returns The keys, or a one-sentence reason the converter would fail.
 */
export function t5VocabularyFromSentencePiece(
  model: SentencePieceModel,
  vocabSize: number | undefined,
): Record<string, unknown> | string {
  if (model.modelType !== 1) return "its sentencepiece.bpe.model is not a Unigram model";
  const n = Math.max(vocabSize ?? 0, model.pieces.length);
  if (n < FAIRSEQ_SPECIALS.length) return "its sentencepiece.bpe.model has fewer than 4 pieces";
  const tokens: string[] = [];
  const scores: number[] = [];
  const types: number[] = [];
  for (let id = 0; id < n; id++) {
    const p = model.pieces[id];
    tokens.push(p?.piece ?? `[PAD${id}]`);
    scores.push(p?.score ?? PAD_SCORE);
    types.push(
      p === undefined ? TokenType.UNUSED : KEPT_PIECE_TYPES.has(p.type) ? p.type : TokenType.NORMAL,
    );
  }
  const realign = <T>(head: T[], all: T[]) => [...head, ...all.slice(3, -1)];
  const charsmap = model.precompiledCharsmap;
  return {
    "tokenizer.ggml_model": "t5",
    "tokenizer.pre": "default",
    "tokenizer.pre_type": "default",
    "tokenizer.vocabulary": realign(FAIRSEQ_SPECIALS, tokens),
    "tokenizer.scores": realign([0, 0, 0, 0], scores),
    "tokenizer.token_type": realign(
      [TokenType.CONTROL, TokenType.CONTROL, TokenType.CONTROL, TokenType.UNKNOWN],
      types,
    ),
    "tokenizer.add_space_prefix": model.addDummyPrefix,
    "tokenizer.remove_extra_whitespaces": model.removeExtraWhitespaces,
    ...(charsmap.length === 0 ? {} : { "tokenizer.precompiled_charsmap": encodeBase64(charsmap) }),
  };
}
