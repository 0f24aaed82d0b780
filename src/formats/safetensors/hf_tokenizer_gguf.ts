// This module is browser compatible.

/**
 * What llama.cpp's converter (`convert_hf_to_gguf.py` and gguf-py's
 * `SpecialVocab`, of the llama.cpp that node-llama-cpp 3.22.1 bundles)
 * derives from a Hugging Face tokenizer, kept in APR metadata at import so a
 * GGUF export can write it. The knowledge itself lives in `src/tokenizer/`:
 *
 * - `tokenizer.ggml_model`: `"gpt2"` for a byte-level BPE `tokenizer.json`,
 *   `"llama"` for SentencePiece-style ones (BPE with byte fallback, Unigram),
 *   `"bert"` for WordPiece (`wordpiece_vocab.ts`; its tokens are written in
 *   the converter's phantom-space form on GGUF export, and
 *   `tokenizer.token_type_count` from `type_vocab_size`).
 * - `tokenizer.pre`: the pre-tokenizer llama.cpp should apply, recognised
 *   from the `tokenizer.json`'s structure (`pre_tokenizers.ts`); `"default"`
 *   for `llama` vocabularies. A byte-level one that matches no entry gets no
 *   `tokenizer.pre` but `tokenizer.pre_unrecognised` (its steps), and GGUF
 *   export refuses it unless told which name to write. `tokenizer.pre_type`
 *   repeats the name, for realizar's tokenizer and aprender's GGUF export
 *   (aprender's importer writes that key).
 * - `tokenizer.token_type`: per id, as the converter types them (`token_types.ts`).
 * - `tokenizer.scores` for SentencePiece-style BPE: −(merge rank)
 *   (`merge_rank_scores.ts`); Unigram vocabularies keep their own.
 * - `tokenizer.special_ids`, `tokenizer.add_special`, chat templates:
 *   `special_vocab.ts`; `tokenizer.add_space_prefix` for `llama`
 *   vocabularies, from the normaliser (`Prepend("▁")`), a `Metaspace`
 *   pre-tokenizer, or `tokenizer_config.json`'s `add_prefix_space`.
 * - aprender's names of two of them: `tokenizer.add_bos_token`,
 *   `tokenizer.padding_token_id`.
 *
 * @module
 */

import type { ModelMetadata } from "../../tensor.ts";
import {
  describePreTokenizer,
  preTokenizerName,
  recognisePreTokenizer,
} from "../../tokenizer/pre_tokenizers.ts";
import { tokenTypes } from "../../tokenizer/token_types.ts";
import { mergeRankScores } from "../../tokenizer/merge_rank_scores.ts";
import { WORDPIECE_PRE } from "../../tokenizer/wordpiece_vocab.ts";
import {
  type ChatTemplates,
  type SpecialVocab,
  specialVocab,
} from "../../tokenizer/special_vocab.ts";

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}

/** The ggml tokenizer model of a `tokenizer.json`, or undefined when llama.cpp has none. */
function ggmlModel(model: Record<string, unknown>): "gpt2" | "llama" | "bert" | undefined {
  if (model["type"] === "BPE") return model["byte_fallback"] === true ? "llama" : "gpt2";
  if (model["type"] === "Unigram") return "llama";
  if (model["type"] === "WordPiece") return "bert";
  return undefined;
}

/**
 * Whether a SentencePiece-style tokenizer puts "▁" before the text:
 * `tokenizer_config.json`'s `add_prefix_space` when set, else a `Prepend("▁")`
 * normaliser or a `Metaspace` pre-tokenizer that prepends.
 */
function addSpacePrefix(
  tokenizer: Record<string, unknown>,
  tokenizerConfig: Record<string, unknown>,
): boolean {
  const configured = tokenizerConfig["add_prefix_space"];
  if (typeof configured === "boolean") return configured;
  let found = false;
  const walk = (node: unknown, key: string, depth: number): void => {
    const r = record(node);
    if (r === undefined || depth > 16) return;
    const children = r[key];
    if (Array.isArray(children)) { for (const c of children) walk(c, key, depth + 1); }
    if (r["type"] === "Prepend" && r["prepend"] === "▁") found = true;
    if (r["type"] === "Metaspace") {
      const scheme = r["prepend_scheme"];
      if (scheme === "always" || scheme === "first" || r["add_prefix_space"] === true) found = true;
    }
  };
  walk(tokenizer["normalizer"], "normalizers", 0);
  walk(tokenizer["pre_tokenizer"], "pretokenizers", 0);
  return found;
}

