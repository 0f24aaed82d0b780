// This module is browser compatible.

/**
 * An added token's id as llama.cpp's converter finds it
 * (`LlavaVisionModel.get_token_id`, conversion/llava.py): the first
 * `tokenizer_config.json` `added_tokens_decoder` entry whose content is the
 * token, else the first such `tokenizer.json` `added_tokens` entry. The
 * model vocabulary is not searched (the converter does not).
 *
 * @module
 */

import { record } from "./kv.ts";

/**
 * The id of an added token.
 *
 * @example Usage
 * ```ts
 * import { addedTokenId } from "./added_token_id.ts";
 * const id = addedTokenId({}, { added_tokens: [{ id: 12, content: "[IMG_BREAK]" }] }, "[IMG_BREAK]");
 * console.assert(id === 12);
 * ```
 *
 * @param tokenizerConfig The parsed `tokenizer_config.json`, if any.
 * @param tokenizer The parsed `tokenizer.json`, if any.
 * @param token The token's text.
 * @returns Its id, or `undefined` when neither file names it.
 */
export function addedTokenId(
  tokenizerConfig: unknown,
  tokenizer: unknown,
  token: string,
): number | undefined {
  const decoder = record(record(tokenizerConfig)?.["added_tokens_decoder"]) ?? {};
  for (const id in decoder) {
    if (/^\d+$/.test(id) && record(decoder[id])?.["content"] === token) return Number(id);
  }
  const added = record(tokenizer)?.["added_tokens"];
  for (const entry of Array.isArray(added) ? added : []) {
    const t = record(entry);
    const id = t?.["id"];
    if (t?.["content"] === token && Number.isSafeInteger(id) && (id as number) >= 0) {
      return id as number;
    }
  }
  return undefined;
}
