// This module is browser compatible.

/**
 * What gguf-py's `SpecialVocab` (the llama.cpp converter's) reads from a
 * Hugging Face folder besides the vocabulary: the special token ids, whether
 * the tokenizer adds BOS/EOS/SEP, and the chat templates.
 *
 * - `add_bos`/`add_eos`/`add_sep` first from `tokenizer.json`'s
 *   post-processor (a `TemplateProcessing` whose single template starts with
 *   the BOS token adds BOS; `RobertaProcessing` adds all three), then from
 *   `tokenizer_config.json`'s `add_*_token`, which win.
 * - A post-processor that ends with a token other than the configured EOS
 *   makes that token the EOS and keeps the configured one as EOT (then EOM).
 * - Ids: the `tokenizer_config.json` token strings looked up among the added
 *   tokens, then `config.json`'s `*_token_id` (and its `text_config`'s), the
 *   first found kept, ids past the vocabulary skipped.
 * - Chat template: `tokenizer_config.json`'s `chat_template` (a string, or a
 *   list of `{name, template}`), else `chat_template.jinja` (with each
 *   `additional_chat_templates/NAME.jinja` beside it, the list
 *   `default`, NAME…), else `chat_template.json`'s `chat_template`.
 * - Normaliser flags: `tokenizer.json`'s normaliser (alone, a
 *   `BertNormalizer`'s `lowercase`/`strip_accents`, or inside a `Sequence`),
 *   which llama.cpp's WordPiece tokenizer reads.
 *
 * @module
 */

/** Special token kinds, in `SpecialVocab`'s order (`eot`/`eom` appended when found). */
export const SPECIAL_KINDS = ["bos", "eos", "unk", "sep", "pad", "cls", "mask"] as const;

/** A chat template: one, or several named (`default` is the main one). */
export type ChatTemplates = string | { name: string; template: string }[];

/** The files {@linkcode specialVocab} reads; each may be absent. */
export interface SpecialVocabFiles {
  /** `tokenizer.json`. */
  tokenizer?: unknown;
  /** `tokenizer_config.json`. */
  tokenizerConfig?: unknown;
  /** `config.json`. */
  config?: unknown;
  /** `chat_template.jinja`. */
  chatTemplateJinja?: string;
  /**
   * `additional_chat_templates/NAME.jinja`, read only beside a
   * `chat_template.jinja` (as gguf-py's `SpecialVocab` does), by name.
   */
  additionalChatTemplates?: readonly { name: string; template: string }[];
  /** `chat_template.json`. */
  chatTemplateJson?: unknown;
  /** Vocabulary size: ids at or past it are skipped. */
  vocabSize: number;
}

/** What {@linkcode specialVocab} found. */
export interface SpecialVocab {
  /** Special token ids by kind, in the order found (the order the converter writes them). */
  ids: Record<string, number>;
  /** `add_<kind>_token` flags, in the order the converter writes them. */
  add: Record<string, boolean>;
  /** The chat template(s), if any. */
  chatTemplate?: ChatTemplates;
  /** The normaliser's flags, each when it says (`SpecialVocab._parse_normalizer`). */
  normalizer: { lowercase?: boolean; stripAccents?: boolean };
}

/** `SpecialVocab._parse_normalizer`: a `BertNormalizer`'s `null` flag says nothing. */
function parseNormalizer(
  node: unknown,
  out: { lowercase?: boolean; stripAccents?: boolean },
  depth = 0,
): void {
  const r = record(node);
  if (r === undefined || depth > 16) return;
  const type = r["type"];
  if (type === "Lowercase") out.lowercase = true;
  else if (type === "StripAccents") out.stripAccents = true;
  else if (type === "BertNormalizer") {
    if (Object.hasOwn(r, "lowercase")) setFlag(out, "lowercase", r["lowercase"]);
    if (Object.hasOwn(r, "strip_accents")) setFlag(out, "stripAccents", r["strip_accents"]);
  } else if (type === "Sequence" && Array.isArray(r["normalizers"])) {
    for (const n of r["normalizers"]) parseNormalizer(n, out, depth + 1);
  }
}

function setFlag(
  out: { lowercase?: boolean; stripAccents?: boolean },
  key: "lowercase" | "stripAccents",
  value: unknown,
): void {
  if (typeof value === "boolean") out[key] = value;
  else delete out[key];
}

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

function specialTokenOf(step: unknown): string | undefined {
  const id = record(record(step)?.["SpecialToken"])?.["id"];
  return typeof id === "string" && id !== "" ? id : undefined;
}

function sequenceOf(step: unknown): string | undefined {
  const id = record(record(step)?.["Sequence"])?.["id"];
  return typeof id === "string" ? id : undefined;
}

/** A chat template value as the converter accepts it: a string or a list of named ones. */
function templateOf(value: unknown): ChatTemplates | undefined {
  if (typeof value === "string") return value;
  if (!Array.isArray(value)) return undefined;
  const named: { name: string; template: string }[] = [];
  for (const entry of value) {
    const r = record(entry);
    if (typeof r?.["name"] === "string" && typeof r["template"] === "string") {
      named.push({ name: r["name"], template: r["template"] });
    }
  }
  return named;
}

/**
 * Read the special tokens, flags and chat templates as `SpecialVocab` does
 * (see the module doc).
 *
 * @example Usage
 * ```ts
 * import { specialVocab } from "./special_vocab.ts";
 * const v = specialVocab({
 *   tokenizer: {
 *     added_tokens: [{ id: 0, content: "<s>" }],
 *     post_processor: {
 *       type: "TemplateProcessing",
 *       single: [{ SpecialToken: { id: "<s>" } }, { Sequence: { id: "A" } }],
 *     },
 *   },
 *   tokenizerConfig: { bos_token: "<s>" },
 *   vocabSize: 10,
 * });
 * console.assert(v.ids.bos === 0 && v.add.bos === true);
 * ```
 *
 * @param files The parsed files.
 * @returns Ids, flags and templates.
 */
