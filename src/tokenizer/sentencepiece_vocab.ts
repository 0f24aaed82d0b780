// This module is browser compatible.

/**
 * The vocabulary llama.cpp's converter builds from a SentencePiece
 * `tokenizer.model` (`_create_vocab_sentencepiece`): `vocab_size` slots
 * (config.json's, else the model's) pre-filled with `[PAD<id>]`, score
 * −10000, UNUSED; each piece's text and score, typed UNKNOWN, CONTROL,
 * UNUSED, BYTE or USER_DEFINED as SentencePiece marks it, else NORMAL; then
 * `added_tokens.json`'s `{text: id}` over them (USER_DEFINED, score −1000,
 * ids past the vocabulary skipped); then
 * `tokenizer_config.json`'s `added_tokens_decoder` over them:
 * CONTROL when special or looking special, else USER_DEFINED with "▁"
 * written as a space, score −1000.
 *
 * One deliberate difference: the converter types SentencePiece's
 * user-defined pieces NORMAL (it asks `IsUnknown`, `IsControl`, `IsUnused`,
 * `IsByte`, never `IsUserDefined`), so llama.cpp splits "<tool>" that
 * sentencepiece keeps whole; aprkit keeps them USER_DEFINED, and llama.cpp
 * then tokenizes them as sentencepiece does (tests/tokenizer/sentencepiece_model_test.ts).
 *
 * @module
 */

import type { SentencePieceModel } from "./sentencepiece_model.ts";
import { looksSpecial, TokenType } from "./token_types.ts";

/** The converter's vocabulary of a SentencePiece model. */
export interface SentencePieceVocab {
  /** Token text by id. */
  tokens: string[];
  /** Scores by id. */
  scores: number[];
  /** gguf-py token types by id. */
  types: number[];
}

/**
 * Build the vocabulary (see the module doc).
 *
 * @example Usage
 * ```ts
 * import { sentencePieceVocab } from "./sentencepiece_vocab.ts";
 * const v = sentencePieceVocab(
 *   { pieces: [{ piece: "<unk>", score: 0, type: 2 }, { piece: "▁a", score: -1, type: 1 }],
 *     addDummyPrefix: true, removeExtraWhitespaces: false },
 *   3,
 *   {},
 * );
 * console.assert(v.tokens.join() === "<unk>,▁a,[PAD2]" && v.types.join() === "2,1,5");
 * ```
 *
 * @param model The parsed `tokenizer.model`.
 * @param vocabSize config.json's `vocab_size`, or undefined for the model's piece count.
 * @param tokenizerConfig The parsed `tokenizer_config.json` (for `added_tokens_decoder`).
 * @param options `verbatimAddedTokens`: Phi-3's builder instead of the
 * generic one (added tokens written as they are, typed by their `special`
 * flag alone, then `tokenizer.json`'s `added_tokens` over them);
 * `addedTokensJson`: the parsed `added_tokens.json`.
 * @returns Tokens, scores and types.
 */
export function sentencePieceVocab(
  model: SentencePieceModel,
  vocabSize: number | undefined,
  tokenizerConfig: Record<string, unknown>,
  options: {
    verbatimAddedTokens?: readonly unknown[];
    addedTokensJson?: Readonly<Record<string, unknown>>;
  } = {},
): SentencePieceVocab {
  const size = vocabSize ?? model.pieces.length;
  const tokens = Array.from({ length: size }, (_, i) => `[PAD${i}]`);
  const scores = new Array<number>(size).fill(-10000);
  const types = new Array<number>(size).fill(TokenType.UNUSED);
  for (const [id, p] of model.pieces.entries()) {
    if (id >= size) break;
    tokens[id] = p.piece;
    scores[id] = p.score;
    types[id] = p.type >= 2 && p.type <= 6 ? p.type : TokenType.NORMAL;
  }
  for (const [text, id] of Object.entries(options.addedTokensJson ?? {})) {
    if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 0 || id >= size) continue;
    tokens[id] = text;
    scores[id] = -1000;
    types[id] = TokenType.USER_DEFINED;
  }
  const decoder = tokenizerConfig["added_tokens_decoder"];
  if (decoder !== null && typeof decoder === "object" && !Array.isArray(decoder)) {
    for (const [key, entry] of Object.entries(decoder as Record<string, unknown>)) {
      const id = Number(key);
      const e = entry as { content?: unknown; special?: unknown } | null;
      if (!Number.isSafeInteger(id) || id < 0 || id >= size || typeof e?.content !== "string") {
        continue;
      }
      if (options.verbatimAddedTokens !== undefined) {
        setVerbatim(id, e.content, e.special === true);
        continue;
      }
      const special = e.special === true || looksSpecial(e.content);
      types[id] = special ? TokenType.CONTROL : TokenType.USER_DEFINED;
      tokens[id] = special ? e.content : e.content.replaceAll("▁", " ");
      scores[id] = -1000;
    }
  }
  for (const entry of options.verbatimAddedTokens ?? []) {
    const e = entry as { id?: unknown; content?: unknown; special?: unknown } | null;
    const id = e?.id;
    if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 0 || id >= size) continue;
    if (typeof e?.content !== "string") continue;
    setVerbatim(id, e.content, e.special === true);
  }
  return { tokens, scores, types };

  function setVerbatim(id: number, content: string, special: boolean): void {
    tokens[id] = content;
    scores[id] = -1000;
    types[id] = special ? TokenType.CONTROL : TokenType.USER_DEFINED;
  }
}
