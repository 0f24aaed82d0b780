// This module is browser compatible.

/**
 * The `general.*` keys llama.cpp's converter writes for a Hugging Face model,
 * ported from gguf-py's `gguf/metadata.py` (de3ff81): what it takes from the
 * model card's YAML header (`Metadata.apply_metadata_heuristic`: licence,
 * base models, datasets, tags, languages, llama.cpp's own `name`/`author`…
 * keys), what it derives from the model's name (`get_model_id_components`:
 * `Qwen2.5-7B-Instruct` → basename `Qwen2.5`, size label `7B`, finetune
 * `Instruct`), from `config.json`'s `_name_or_path` and else the folder's
 * name, and the size label it counts from the written tensors
 * (`GGUFWriter.get_total_parameter_count`, `gguf.size_label`). The pairs come
 * out in `Metadata.set_gguf_meta_model`'s order. Shared by the Hugging Face
 * import (APR's name, licence…) and the GGUF export, so it lives here.
 *
 * Where the converter stops with an error (a number or a list where it
 * writes a string, a list mixing kinds), the value is left out instead.
 *
 * @module
 */

import type { KvEntry, KvType } from "./kv.ts";
import type { ModelMetadata } from "../tensor.ts";

/**
 * gguf-py's `Metadata.id_to_title`: `-` becomes a space; an all-lowercase
 * word is title-cased (a letter after a non-letter is upper case, as
 * Python's `str.title`) unless it is a version (`v1.2`) or starts with a
 * digit; other words are kept.
 *
 * @example Usage
 * ```ts
 * import { idToTitle } from "./hf_model_card.ts";
 * console.assert(idToTitle("tiny-llama") === "Tiny Llama");
 * console.assert(idToTitle("Meta-Llama-3-8B") === "Meta Llama 3 8B");
 * ```
 *
 * @param id A folder or repository name.
 * @returns The title.
 */
export function idToTitle(id: string): string {
  return id.trim().replaceAll("-", " ").split(/\s+/).filter((w) => w !== "").map((word) => {
    if (!isLower(word) || /^(v\p{Nd}+(?:\.\p{Nd}+)*|\p{Nd}.*)$/u.test(word)) return word;
    let out = "";
    let afterLetter = false;
    for (const c of word) {
      const letter = isCased(c);
      out += letter ? (afterLetter ? c.toLowerCase() : c.toUpperCase()) : c;
      afterLetter = letter;
    }
    return out;
  }).join(" ");
}

function isCased(c: string): boolean {
  return c.toLowerCase() !== c.toUpperCase();
}

/** Python's `str.islower`: some cased character, none upper case. */
function isLower(word: string): boolean {
  return word === word.toLowerCase() && word !== word.toUpperCase();
}

const isDecimal = (c: string): boolean => /^\p{Nd}$/u.test(c);
const isAlpha = (c: string): boolean => /^\p{L}$/u.test(c);

/** What {@linkcode modelIdComponents} finds in a name. */
export interface ModelIdComponents {
  /** The name after `org/` (or the whole text when it has spaces). */
  fullName?: string;
  /** The part before `/`. */
  organization?: string;
  /** `general.basename`. */
  basename?: string;
  /** `general.finetune`. */
  finetune?: string;
  /** `general.version`. */
  version?: string;
  /** `general.size_label`. */
  sizeLabel?: string;
}

type Part = "basename" | "size_label" | "finetune" | "version" | "type";

/**
 * gguf-py's `Metadata.get_model_id_components`: a Hugging Face style name
 * (`org/Name-7B-Instruct-v0.2`) cut into basename, size label, finetune and
 * version. A size that is far from `totalParams` (more than 7/8 off) is read
 * as a context length and becomes part of the finetune, lower-cased.
 *
 * @example Usage
 * ```ts
 * import { modelIdComponents } from "./hf_model_card.ts";
 * const c = modelIdComponents("Qwen/Qwen2.5-7B-Instruct", 7_615_616_512);
 * console.assert(c.basename === "Qwen2.5" && c.sizeLabel === "7B" && c.finetune === "Instruct");
 * ```
 *
 * @param modelId The name.
 * @param totalParams The model's parameter count (0: unknown).
 * @returns The components found.
 */
