// This module is browser compatible.

/**
 * Which files of a repository a model needs (DESIGN.md §2.4): the shards its
 * `model.safetensors.index.json` names, or `model.safetensors`, or a single
 * `.gguf` or split GGUF set (a quantization tag chooses one of several); plus
 * the companion JSON files. Never stray weights; `include` globs override the
 * choice.
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import { quoteName, unsafePathReason } from "./hub_names.ts";
import { jsonHoldsMoreThan } from "../io/json_depth.ts";
import { MAX_INDEX_ITEMS } from "../formats/safetensors/sharded.ts";
import {
  availableGgufTags as availableTags,
  ggufGroups,
  ggufSplitPath,
  parseGgufSplitPath,
} from "../formats/gguf/split.ts";

/** Companion files read for APR metadata, fetched when present. */
export const COMPANION_FILES: readonly string[] = [
  "config.json",
  "generation_config.json",
  // NVIDIA ModelOpt's quantization config (nvidia/…-FP8, …-FP4 checkpoints).
  "hf_quant_config.json",
  "preprocessor_config.json",
  "special_tokens_map.json",
  "tokenizer.json",
  "tokenizer_config.json",
];

/**
 * Companions of a SafeTensors model only: the model card, whose YAML header
 * gives a converted GGUF its licence, base models, tags… (model_card.ts), and
 * the tiktoken vocabularies of Hunyuan-A13B and Kimi (read without a
 * tokenizer.json). A GGUF carries its own.
 */
export const SAFETENSORS_COMPANION_FILES: readonly string[] = [
  "README.md",
  "hy.tiktoken",
  "tiktoken.model",
];

/** The index of a sharded SafeTensors model. */
export const INDEX_FILE = "model.safetensors.index.json";
/** The single-file SafeTensors model. */
export const SINGLE_FILE = "model.safetensors";

/** Options of {@linkcode selectModelFiles}. */
export interface SelectModelFilesOptions {
  /** A file or sub-folder of the repository (the path of an `hf://` reference). */
  path?: string | undefined;
  /** Globs (`*`, `**`, `?`) choosing files instead of the model rules. */
  include?: readonly string[] | undefined;
  /** A quantization tag (`hf://org/name:Q4_K_M`) choosing a GGUF file or split set. */
  quant?: string | undefined;
  /** `org/name`, `org/name@revision`, for messages that suggest a reference. */
  repo?: string | undefined;
}

/** GGUF names a message suggests at most. */
const SUGGESTED_GGUFS = 3;

/**
 * Choose the files to fetch.
 *
 * @param files Every file of the repository.
 * @param readText Read a small file of the repository (used for the index).
 * @param options Sub-path and include globs.
 * @returns The chosen paths, sorted; the index first in importance but sorted here.
 * @throws {TypeError} When nothing matches, naming what was looked for.
 */
export async function selectModelFiles(
  files: readonly string[],
  readText: (path: string) => Promise<string>,
  options: SelectModelFilesOptions = {},
): Promise<string[]> {
  const all = new Set(files);
  if (options.include !== undefined && options.include.length > 0) {
    const patterns = options.include.map(globToRegExp);
    const chosen = files.filter((f) => patterns.some((p) => p.test(f)));
    if (chosen.length === 0) {
      throw new UsageError(
        `Cannot select files: no file matches ${options.include.map((g) => `"${g}"`).join(", ")}`,
      );
    }
    return checkedPaths([...new Set(chosen)].sort());
  }
  const path = options.quant !== undefined ? selectQuant(files, options.quant)[0] : options.path;
  if (path !== undefined && all.has(path)) {
    // A reference naming one file selects that file (with the rest of its
    // split GGUF set) and its folder's companions.
    const folder = path.includes("/") ? path.slice(0, path.lastIndexOf("/") + 1) : "";
    return checkedPaths(
      [...splitSiblings(all, path), ...companions(all, folder, path.endsWith(".safetensors"))]
        .filter(unique).sort(),
    );
  }
  const folder = path === undefined ? "" : `${path}/`;
  if (path !== undefined && !files.some((f) => f.startsWith(folder))) {
    throw new TypeError(
      `Cannot select files: "${path}" is neither a file nor a folder of the repository`,
    );
  }
  const chosen: string[] = [];
  let safetensors = true;
  if (all.has(folder + INDEX_FILE)) {
    const indexPath = folder + INDEX_FILE;
    chosen.push(indexPath, ...shardsOf(await readText(indexPath), indexPath, folder));
  } else if (all.has(folder + SINGLE_FILE)) {
    chosen.push(folder + SINGLE_FILE);
  } else {
    const ggufs = files.filter((f) =>
      f.startsWith(folder) && !f.slice(folder.length).includes("/") && f.endsWith(".gguf")
    );
    const groups = ggufGroups(ggufs);
    safetensors = false;
    if (groups.length === 1) {
      chosen.push(...groups[0]!.files);
    } else if (groups.length > 1) {
      // Say the real names, as a user would type them; several quantizations
      // of one model is the usual reason: a tag or --include chooses one.
      const repo = options.repo ?? "org/name";
      const shown = groups.slice(0, SUGGESTED_GGUFS).map((g) => `hf://${repo}/${g.files[0]}`);
      const more = groups.length > SUGGESTED_GGUFS
        ? ` (or one of ${groups.length - SUGGESTED_GGUFS} more)`
        : "";
      throw new UsageError(
        `Cannot select files: ${groups.length} GGUF files or split sets in "${
          folder || "/"
        }"; name one, e.g. ${shown.join(", ")}${more}, or a quantization, hf://${repo}:TAG (${
          availableTags(groups)
        }), or choose with --include GLOB (e.g. --include '${folder}*Q4_K_M*.gguf')`,
      );
    } else {
      throw new TypeError(
        `Cannot select files: no ${INDEX_FILE}, ${SINGLE_FILE} or .gguf file in "${folder || "/"}"`,
      );
    }
  }
  return checkedPaths(
    [...chosen, ...companions(all, folder, safetensors)].filter(unique).sort(),
  );
}

