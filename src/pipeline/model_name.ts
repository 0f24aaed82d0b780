/**
 * The folder name llama.cpp's converter names a Hugging Face model after
 * (and reads its basename, size label, finetune and version from:
 * `formats/gguf/general_metadata.ts`).
 *
 * @module
 */

import { isHubRef, parseHubRef } from "../sources/hub_ref.ts";
import type { ModelLocation } from "./open_model.ts";
import { BlobFolder } from "../io/blob_folder.ts";
import { fs } from "../runtime/fs.ts";
import type { ModelMetadata } from "../tensor.ts";
import { generalMetadata } from "../formats/gguf/general_metadata.ts";

/**
 * The folder name of a model from a Hugging Face folder or repository: the
 * folder's base name, or for `hf://org/name[/sub]` the last part (the
 * folder a download would make). Undefined for other sources (a file, a
 * URL, a Blob).
 *
 * @param source Where the model was read from.
 * @param format The source model's format (only `"safetensors"` folders are named).
 * @returns The folder's name, or undefined.
 */
export async function hfFolderName(
  source: ModelLocation,
  format: string,
): Promise<string | undefined> {
  if (format !== "safetensors") return undefined;
  // A browser's picked folder is named as the same folder on disk.
  if (source instanceof BlobFolder) return source.name;
  if (typeof source !== "string") return undefined;
  let id: string;
  if (isHubRef(source)) {
    const ref = parseHubRef(source);
    id = `${ref.repoId}${ref.path ? `/${ref.path}` : ""}`;
  } else {
    const info = await fs.stat(source).catch(() => undefined);
    if (info?.isDirectory !== true) return undefined;
    // "." and "../x" name the folder they point to, as Python's Path(...).name after resolving.
    id = await fs.realPath(source).catch(() => source);
  }
  const name = id.replace(/[\\/]+$/, "").split(/[\\/]/).at(-1);
  return name === undefined || name === "" ? undefined : name;
}

/** APR's fields that have a `general.*` GGUF key, and the metadata field each takes. */
const APR_GENERAL_FIELDS = ["name", "author", "version", "description", "license"] as const;

/**
 * APR's name, author, version, description and licence of a converted
 * Hugging Face model, as llama.cpp's converter derives them (from the model
 * card, `config.json`'s `_name_or_path` and the folder's name); fields the
 * metadata already has are kept.
 *
 * @param metadata The APR metadata (its `model_card`, `hf_config`, `param_count`).
 * @param folder The model folder's name.
 * @returns The fields to set.
 */
export function aprGeneralFields(
  metadata: ModelMetadata,
  folder: string,
): Partial<ModelMetadata> {
  const card = metadata["model_card"];
  const config = metadata["hf_config"];
  const total = metadata.param_count ?? 0;
  const general = generalMetadata({
    card: card !== null && typeof card === "object" && !Array.isArray(card)
      ? card as Record<string, unknown>
      : undefined,
    nameOrPath: (config as Record<string, unknown> | undefined)?.["_name_or_path"],
    folder,
    counts: { total, shared: total, expert: 0, expertCount: 0 },
  });
  const out: Partial<ModelMetadata> = {};
  for (const field of APR_GENERAL_FIELDS) {
    if (metadata[field] !== undefined && metadata[field] !== null) continue;
    let value = general[field];
    // gguf-py writes a list of licences joined by commas.
    if (Array.isArray(value) && value.every((v) => typeof v === "string")) value = value.join(",");
    if (typeof value === "string") out[field] = value;
  }
  return out;
}