export function modelIdComponents(modelId: string, totalParams: number): ModelIdComponents {
  if (modelId.includes(" ")) return { fullName: modelId };
  const slash = modelId.indexOf("/");
  let organization: string | undefined = slash < 0 ? undefined : modelId.slice(0, slash);
  const fullName = slash < 0 ? modelId : modelId.slice(slash + 1);
  // "./x" and "../x" are paths, not organisations.
  if (organization !== undefined && organization.startsWith(".")) organization = undefined;
  const parts = fullName.split("-").filter((p) => p !== "");
  const types = parts.map(() => new Set<Part>());
  parts.forEach((part, i) => {
    const t = types[i]!;
    if (/^(?:v|iter)?\p{Nd}+(?:[.]\p{Nd}+)*$/iu.test(part)) {
      t.add("version");
    } else if (/^(?:i?q\p{Nd}(?:_[\p{L}\p{N}_])*|b?fp?(?:16|32))$/iu.test(part)) {
      t.add("type");
      parts[i] = part.toUpperCase();
    } else if (
      i > 0 &&
      /^(?:(?:[A]|\p{Nd}+[x])?\p{Nd}+(?:[._]\p{Nd}+)?[KMBT][\p{Nd}]?|small|mini|medium|large|x?xl)$/iu
        .test(part)
    ) {
      let p = part.replaceAll("_", ".");
      // bloom-7b1 → 7.1b
      if (isDecimal(p.at(-1)!)) p = `${p.slice(0, -2)}.${p.at(-1)}${p.at(-2)}`;
      if (p.length > 1 && isDecimal(p.at(-2)!) && "kmbt".includes(p.at(-1)!)) {
        p = p.slice(0, -1) + p.at(-1)!.toUpperCase();
      }
      if (totalParams !== 0) {
        const label = pythonFloat(p.slice(0, -1));
        if (label !== undefined) {
          const labelParams = label * 1000 ** " KMBT".indexOf(p.at(-1)!);
          const far = (totalParams < 0 && labelParams < Math.floor(Math.abs(totalParams) / 8)) ||
            (totalParams > 0 &&
              Math.abs(labelParams - totalParams) > Math.floor(7 * totalParams / 8));
          if (far) {
            // Likely a context length.
            t.add("finetune");
            p = p.slice(0, -1) + p.at(-1)!.toLowerCase();
          }
        }
      }
      if (t.size === 0) t.add("size_label");
      parts[i] = p;
    } else if (i > 0 && /^(?:chat|instruct|vision|lora)$/i.test(part)) {
      t.add(totalParams < 0 && part.toLowerCase() === "lora" ? "type" : "finetune");
    }
  });
  // Word sizes (small, xl) give way to a number-based one.
  if (parts.some((p, i) => types[i]!.has("size_label") && [...p].some(isDecimal))) {
    parts.forEach((p, i) => {
      if (types[i]!.has("size_label") && [...p].every(isAlpha)) types[i]!.delete("size_label");
    });
  }
  let atStart = true;
  parts.forEach((p, i) => {
    const t = types[i]!;
    if (atStart && ((t.size === 0 && isAlpha(p[0]!)) || t.has("version"))) {
      t.add("basename");
    } else {
      atStart = false;
      if (t.size === 0) t.add("finetune");
    }
  });
  // A trailing version is not part of the basename.
  for (let i = parts.length - 1; i >= 0; i--) {
    const t = types[i]!;
    if (t.has("basename") && t.size > 1) t.delete("basename");
    else break;
  }
  const joined = (keep: (t: Set<Part>) => boolean, unique = false): string | undefined => {
    let chosen = parts.filter((_, i) => keep(types[i]!));
    if (unique) chosen = [...new Set(chosen)];
    return chosen.length > 0 ? chosen.join("-") : undefined;
  };
  let basename = joined((t) => t.has("basename"));
  const sizeLabel = joined((t) => t.has("size_label"), true);
  const finetune = joined((t) => t.has("finetune"));
  const version = joined((t) => t.has("version") && !t.has("basename"));
  // Too ambiguous: no basename.
  if (sizeLabel === undefined && finetune === undefined && version === undefined) {
    basename = undefined;
  }
  return {
    fullName,
    ...(organization !== undefined ? { organization } : {}),
    ...(basename !== undefined ? { basename } : {}),
    ...(finetune !== undefined ? { finetune } : {}),
    ...(version !== undefined ? { version } : {}),
    ...(sizeLabel !== undefined ? { sizeLabel } : {}),
  };
}