export function specialVocab(files: SpecialVocabFiles): SpecialVocab {
  const tokenizer = record(files.tokenizer);
  const config = { ...record(files.tokenizerConfig) };
  const hasConfig = files.tokenizerConfig !== undefined && Object.keys(config).length > 0;
  const kinds: string[] = [...SPECIAL_KINDS];
  const add: Record<string, boolean> = {};
  const ids: Record<string, number> = {};

  if (tokenizer !== undefined) {
    let bos = tokenString(config["bos_token"]);
    let cls = tokenString(config["cls_token"]);
    let eos = tokenString(config["eos_token"]);
    let sep = tokenString(config["sep_token"]);
    if (!bos && cls && hasConfig) config["bos_token"] = bos = cls;
    if (!eos && sep && hasConfig) config["eos_token"] = eos = sep;
    const post = record(tokenizer["post_processor"]);
    const processors = Array.isArray(post?.["processors"]) ? post["processors"] : [post];
    for (const p of processors.map(record)) {
      if (p?.["type"] === "RobertaProcessing") {
        // In gguf-py's order (a chained assignment would create sep first).
        add["bos"] = true;
        add["eos"] = true;
        add["sep"] = true;
        const pCls = Array.isArray(p["cls"]) ? p["cls"][0] : bos;
        const pSep = Array.isArray(p["sep"]) ? p["sep"][0] : eos;
        if (!cls && hasConfig && typeof pCls === "string") config["cls_token"] = cls = pCls;
        if (!sep && hasConfig && typeof pSep === "string") config["sep_token"] = sep = pSep;
        continue;
      }
      if (p?.["type"] !== "TemplateProcessing") continue;
      const single = Array.isArray(p["single"]) ? p["single"] : [];
      let pair = Array.isArray(p["pair"]) ? p["pair"] : [];
      let first: string | undefined;
      let last: string | undefined;
      if (single.length > 1) {
        first = specialTokenOf(single[0]);
        if (first !== undefined) {
          if (!hasConfig) bos = first;
          else if (first !== bos && first !== cls) {
            if (!bos) config["bos_token"] = bos = first;
            if (!cls) config["cls_token"] = cls = first;
          }
          add["bos"] = first === bos || first === cls;
        }
        last = specialTokenOf(single[single.length - 1]);
        if (last !== undefined) {
          if (!hasConfig) eos = last;
          else if (last !== eos) {
            // The configured EOS ends turns; the template's last token ends the text.
            if (!kinds.includes("eot")) {
              kinds.push("eot");
              config["eot_token"] = eos;
            } else if (!kinds.includes("eom")) {
              kinds.push("eom");
              config["eom_token"] = eos;
            }
            config["eos_token"] = eos = last;
          }
          add["eos"] = last === eos;
        }
      }
      if (pair.length > 0) {
        const start = first !== undefined && specialTokenOf(pair[0]) === first ? 1 : 0;
        const stop = last !== undefined && specialTokenOf(pair[pair.length - 1]) === last
          ? pair.length - 1
          : pair.length;
        pair = pair.slice(start, stop);
        if (pair.length > 0) {
          const a = sequenceOf(pair[0]);
          const b = sequenceOf(pair[pair.length - 1]);
          const middle = pair.slice(1, -1);
          if (a === "A" && b === "B" && middle.length > 0) {
            let addSep = false;
            const entry = specialTokenOf(middle[0]);
            if (entry !== undefined && (entry === sep || entry === eos) && last === undefined) {
              addSep = true;
            }
            if (middle.length === 2) {
              const second = specialTokenOf(middle[1]);
              if (second !== undefined && (second === sep || second === eos)) addSep = true;
            }
            add["sep"] = addSep;
            if (addSep && !sep && hasConfig) config["sep_token"] = eos;
          }
        }
      }
    }
  }

  const added = Array.isArray(tokenizer?.["added_tokens"]) ? tokenizer["added_tokens"] : [];
  const setId = (kind: string, id: unknown): void => {
    if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 0) return;
    if (id < files.vocabSize && ids[kind] === undefined) ids[kind] = id;
  };
  let chatTemplate: ChatTemplates | undefined;
  if (hasConfig) {
    const extra = files.additionalChatTemplates ?? [];
    const alt = files.chatTemplateJinja === undefined
      ? templateOf(record(files.chatTemplateJson)?.["chat_template"])
      : extra.length > 0
      ? [{ name: "default", template: files.chatTemplateJinja }, ...extra]
      : files.chatTemplateJinja;
    chatTemplate = Object.hasOwn(config, "chat_template")
      ? templateOf(config["chat_template"])
      : alt;
    for (const kind of kinds) {
      const flag = config[`add_${kind}_token`];
      if (typeof flag === "boolean") add[kind] = flag;
      const content = tokenString(config[`${kind}_token`]);
      if (content === undefined) continue;
      const match = added.map(record).find((t) => t?.["content"] === content);
      setId(kind, match?.["id"]);
    }
  }
  const modelConfig = record(files.config);
  if (modelConfig !== undefined) {
    const textConfig = record(modelConfig["text_config"]);
    for (const kind of kinds) {
      setId(kind, modelConfig[`${kind}_token_id`] ?? textConfig?.[`${kind}_token_id`]);
    }
  }
  const normalizer = {};
  parseNormalizer(tokenizer?.["normalizer"], normalizer);
  // Ids and flags keep the order they were found in: the converter writes them so.
  return {
    ids,
    add,
    normalizer,
    ...(chatTemplate !== undefined ? { chatTemplate } : {}),
  };
}