/** The companion files special tokens and chat templates are read from. */
export interface SpecialVocabSources {
  tokenizerConfig?: unknown;
  config?: unknown;
  chatTemplate?: string;
  additionalChatTemplates?: readonly { name: string; template: string }[];
  chatTemplateJson?: unknown;
}

/**
 * The special tokens, flags and chat templates of a checkpoint, as the
 * converter's `SpecialVocab` reads them from its companion files (one call
 * for the byte-level and the SentencePiece paths).
 *
 * @param files The companion files.
 * @param tokenizer The parsed `tokenizer.json` (`{}` when there is none).
 * @param vocabSize Ids at or past this are ignored.
 * @returns What `specialVocab` finds.
 */
export function specialVocabOf(
  files: SpecialVocabSources,
  tokenizer: unknown,
  vocabSize: number,
): SpecialVocab {
  return specialVocab({
    tokenizer,
    tokenizerConfig: files.tokenizerConfig,
    config: files.config,
    ...(files.chatTemplate !== undefined ? { chatTemplateJinja: files.chatTemplate } : {}),
    ...(files.additionalChatTemplates !== undefined
      ? { additionalChatTemplates: files.additionalChatTemplates }
      : {}),
    ...(files.chatTemplateJson !== undefined ? { chatTemplateJson: files.chatTemplateJson } : {}),
    vocabSize,
  });
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
 *     pre_tokenizer: { type: "ByteLevel", use_regex: true },
 *   },
 *   tokenizerConfig: { eos_token: "<|end|>" },
 *   tokens: ["a", "b", "<|end|>"],
 * });
 * console.assert(m["tokenizer.ggml_model"] === "gpt2" && m["tokenizer.pre"] === "gpt-2");
 * console.assert((m["tokenizer.token_type"] as number[])[2] === 3);
 * ```
 *
 * @param files The parsed `tokenizer.json`, `tokenizer_config.json`, `config.json`,
 *   `chat_template.jinja`/`.json`, `additional_chat_templates/*.jinja`, and the vocabulary as APR writes it
 *   (`[PAD<id>]` for ids no token claims).
 * @returns The `tokenizer.*` keys, or nothing for a tokenizer llama.cpp cannot hold.
 */
export function ggufTokenizerFields(files: {
  tokenizer?: unknown;
  tokenizerConfig?: unknown;
  config?: unknown;
  chatTemplate?: string;
  additionalChatTemplates?: readonly { name: string; template: string }[];
  chatTemplateJson?: unknown;
  /** Set when `tokenizer` was read from a tiktoken file (no `tokenizer.json`). */
  tiktoken?: unknown;
  tokens: readonly string[];
  merges?: readonly string[];
}): ModelMetadata {
  const tokenizer = record(files.tokenizer);
  const model = record(tokenizer?.["model"]);
  if (tokenizer === undefined || model === undefined) return {};
  const kind = ggmlModel(model);
  if (kind === undefined) return {};
  const tokenizerConfig = record(files.tokenizerConfig) ?? {};

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
  const added = new Map<number, { special: boolean }>();
  for (const entry of Array.isArray(tokenizer["added_tokens"]) ? tokenizer["added_tokens"] : []) {
    const t = record(entry);
    const id = t?.["id"];
    if (typeof t?.["content"] === "string" && typeof id === "number") {
      added.set(id, { special: t["special"] === true });
      claim(id);
    }
  }

  // Read from a tiktoken file, there is no tokenizer.json: SpecialVocab names no id by its token.
  const special = specialVocabOf(
    files,
    files.tiktoken === undefined ? tokenizer : undefined,
    files.tokens.length,
  );
  const out: ModelMetadata = {
    "tokenizer.ggml_model": kind,
  };
  if (kind === "bert") {
    // `BertModel.set_vocab` writes the count before the vocabulary (the token-type embedding's rows).
    const config = record(files.config) ?? {};
    const count = config["type_vocab_size"] ?? 1;
    if (typeof count === "number") out["tokenizer.token_type_count"] = count;
    out["tokenizer.pre"] = WORDPIECE_PRE;
    out["tokenizer.pre_type"] = WORDPIECE_PRE;
  } else if (kind === "llama") {
    out["tokenizer.pre"] = "default";
    out["tokenizer.pre_type"] = "default";
  } else {
    const pre = recognisePreTokenizer(tokenizer);
    if (pre !== undefined) {
      // Where llama.cpp has a name that splits text exactly as the regex, that one.
      const name = preTokenizerName(pre, tokenizer);
      out["tokenizer.pre"] = name;
      out["tokenizer.pre_type"] = name;
    } else {
      out["tokenizer.pre_unrecognised"] = describePreTokenizer(tokenizer);
    }
  }
  out["tokenizer.token_type"] = tokenTypes({
    tokens: files.tokens,
    claimed,
    added,
    specialIds: new Set(Object.values(special.ids)),
    ggmlModel: kind,
  });
  if (kind === "llama" && model["type"] === "BPE" && files.merges !== undefined) {
    out["tokenizer.scores"] = mergeRankScores(files.tokens, files.merges);
  }
  if (kind === "llama") {
    out["tokenizer.add_space_prefix"] = addSpacePrefix(tokenizer, tokenizerConfig);
  }
  return { ...out, ...specialVocabFields(special) };
}

