// This module is browser compatible.

/**
 * A tiktoken BPE file (`<base64 token bytes> <rank>` per line: Hunyuan-A13B's
 * `hy.tiktoken`) as the byte-level BPE `tokenizer.json` llama.cpp's converter
 * makes of it (`HunYuanMoEModel.set_vocab`): each token's bytes as GPT-2's
 * byte-level string, its rank as its id (ranks counted in file order, a
 * repeated token skipped, as Hunyuan's `_load_tiktoken_bpe` counts them),
 * the special tokens right after the ranks, and the merges rebuilt from the
 * ranks (`QwenModel.bpe`: a token's two parts are what BPE with the
 * lower-ranked merges leaves of it).
 *
 * @module
 */

/** GPT-2's `bytes_to_unicode`: each byte as the printable character byte-level BPE names it by. */
const BYTE_CHARS: readonly string[] = (() => {
  const printable = (b: number) =>
    (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  let next = 256;
  return Array.from({ length: 256 }, (_, b) => String.fromCodePoint(printable(b) ? b : next++));
})();

/** How a tiktoken vocabulary is read: what its remote code, not the file, says. */
export interface TiktokenFacts {
  /** The file's name in the model folder. */
  readonly file: string;
  /**
   * The special tokens, in id order from the first id after the ranks; or
   * how many ids are reserved there (Kimi's `num_reserved_special_tokens`),
   * named by `tokenizer_config.json`'s `added_tokens_decoder`, the others
   * `<|reserved_token_{id}|>`.
   */
  readonly specials: readonly string[] | number;
  /** The pre-tokenizer's regex (tiktoken's `pat_str`). */
  readonly regex: string;
  /** The `tokenizer.ggml.pre` the converter writes for it; absent: the name the regex is recognised by. */
  readonly pre?: string;
  /** The converter writes the remote tokenizer's `eos_id` (tokenizer_config.json's `eos_token`) as EOS. */
  readonly eosFromTokenizer?: boolean;
}

/** A token's bytes as a latin-1 string (a map key), and as byte-level BPE names it. */
const latin1 = (bytes: Uint8Array) => String.fromCharCode(...bytes);
const byteLevel = (key: string) => Array.from(key, (c) => BYTE_CHARS[c.charCodeAt(0)]!).join("");

/**
 * `QwenModel.bpe`: merge the token's bytes by rank, only ranks below `maxRank`.
 *
 * @returns The parts left (two for a token made by one merge).
 */
function bpeParts(ranks: ReadonlyMap<string, number>, token: string, maxRank: number): string[] {
  let parts = Array.from(token);
  for (;;) {
    let best = -1;
    let bestRank = Infinity;
    for (let i = 0; i + 1 < parts.length; i++) {
      const rank = ranks.get(parts[i]! + parts[i + 1]!);
      if (rank !== undefined && rank < bestRank) [best, bestRank] = [i, rank];
    }
    if (best < 0 || bestRank >= maxRank) return parts;
    parts = [...parts.slice(0, best), parts[best]! + parts[best + 1]!, ...parts.slice(best + 2)];
  }
}

/**
 * The `tokenizer.json` a tiktoken file stands for.
 *
 * @param text The file's text.
 * @param facts Its specials and regex.
 * @param location The file, for messages.
 * @param names Special tokens' names by id (`added_tokens_decoder`), for reserved ids.
 * @returns A byte-level BPE `tokenizer.json` object.
 * @throws {RangeError} On a line that is not a base64 token and a rank.
 */
export function tiktokenAsTokenizerJson(
  text: string,
  facts: TiktokenFacts,
  location: string,
  names: ReadonlyMap<number, string> = new Map(),
): Record<string, unknown> {
  const ranks = new Map<string, number>();
  for (const [index, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    const fields = line.trim().split(/\s+/);
    let bytes: Uint8Array;
    try {
      if (fields.length !== 2 || !/^\d+$/.test(fields[1]!)) throw new Error();
      bytes = Uint8Array.from(atob(fields[0]!), (c) => c.charCodeAt(0));
    } catch {
      throw new RangeError(`${location}: line ${index + 1} is not a base64 token and its rank`);
    }
    const key = latin1(bytes);
    if (!ranks.has(key)) ranks.set(key, ranks.size);
  }
  const vocab: Record<string, number> = {};
  const merges: [string, string][] = [];
  for (const [key, rank] of ranks) {
    vocab[byteLevel(key)] = rank;
    if (key.length < 2) continue;
    const parts = bpeParts(ranks, key, rank);
    if (parts.length === 2) merges.push([byteLevel(parts[0]!), byteLevel(parts[1]!)]);
  }
  const specials = typeof facts.specials === "number"
    ? Array.from(
      { length: facts.specials },
      (_, i) => names.get(ranks.size + i) ?? `<|reserved_token_${ranks.size + i}|>`,
    )
    : facts.specials;
  return {
    added_tokens: specials.map((content, i) => ({
      id: ranks.size + i,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: facts.regex }, behavior: "Isolated", invert: false },
        { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: "BPE", byte_fallback: false, ignore_merges: false, vocab, merges },
  };
}
