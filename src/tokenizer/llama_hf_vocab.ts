// This module is browser compatible.

/**
 * A byte-fallback BPE `tokenizer.json` as gguf-py's `LlamaHfVocab` reads
 * it, for a converter class that writes it under a tokenizer model of its
 * own with its merges (Gemma 4's `gemma4`, which llama.cpp runs as BPE over
 * the merges): every score −1000, the base vocabulary's `<0xAB>` pieces
 * BYTE and transformers' special tokens CONTROL, the other base tokens
 * NORMAL; the added tokens after it CONTROL when transformers counts them
 * special, else USER_DEFINED; and the tokens the class names USER_DEFINED
 * whatever they are.
 *
 * @module
 */

import type { ModelMetadata } from "../tensor.ts";
import { TokenType } from "./token_types.ts";

/** `LlamaHfVocab.get_token_score`'s constant. */
const SCORE = -1000;

/** transformers' named special-token attributes (`SPECIAL_TOKENS_ATTRIBUTES`). */
const NAMED = [
  "bos_token",
  "eos_token",
  "unk_token",
  "sep_token",
  "pad_token",
  "cls_token",
  "mask_token",
] as const;

function text(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  const content = (value as { content?: unknown } | null)?.["content"];
  return typeof content === "string" ? content : undefined;
}

/**
 * transformers' `all_special_tokens` from `tokenizer_config.json`: the named
 * special tokens, then `extra_special_tokens` (a list, or a map's values)
 * and `additional_special_tokens`. Tokens `tokenizer.json` marks special
 * are not among them unless named so.
 *
 * @param tokenizerConfig `tokenizer_config.json`.
 * @returns The tokens' texts.
 */
export function transformersSpecialTokens(
  tokenizerConfig: Readonly<Record<string, unknown>>,
): string[] {
  const out: string[] = [];
  for (const key of NAMED) {
    const t = text(tokenizerConfig[key]);
    if (t !== undefined) out.push(t);
  }
  for (const key of ["extra_special_tokens", "additional_special_tokens"]) {
    const extra = tokenizerConfig[key];
    const values = Array.isArray(extra)
      ? extra
      : extra !== null && typeof extra === "object"
      ? Object.values(extra)
      : [];
    for (const v of values) {
      const t = text(v);
      if (t !== undefined) out.push(t);
    }
  }
  return out;
}

/** What {@linkcode llamaHfVocabularyFields} reads. */
export interface LlamaHfVocabularyInput {
  /** The tokenizer model written (`gemma4`). */
  readonly model: string;
  /** Token text by id. */
  readonly tokens: readonly string[];
  /** How many tokens `tokenizer.json`'s model holds (transformers' `vocab_size`); later ids are added ones. */
  readonly baseSize: number;
  /** transformers' special tokens ({@linkcode transformersSpecialTokens}). */
  readonly specialTokens: readonly string[];
  /** Tokens the converter class types USER_DEFINED whatever they are. */
  readonly userDefined: readonly string[];
}

/**
 * The `tokenizer.*` APR keys of the vocabulary (see the module doc).
 *
 * @example Usage
 * ```ts
 * import { llamaHfVocabularyFields } from "./llama_hf_vocab.ts";
 * const m = llamaHfVocabularyFields({
 *   model: "gemma4",
 *   tokens: ["<pad>", "<0x0A>", "▁a", "<mask>", "<|turn>", "<|channel>"],
 *   baseSize: 3,
 *   specialTokens: ["<pad>", "<mask>"],
 *   userDefined: ["<|channel>"],
 * });
 * console.assert((m["tokenizer.token_type"] as number[]).join() === "3,6,1,3,4,4");
 * ```
 *
 * @param input The vocabulary.
 * @returns `tokenizer.ggml_model`, `tokenizer.scores`, `tokenizer.token_type`.
 */
export function llamaHfVocabularyFields(input: LlamaHfVocabularyInput): ModelMetadata {
  const special = new Set(input.specialTokens);
  const visible = new Set(input.userDefined);
  const types = input.tokens.map((token, id) => {
    if (visible.has(token)) return TokenType.USER_DEFINED;
    if (id >= input.baseSize) {
      return special.has(token) ? TokenType.CONTROL : TokenType.USER_DEFINED;
    }
    if (/^<0x[0-9A-Fa-f]{2}>$/.test(token)) return TokenType.BYTE;
    return special.has(token) ? TokenType.CONTROL : TokenType.NORMAL;
  });
  return {
    "tokenizer.ggml_model": input.model,
    "tokenizer.scores": new Array<number>(input.tokens.length).fill(SCORE),
    "tokenizer.token_type": types,
  };
}