/**
 * The APR keys of what `SpecialVocab` found: ids, `add_*` flags (and
 * aprender's names of two), chat templates, normaliser flags.
 *
 * @param special What {@linkcode specialVocabOf} found.
 * @returns The keys, those found.
 */
export function specialVocabFields(special: SpecialVocab): ModelMetadata {
  const out: ModelMetadata = {};
  if (Object.keys(special.ids).length > 0) out["tokenizer.special_ids"] = special.ids;
  if (Object.keys(special.add).length > 0) out["tokenizer.add_special"] = special.add;
  if (special.ids["pad"] !== undefined) out["tokenizer.padding_token_id"] = special.ids["pad"];
  if (special.add["bos"] !== undefined) out["tokenizer.add_bos_token"] = special.add["bos"];
  const templates = namedTemplates(special.chatTemplate);
  if (templates !== undefined) out["tokenizer.chat_templates"] = templates;
  const { lowercase, stripAccents } = special.normalizer;
  if (lowercase !== undefined) out["tokenizer.normalizer_lowercase"] = lowercase;
  if (stripAccents !== undefined) out["tokenizer.normalizer_strip_accents"] = stripAccents;
  return out;
}

/**
 * The chat template as APR keeps it: a string, or for several named ones an
 * object `name → template` (`default` among them), names reduced to
 * `[A-Za-z0-9_]` as gguf-py's `add_chat_template` does.
 *
 * @param t What `specialVocab` found.
 * @returns The `tokenizer.chat_templates` value, or undefined for none.
 */
export function namedTemplates(
  t: ChatTemplates | undefined,
): string | Record<string, string> | undefined {
  if (t === undefined || typeof t === "string") return t;
  const named: Record<string, string> = {};
  for (const { name, template } of t) {
    const clean = ggufTemplateName(name);
    if (clean !== "" && !Object.hasOwn(named, clean)) named[clean] = template;
  }
  return Object.keys(named).length > 0 ? named : undefined;
}

/**
 * A chat template's name as gguf-py's `add_chat_template` keys it
 * (`tokenizer.chat_template.NAME`): each character that is not an ASCII
 * letter or digit becomes `_` (each code point, as Python iterates a str).
 *
 * @example Usage
 * ```ts
 * import { ggufTemplateName } from "./hf_tokenizer_gguf.ts";
 * console.assert(ggufTemplateName("tool use") === "tool_use");
 * ```
 *
 * @param name The template's name (an `additional_chat_templates/NAME.jinja` stem).
 * @returns The name in the GGUF key.
 */
export function ggufTemplateName(name: string): string {
  return name.replace(/[^A-Za-z0-9]/gu, "_");
}
