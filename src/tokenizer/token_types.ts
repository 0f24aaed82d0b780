// This module is browser compatible.

/**
 * Token types as llama.cpp's converter assigns them (gguf-py's `TokenType`):
 * NORMAL 1, UNKNOWN 2, CONTROL 3, USER_DEFINED 4, UNUSED 5, BYTE 6.
 *
 * - An added token is CONTROL when `tokenizer.json` marks it special or it
 *   looks special (`does_token_look_special`: `<|…|>`, the full-width
 *   `<｜…｜>` of DeepSeek, Gemma's `<unusedN>`, `<pad>`, `<mask>`…), else
 *   USER_DEFINED.
 * - In a SentencePiece-style (`llama`) vocabulary, `<0xAB>` pieces are BYTE
 *   and the special tokens' ids CONTROL (`LlamaHfVocab.get_token_type`).
 * - Ids no token claims are UNUSED (`[PAD<id>]`).
 *
 * @module
 */

/** gguf-py's `TokenType` values. */
export const TokenType = {
  NORMAL: 1,
  UNKNOWN: 2,
  CONTROL: 3,
  USER_DEFINED: 4,
  UNUSED: 5,
  BYTE: 6,
} as const;

const LOOKS_SPECIAL = new Set(["<pad>", "<mask>", "<2mass>", "[@BOS@]"]);

/**
 * The converter's `does_token_look_special`: added tokens that some models
 * forget to mark special but llama.cpp must treat as control tokens.
 *
 * @example Usage
 * ```ts
 * import { looksSpecial } from "./token_types.ts";
 * console.assert(looksSpecial("<｜User｜>") && looksSpecial("<|im_start|>") && !looksSpecial("<tool_call>"));
 * ```
 *
 * @param token The token text.
 * @returns Whether the converter types it CONTROL.
 */
export function looksSpecial(token: string): boolean {
  return LOOKS_SPECIAL.has(token) ||
    (token.startsWith("<|") && token.endsWith("|>")) ||
    (token.startsWith("<｜") && token.endsWith("｜>")) ||
    (token.startsWith("<unused") && token.endsWith(">"));
}

/** What {@linkcode tokenTypes} needs to know about the vocabulary. */
export interface TokenTypeInput {
  /** Token text by id (`[PAD<id>]` for ids no token claims). */
  tokens: readonly string[];
  /** 1 for each id some token claims (base vocabulary or added tokens), one byte per id. */
  claimed: Uint8Array;
  /** Added tokens by id, with their `special` flag. */
  added: ReadonlyMap<number, { special: boolean }>;
  /** The special tokens' ids (bos, eos, unk… as `SpecialVocab` finds them). */
  specialIds: ReadonlySet<number>;
  /**
   * `"llama"` for SentencePiece-style vocabularies, `"gpt2"` for byte-level
   * BPE, `"bert"` for WordPiece (typed as byte-level BPE is: `get_vocab_base`).
   */
  ggmlModel: "gpt2" | "llama" | "bert";
}

/**
 * The type of every token, as llama.cpp's converter assigns them (see the module doc).
 *
 * @example Usage
 * ```ts
 * import { tokenTypes } from "./token_types.ts";
 * const types = tokenTypes({
 *   tokens: ["<unk>", "<0x0A>", "▁a", "[PAD3]"],
 *   claimed: new Uint8Array([1, 1, 1, 0]),
 *   added: new Map([[0, { special: true }]]),
 *   specialIds: new Set([0]),
 *   ggmlModel: "llama",
 * });
 * console.assert(types.join() === "3,6,1,5");
 * ```
 *
 * @param input The vocabulary.
 * @returns One type per id.
 */
export function tokenTypes(input: TokenTypeInput): number[] {
  return input.tokens.map((token, id) => {
    if (input.claimed[id] !== 1) return TokenType.UNUSED;
    const added = input.added.get(id);
    if (added !== undefined) {
      return added.special || looksSpecial(token) ? TokenType.CONTROL : TokenType.USER_DEFINED;
    }
    if (input.ggmlModel === "llama") {
      if (/^<0x[0-9A-Fa-f]{2}>$/.test(token)) return TokenType.BYTE;
      if (input.specialIds.has(id)) return TokenType.CONTROL;
    }
    return TokenType.NORMAL;
  });
}