/** Python's `float(text)` of a size's number part, or undefined where it raises. */
function pythonFloat(text: string): number | undefined {
  const t = text.trim();
  if (!/^[-+]?(?:\d+(?:_\d+)*(?:\.(?:\d+(?:_\d+)*)?)?|\.\d+(?:_\d+)*)(?:[eE][-+]?\d+)?$/.test(t)) {
    return undefined;
  }
  return Number(t.replaceAll("_", ""));
}

/** A base model or data set entry (`general.base_model.N.*`, `general.dataset.N.*`). */
export type SourceEntry = Record<string, unknown>;

/** gguf-py's `Metadata`, the fields the converter fills for a model. */
export interface GeneralMetadata {
  name?: unknown;
  author?: unknown;
  version?: unknown;
  organization?: unknown;
  finetune?: unknown;
  basename?: unknown;
  description?: unknown;
  quantized_by?: unknown;
  size_label?: unknown;
  url?: unknown;
  doi?: unknown;
  uuid?: unknown;
  repo_url?: unknown;
  source_url?: unknown;
  source_doi?: unknown;
  source_uuid?: unknown;
  source_repo_url?: unknown;
  license?: unknown;
  license_name?: unknown;
  license_link?: unknown;
  base_models?: SourceEntry[];
  tags?: unknown[];
  languages?: unknown[];
  datasets?: SourceEntry[];
}

/** The parameter counts gguf-py takes from the written tensors. */
export interface ParameterCounts {
  /** Every element. */
  total: number;
  /** Elements outside stacked experts. */
  shared: number;
  /** One expert's elements, summed over the expert tensors. */
  expert: number;
  /** Experts per stacked tensor (0: none). */
  expertCount: number;
}

/**
 * `GGUFWriter.get_total_parameter_count` over the written tensors (GGUF
 * names, shapes outermost first): stacked experts (`*_exps.*`, 3-D) count
 * one expert each in `expert`.
 *
 * @param tensors The tensors.
 * @returns The counts.
 */
export function parameterCounts(
  tensors: readonly { readonly name: string; readonly shape: readonly number[] }[],
): ParameterCounts {
  let total = 0;
  let shared = 0;
  let expert = 0;
  let expertSum = 0;
  let expertTensors = 0;
  for (const { name, shape } of tensors) {
    const size = shape.reduce((a, b) => a * b, 1);
    total += size;
    // Shapes run outermost first, as numpy's in gguf-py: the expert count is shape[-3].
    if (name.includes("_exps.") && shape.length >= 3) {
      const count = shape[name.includes(".bias") ? shape.length - 2 : shape.length - 3]!;
      expert += Math.trunc(size / count);
      expertSum += count;
      expertTensors++;
    } else {
      shared += size;
    }
  }
  const expertCount = expertTensors > 0 ? Math.trunc(expertSum / expertTensors) : 0;
  return { total, shared, expert, expertCount };
}

/**
 * gguf-py's rounded parameter count (`279K`, `1.3M`, `7.2B`): at least two
 * significant digits.
 *
 * @example Usage
 * ```ts
 * import { sizeLabel } from "./hf_model_card.ts";
 * console.assert(sizeLabel(7_241_732_096) === "7.2B");
 * ```
 *
 * @param count Parameters.
 * @returns The label.
 */
export function sizeLabel(count: number): string {
  const [scale, suffix] = count > 1e12
    ? [1e-12, "T"]
    : count > 1e9
    ? [1e-9, "B"]
    : count > 1e6
    ? [1e-6, "M"]
    : [1e-3, "K"];
  const scaled = count * scale;
  const digits = String(Math.round(scaled)).replace(/^0+/, "").length;
  return `${scaled.toFixed(Math.max(2 - digits, 0))}${suffix}`;
}

/**
 * `gguf.size_label`: `{experts}x{shared + one expert}` with stacked experts,
 * else the rounded total.
 *
 * @param counts The counts.
 * @returns The label.
 */
