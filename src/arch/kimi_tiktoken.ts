// This module is browser compatible.

/**
 * Kimi's tiktoken vocabulary, shared by the families its checkpoints use
 * (Kimi-Linear; Kimi-K2 under DeepSeek-V3's model).
 *
 * @module
 */

import type { TiktokenFacts } from "../tokenizer/tiktoken_vocab.ts";

/**
 * Kimi's published tokenizer (Kimi-K2, Kimi-Linear): `tiktoken.model` read by
 * `tokenization_kimi.py`'s `TikTokenTokenizer`: its ranks, then 256 reserved
 * special ids named by tokenizer_config.json's `added_tokens_decoder`, and
 * its `pat_str`. The converter's kimi-k2 path (`KimiLinearModel.set_vocab`,
 * `DeepseekV2Model.set_vocab`) names it `kimi-k2`.
 */
export const KIMI_TIKTOKEN: TiktokenFacts = {
  file: "tiktoken.model",
  specials: 256,
  regex: [
    "[\\p{Han}]+",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*" +
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+" +
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "\\p{N}{1,3}",
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*",
    "\\s*[\\r\\n]+",
    "\\s+(?!\\S)",
    "\\s+",
  ].join("|"),
  pre: "kimi-k2",
};
