// This module is browser compatible.

/**
 * What llama.cpp's converter (`convert_hf_to_gguf.py` and gguf-py's
 * `SpecialVocab`, llama.cpp c392e50) derives from a Hugging Face tokenizer,
 * kept in APR metadata at import so a GGUF export can write it:
 *
 * - `tokenizer.ggml_model`: `"gpt2"` for a byte-level BPE `tokenizer.json`,
 *   `"llama"` for SentencePiece-style ones (BPE with byte fallback, Unigram).
 * - `tokenizer.pre`: the pre-tokenizer llama.cpp should apply. The converter
 *   recognises a tokenizer by hashing its output on a fixed text; aprkit has
 *   no tokenizer to run, so it recognises the pre-tokenizer's regex instead
 *   (Llama 3, Qwen2, GPT-2) and says `"default"` otherwise.
 * - `tokenizer.token_type`: per id, NORMAL 1, UNKNOWN 2, CONTROL 3 (added
 *   special tokens, and added tokens that look special: `<|…|>`), USER_DEFINED
 *   4 (other added tokens), UNUSED 5 (ids no token claims), BYTE 6 (`<0xAB>`
 *   of SentencePiece vocabularies).
 * - `tokenizer.special_ids`: `{bos, eos, unk, sep, pad, cls, mask}` ids in
 *   `SpecialVocab`'s order: the tokenizer_config's token strings looked up
 *   among the added tokens, then `config.json`'s `*_token_id`.
 * - `tokenizer.add_special`: tokenizer_config's `add_bos_token`/`add_eos_token`…
 *
 * @module
 */

import type { ModelMetadata } from "../../tensor.ts";

/** gguf-py's `TokenType`. */
const NORMAL = 1;
const CONTROL = 3;
const USER_DEFINED = 4;
const UNUSED = 5;
const BYTE = 6;

/** SpecialVocab's special token kinds, in its order. */
const SPECIAL_KINDS = ["bos", "eos", "unk", "sep", "pad", "cls", "mask"] as const;

/** Pre-tokenizer regexes llama.cpp implements, by its `tokenizer.ggml.pre` name. */
const PRE_TOKENIZER_REGEXES: ReadonlyMap<string, string> = new Map([
  [
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    "llama-bpe",
  ],
  [
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    "qwen2",
  ],
]);

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}

function tokenString(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  const content = record(value)?.["content"];
  return typeof content === "string" ? content : undefined;
}

/** The converter's `does_token_look_special`. */
function looksSpecial(token: string): boolean {
  return ["<pad>", "<mask>", "<2mass>", "[@BOS@]"].includes(token) ||
    (token.startsWith("<|") && token.endsWith("|>")) ||
    (token.startsWith("<unused") && token.endsWith(">"));
}

/** The ggml tokenizer model of a `tokenizer.json`, or undefined when llama.cpp has none. */
function ggmlModel(model: Record<string, unknown>): "gpt2" | "llama" | undefined {
  if (model["type"] === "BPE") return model["byte_fallback"] === true ? "llama" : "gpt2";
  if (model["type"] === "Unigram") return "llama";
  return undefined;
}

/** Every `Split` regex and ByteLevel step of a pre-tokenizer, in order. */
function preTokenizerSteps(pre: unknown): { regexes: string[]; byteLevelRegex: boolean } {
  const steps: unknown[] = [];
  const walk = (node: unknown): void => {
    const r = record(node);
    if (r === undefined) return;
    if (Array.isArray(r["pretokenizers"])) r["pretokenizers"].forEach(walk);
    else steps.push(r);
  };
  walk(pre);
  const regexes: string[] = [];
  let byteLevelRegex = false;
  for (const step of steps) {
    const r = record(step)!;
    const regex = record(r["pattern"])?.["Regex"];
    if (r["type"] === "Split" && typeof regex === "string") regexes.push(regex);
    if (r["type"] === "ByteLevel" && r["use_regex"] !== false) byteLevelRegex = true;
  }
  return { regexes, byteLevelRegex };
}

function preTokenizerName(tokenizer: Record<string, unknown>): string {
  const { regexes, byteLevelRegex } = preTokenizerSteps(tokenizer["pre_tokenizer"]);
  if (regexes.length === 1 && !byteLevelRegex) {
    return PRE_TOKENIZER_REGEXES.get(regexes[0]!) ?? "default";
  }
  return "default";
}

