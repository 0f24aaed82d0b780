// This module is browser compatible.

/**
 * A WordPiece vocabulary (`tokenizer.json` model `WordPiece`, BERT's) as
 * llama.cpp's converter writes it (`BertModel.set_vocab`, conversion/bert.py):
 * ggml model `bert`, and every token but the control ones in llama.cpp's
 * "phantom space" form — a word-initial piece `x` becomes `▁x`, a
 * continuation `##x` becomes `x` — which llama.cpp's WPM tokenizer matches.
 *
 * @module
 */

import { TokenType } from "./token_types.ts";

/**
 * `tokenizer.ggml.pre` of a WordPiece vocabulary. The converter names a
 * vocabulary by the hash of its token ids on a fixed text; bert-base-uncased's
 * (all-MiniLM, bge, e5) it names `bert-bge`. llama.cpp reads no pre-tokenizer
 * for WordPiece (`LLAMA_VOCAB_PRE_TYPE_DEFAULT` whatever the name), so this
 * name tokenizes every WordPiece vocabulary as any other would.
 */
export const WORDPIECE_PRE = "bert-bge";

/** The WordPiece continuation prefix. */
const CONTINUATION = "##";

/**
 * The converter's phantom-space tokens: control tokens as they are, `##x`
 * → `x`, any other `x` → `▁x` (holes' `[PAD<id>]` and added tokens too).
 *
 * @example Usage
 * ```ts
 * import { phantomTokens } from "./wordpiece_vocab.ts";
 * const t = phantomTokens(["[CLS]", "play", "##ing"], [3, 1, 1]);
 * console.assert(t.join(" ") === "[CLS] ▁play ing");
 * ```
 *
 * @param tokens The vocabulary, by id, as `vocab.txt` spells it.
 * @param types The converter's token types, by id.
 * @returns The tokens as the GGUF holds them.
 */
export function phantomTokens(tokens: readonly string[], types: readonly number[]): string[] {
  return tokens.map((token, id) => {
    if (types[id] === TokenType.CONTROL) return token;
    return token.startsWith(CONTINUATION) ? token.slice(CONTINUATION.length) : `\u2581${token}`;
  });
}