export function countsSizeLabel(counts: ParameterCounts): string {
  return counts.expertCount > 0
    ? `${counts.expertCount}x${sizeLabel(counts.shared + counts.expert)}`
    : sizeLabel(counts.total);
}

/** What {@linkcode generalMetadata} reads. */
export interface GeneralMetadataInputs {
  /** The model card's YAML header (`README.md`), parsed. */
  card?: Record<string, unknown> | undefined;
  /** `config.json`'s `_name_or_path`. */
  nameOrPath?: unknown;
  /** The model folder's own name (the last part of a Hub repository's id). */
  folder?: string | undefined;
  /** What the written tensors count. */
  counts: ParameterCounts;
}

const HTTP = ["http://", "https://", "ssh://"];

const OWN_FIELDS: readonly (readonly [keyof GeneralMetadata, string])[] = [
  ["name", "name"],
  ["author", "author"],
  ["version", "version"],
  ["organization", "organization"],
  ["description", "description"],
  ["finetune", "finetune"],
  ["basename", "basename"],
  ["size_label", "size_label"],
  ["source_url", "url"],
  ["source_doi", "doi"],
  ["source_uuid", "uuid"],
  ["source_repo_url", "repo_url"],
];

/**
 * The model card's single-valued keys gguf-py reads, in its order, each
 * with the field it fills (the first present wins): llama.cpp's own keys,
 * the same with `model_` (its Hugging Face style), then keys seen on the
 * Hub (TheBloke's cards).
 */
const CARD_FIELDS: readonly (readonly [keyof GeneralMetadata, string])[] = [
  ...OWN_FIELDS,
  ...OWN_FIELDS.map(([field, key]) => [field, `model_${key}`] as const),
  ["name", "model_name"],
  ["author", "model_creator"],
  ["basename", "model_type"],
];

/** Every model card key gguf-py's `Metadata.apply_metadata_heuristic` reads. */
export const MODEL_CARD_KEYS: readonly string[] = [
  ...new Set([
    ...CARD_FIELDS.map(([, key]) => key),
    "base_model",
    "base_models",
    "base_model_sources",
    "datasets",
    "dataset",
    "dataset_sources",
    "license",
    "license_name",
    "license_link",
    "tags",
    "pipeline_tag",
    "languages",
    "language",
  ]),
];

/** A base model or data set named in the card, as gguf-py describes it. */
function sourceEntry(id: unknown, totalParams: number): SourceEntry {
  if (id !== null && typeof id === "object" && !Array.isArray(id)) return { ...id };
  const entry: SourceEntry = {};
  if (typeof id !== "string") return entry;
  const describe = (hfId: string, withUrl: boolean): void => {
    const c = modelIdComponents(hfId, totalParams);
    if (c.fullName !== undefined) entry["name"] = idToTitle(c.fullName);
    if (c.organization !== undefined) entry["organization"] = idToTitle(c.organization);
    if (c.version !== undefined) entry["version"] = c.version;
    if (withUrl && c.organization !== undefined && c.fullName !== undefined) {
      entry["repo_url"] = `https://huggingface.co/${c.organization}/${c.fullName}`;
    }
  };
  if (HTTP.some((p) => id.startsWith(p))) {
    entry["repo_url"] = id;
    const m = id.includes("huggingface.co")
      ? /^https?:\/\/huggingface.co\/([^/]+\/[^/]+)$/.exec(id)
      : null;
    if (m !== null) describe(m[1]!, false);
  } else {
    describe(id, true);
  }
  return entry;
}

/**
 * gguf-py's `Metadata.load` for a converted folder (no override file, no
 * `--model-name`), then `prepare_metadata`'s fallbacks: the name is the
 * folder's, and the size label is counted from the tensors.
 *
 * @example Usage
 * ```ts
 * import { generalMetadata } from "./hf_model_card.ts";
 * const m = generalMetadata({
 *   card: { license: "apache-2.0", base_model: "Qwen/Qwen2.5-7B" },
 *   folder: "Qwen2.5-7B-Instruct",
 *   counts: { total: 7_615_616_512, shared: 7_615_616_512, expert: 0, expertCount: 0 },
 * });
 * console.assert(m.name === "Qwen2.5 7B Instruct" && m.size_label === "7B");
 * ```
 *
 * @param inputs The card, names and counts.
 * @returns The metadata.
 */