/**
 * The GGUF tokenizer fields of a Hugging Face tokenizer (see the module doc).
 *
 * @example Usage
 * ```ts
 * import { ggufTokenizerFields } from "./hf_tokenizer_gguf.ts";
 * const m = ggufTokenizerFields({
 *   tokenizer: {
 *     model: { type: "BPE", vocab: { a: 0, b: 1 }, merges: ["a b"] },
 *     added_tokens: [{ id: 2, content: "<|end|>", special: true }],
 *   },
 *   tokenizerConfig: { eos_token: "<|end|>" },
 *   tokens: ["a", "b", "<|end|>"],
 * });
 * console.assert(m["tokenizer.ggml_model"] === "gpt2");
 * console.assert((m["tokenizer.token_type"] as number[])[2] === 3);
 * ```
 *
 * @param files The parsed `tokenizer.json`, `tokenizer_config.json`, `config.json`,
 *   and the vocabulary as APR writes it (`[PAD<id>]` for ids no token claims).
 * @returns The `tokenizer.*` keys, or nothing for a tokenizer llama.cpp cannot hold.
 */
export function ggufTokenizerFields(files: {
  tokenizer?: unknown;
  tokenizerConfig?: unknown;
  config?: unknown;
  tokens: readonly string[];
}): ModelMetadata {
  const tokenizer = record(files.tokenizer);
  const model = record(tokenizer?.["model"]);
  if (tokenizer === undefined || model === undefined) return {};
  const kind = ggmlModel(model);
  if (kind === undefined) return {};
  const tokenizerConfig = record(files.tokenizerConfig) ?? {};
  const config = record(files.config) ?? {};

  // One byte per id, not a Set of a million numbers (issue 20 item 2).
  const claimed = new Uint8Array(files.tokens.length);
  const claim = (id: unknown): void => {
    if (typeof id === "number" && Number.isInteger(id) && id >= 0 && id < claimed.length) {
      claimed[id] = 1;
    }
  };
  const vocab = model["vocab"];
  if (Array.isArray(vocab)) vocab.forEach((_, id) => claim(id));
  else {
    const map = record(vocab) ?? {};
    for (const token in map) claim(map[token]);
  }
  const added = new Map<number, { content: string; special: boolean }>();
  for (const entry of Array.isArray(tokenizer["added_tokens"]) ? tokenizer["added_tokens"] : []) {
    const t = record(entry);
    const id = t?.["id"];
    if (typeof t?.["content"] === "string" && typeof id === "number") {
      added.set(id, { content: t["content"], special: t["special"] === true });
      claim(id);
    }
  }

  const specialIds: Record<string, number> = {};
  for (const kind of SPECIAL_KINDS) {
    const token = tokenString(tokenizerConfig[`${kind}_token`]);
    if (token === undefined) continue;
    const id = [...added].find(([, t]) => t.content === token)?.[0];
    if (id !== undefined) specialIds[kind] = id;
  }
  // gguf-py's SpecialVocab reads a multimodal config's ids from text_config when the root has none.
  const textConfig = record(config["text_config"]) ?? {};
  for (const kind of SPECIAL_KINDS) {
    const id = config[`${kind}_token_id`] ?? textConfig[`${kind}_token_id`];
    if (specialIds[kind] === undefined && typeof id === "number" && Number.isSafeInteger(id)) {
      if (id >= 0 && id < files.tokens.length) specialIds[kind] = id;
    }
  }
  const special = new Set(Object.values(specialIds));

  const types = files.tokens.map((token, id) => {
    if (claimed[id] !== 1) return UNUSED;
    const a = added.get(id);
    if (a !== undefined) return a.special || looksSpecial(token) ? CONTROL : USER_DEFINED;
    if (kind === "llama") {
      if (/^<0x[0-9A-Fa-f]{2}>$/.test(token)) return BYTE;
      if (special.has(id)) return CONTROL;
    }
    return NORMAL;
  });

  const addSpecial: Record<string, boolean> = {};
  for (const kind of SPECIAL_KINDS) {
    const v = tokenizerConfig[`add_${kind}_token`];
    if (typeof v === "boolean") addSpecial[kind] = v;
  }

  const out: ModelMetadata = {
    "tokenizer.ggml_model": kind,
    "tokenizer.pre": kind === "gpt2" ? preTokenizerName(tokenizer) : "default",
    "tokenizer.token_type": types,
  };
  if (Object.keys(specialIds).length > 0) out["tokenizer.special_ids"] = specialIds;
  if (Object.keys(addSpecial).length > 0) out["tokenizer.add_special"] = addSpecial;
  return out;
}