/**
 * The files of the one GGUF model whose name carries quantization tag
 * `quant` (case-insensitive, as llama.cpp's `-hf repo:quant` matches
 * `TAG.` or `TAG-` in a file name).
 *
 * @param files Every file of the repository.
 * @param quant The tag, e.g. `"q4_k_m"`.
 * @returns The chosen file, or the split set's shards in order.
 * @throws {TypeError} When no model or several carry the tag, listing the tags there are.
 */
export function selectQuant(files: readonly string[], quant: string): string[] {
  const groups = ggufGroups(files);
  const escaped = quant.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const pattern = new RegExp(`(^|[-./_])${escaped}[.-]`, "i");
  const matches = groups.filter((g) =>
    pattern.test(g.files[0]!.slice(g.files[0]!.lastIndexOf("/") + 1))
  );
  if (matches.length === 1) return [...matches[0]!.files];
  if (matches.length === 0) {
    throw new TypeError(
      `Cannot select files: no GGUF file or split set of quantization "${quant}" ` +
        `(${groups.length === 0 ? "the repository has no GGUF model" : availableTags(groups)})`,
    );
  }
  throw new TypeError(
    `Cannot select files: ${matches.length} GGUF models match "${quant}" (${
      matches.map((g) => g.files[0]).join(", ")
    }); name one with hf://org/name/PATH`,
  );
}

/** A split shard's whole set (those of its files the repository lists), or the file alone. */
function splitSiblings(all: ReadonlySet<string>, path: string): string[] {
  const split = parseGgufSplitPath(path);
  if (split === undefined || split.count < 2) return [path];
  const shards = Array.from(
    { length: split.count },
    (_, i) => ggufSplitPath(split.prefix, i, split.count),
  );
  return [path, ...shards.filter((s) => all.has(s))];
}

/** Every chosen name came from the server: none may leave the snapshot folder (docs/SECURITY.md). */
function checkedPaths(paths: string[]): string[] {
  for (const path of paths) {
    const reason = unsafePathReason(path);
    if (reason !== undefined) {
      throw new TypeError(
        `Cannot select files: the repository lists the unsafe file name ${
          quoteName(path)
        } (${reason})`,
      );
    }
  }
  return paths;
}

function unique(value: string, index: number, array: string[]): boolean {
  return array.indexOf(value) === index;
}

function companions(all: ReadonlySet<string>, folder: string, safetensors: boolean): string[] {
  const names = safetensors
    ? [...COMPANION_FILES, ...SAFETENSORS_COMPANION_FILES]
    : COMPANION_FILES;
  return names.map((f) => folder + f).filter((f) => all.has(f));
}

/** The shard files an index names (FORMATS.md §2), checked to be safe names (I4). */
function shardsOf(text: string, indexPath: string, folder: string): string[] {
  if (jsonHoldsMoreThan(text, MAX_INDEX_ITEMS)) {
    throw new TypeError(
      `Cannot select files: "${indexPath}" has more than ${MAX_INDEX_ITEMS} entries`,
    );
  }
  let index: unknown;
  try {
    index = JSON.parse(text);
  } catch (error) {
    throw new TypeError(`Cannot select files: "${indexPath}" is not JSON`, {
      cause: error,
    });
  }
  const weightMap = (index as { weight_map?: unknown } | null)?.weight_map;
  if (typeof weightMap !== "object" || weightMap === null || Array.isArray(weightMap)) {
    throw new TypeError(
      `Cannot select files: "${indexPath}" has no weight_map object`,
    );
  }
  const shards = new Set<string>();
  for (const [tensor, shard] of Object.entries(weightMap)) {
    if (typeof shard !== "string") {
      throw new TypeError(
        `Cannot select files: "${indexPath}" maps "${tensor}" to a non-string`,
      );
    }
    const reason = shard.includes("://") ? "it is a URL" : unsafePathReason(shard);
    if (reason !== undefined) {
      throw new TypeError(
        `Cannot select files: "${indexPath}" names an unsafe shard ${quoteName(shard)}: ${reason}`,
      );
    }
    shards.add(folder + shard);
  }
  return [...shards];
}

/**
 * Translate a glob to a regular expression: `**` crosses folders, `*` and `?`
 * do not.
 *
 * @param glob The pattern.
 * @returns A regular expression matching whole paths.
 */
export function globToRegExp(glob: string): RegExp {
  let source = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") {
      if (glob[i + 1] === "*") {
        i++;
        if (glob[i + 1] === "/") {
          i++;
          source += "(?:.*/)?";
        } else {
          source += ".*";
        }
      } else {
        source += "[^/]*";
      }
    } else if (c === "?") {
      source += "[^/]";
    } else {
      source += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
    }
  }
  return new RegExp(`^${source}$`);
}