export function generalMetadata(inputs: GeneralMetadataInputs): GeneralMetadata {
  const total = inputs.counts.total;
  const m: GeneralMetadata = {};
  const card = inputs.card;
  if (card !== undefined) {
    const use = (field: keyof GeneralMetadata, key: string): void => {
      if (Object.hasOwn(card, key) && (m[field] === undefined || m[field] === null)) {
        (m as Record<string, unknown>)[field] = card[key];
      }
    };
    const useArray = (field: "tags" | "languages", key: string): void => {
      const value = card[key];
      if (value === undefined || value === null) return;
      const current = m[field] ?? [];
      if (typeof value === "string") current.push(value);
      else if (Array.isArray(value)) current.push(...value);
      m[field] = current;
    };
    for (const [field, key] of CARD_FIELDS) use(field, key);
    const sources = (keys: readonly string[]): SourceEntry[] | undefined => {
      if (!keys.some((k) => Object.hasOwn(card, k))) return undefined;
      const key = keys.find((k) => Object.hasOwn(card, k))!;
      const value = card[key];
      const ids = typeof value === "string" ? [value] : Array.isArray(value) ? value : [];
      return ids.map((id) => sourceEntry(id, total));
    };
    const baseModels = sources(["base_model", "base_models", "base_model_sources"]);
    if (baseModels !== undefined) m.base_models = baseModels;
    const datasets = sources(["datasets", "dataset", "dataset_sources"]);
    if (datasets !== undefined) m.datasets = datasets;
    use("license", "license");
    use("license_name", "license_name");
    use("license_link", "license_link");
    useArray("tags", "tags");
    useArray("tags", "pipeline_tag");
    useArray("languages", "languages");
    useArray("languages", "language");
  }
  const fromName = (id: string): void => {
    const c = modelIdComponents(id, total);
    const fill = (field: keyof GeneralMetadata, value: string | undefined): void => {
      if ((m[field] === undefined || m[field] === null) && value !== undefined) {
        (m as Record<string, unknown>)[field] = value;
      }
    };
    fill("name", c.fullName === undefined ? undefined : idToTitle(c.fullName));
    fill("organization", c.organization === undefined ? undefined : idToTitle(c.organization));
    fill("basename", c.basename);
    fill("finetune", c.finetune);
    fill("version", c.version);
    fill("size_label", c.sizeLabel);
  };
  // _name_or_path when it is a model id, not a path on someone's disk.
  const nameOrPath = inputs.nameOrPath;
  if (typeof nameOrPath === "string" && nameOrPath.split("/").length - 1 <= 1) {
    fromName(nameOrPath);
  }
  if (inputs.folder !== undefined) fromName(inputs.folder);
  if ((m.name === undefined || m.name === null) && inputs.folder !== undefined) {
    m.name = inputs.folder;
  }
  if ((m.size_label === undefined || m.size_label === null) && total > 0) {
    m.size_label = countsSizeLabel(inputs.counts);
  }
  return m;
}

/** One GGUF pair: key and entry (gguf-py's type names). */
export type GeneralPair = readonly [string, KvEntry];

/** The fields of a base model or data set entry, in the order gguf-py writes them. */
const ENTRY_FIELDS = [
  "name",
  "author",
  "version",
  "organization",
  "description",
  "url",
  "doi",
  "uuid",
  "repo_url",
] as const;

/** gguf-py's array element type of a list, or undefined where `_pack_val` raises. */
function arrayType(values: readonly unknown[]): KvType | undefined {
  const typeOf = (v: unknown): KvType | undefined =>
    typeof v === "string"
      ? "STRING"
      : typeof v === "boolean"
      ? "BOOL"
      : typeof v === "number" && Number.isInteger(v) && Math.abs(v) < 2 ** 31
      ? "INT32"
      : typeof v === "number"
      ? "FLOAT32"
      : undefined;
  const first = typeOf(values[0]);
  return values.every((v) => typeOf(v) === first) ? first : undefined;
}

/**
 * The pairs `Metadata.set_gguf_meta_model` writes (without the sampling
 * keys, written before them), in its order.
 *
 * @example Usage
 * ```ts
 * import { generalPairs } from "./hf_model_card.ts";
 * const pairs = generalPairs({ name: "Tiny", license: ["mit", "other"], tags: ["a"] });
 * console.assert(pairs.map((p) => p[0]).join() === "general.name,general.license,general.tags");
 * ```
 *
 * @param m The metadata.
 * @returns The pairs.
 */
export function generalPairs(m: GeneralMetadata): GeneralPair[] {
  const out: GeneralPair[] = [];
  const text = (key: string, value: unknown): void => {
    if (typeof value === "string") out.push([key, { type: "STRING", value }]);
  };
  text("general.name", m.name);
  text("general.author", m.author);
  text("general.version", m.version);
  text("general.organization", m.organization);
  text("general.finetune", m.finetune);
  text("general.basename", m.basename);
  text("general.description", m.description);
  text("general.quantized_by", m.quantized_by);
  text("general.size_label", m.size_label);
  const license = Array.isArray(m.license)
    ? (m.license.every((l) => typeof l === "string") ? m.license.join(",") : undefined)
    : m.license;
  text("general.license", license);
  text("general.license.name", m.license_name);
  text("general.license.link", m.license_link);
  text("general.url", m.url);
  text("general.doi", m.doi);
  text("general.uuid", m.uuid);
  text("general.repo_url", m.repo_url);
  text("general.source.url", m.source_url);
  text("general.source.doi", m.source_doi);
  text("general.source.uuid", m.source_uuid);
  text("general.source.repo_url", m.source_repo_url);
  for (
    const [prefix, entries] of [["base_model", m.base_models], ["dataset", m.datasets]] as const
  ) {
    if (entries === undefined) continue;
    out.push([`general.${prefix}.count`, { type: "UINT32", value: entries.length }]);
    entries.forEach((entry, id) => {
      for (const field of ENTRY_FIELDS) {
        if (Object.hasOwn(entry, field)) text(`general.${prefix}.${id}.${field}`, entry[field]);
      }
    });
  }
  for (
    const [key, list] of [["general.tags", m.tags], ["general.languages", m.languages]] as const
  ) {
    if (list === undefined || list.length === 0) continue;
    const type = arrayType(list);
    if (type !== undefined) {
      out.push([key, {
        type: "ARRAY",
        array_types: [type],
        value: list as (string | number | boolean)[],
      }]);
    }
  }
  return out;
}

/**
 * {@linkcode generalMetadata} of a converted model's APR metadata: its
 * `model_card` and `hf_config`'s `_name_or_path`, kept at import.
 *
 * @param metadata The APR metadata.
 * @param folder The model folder's name (`hf_folder_name`, kept at import).
 * @param counts What the written tensors count.
 * @returns The metadata.
 */
export function generalMetadataOf(
  metadata: ModelMetadata,
  folder: unknown,
  counts: ParameterCounts,
): GeneralMetadata {
  const card = metadata["model_card"];
  const config = metadata["hf_config"];
  return generalMetadata({
    card: card !== null && typeof card === "object" && !Array.isArray(card)
      ? card as Record<string, unknown>
      : undefined,
    nameOrPath: config !== null && typeof config === "object"
      ? (config as Record<string, unknown>)["_name_or_path"]
      : undefined,
    folder: typeof folder === "string" ? folder : undefined,
    counts,
  });
}

/** APR's fields that have a `general.*` GGUF key. */
export const APR_GENERAL_FIELDS = ["name", "author", "version", "description", "license"] as const;

/**
 * APR's name, author, version, description and licence from
 * {@linkcode generalMetadata}: strings only, a list of licences joined by
 * commas as gguf-py writes it.
 *
 * @param general The metadata.
 * @returns The fields.
 */
export function aprGeneralFields(general: GeneralMetadata): Partial<ModelMetadata> {
  const out: Partial<ModelMetadata> = {};
  for (const field of APR_GENERAL_FIELDS) {
    let value = general[field];
    if (Array.isArray(value) && value.every((v) => typeof v === "string")) value = value.join(",");
    if (typeof value === "string") out[field] = value;
  }
  return out;
}
