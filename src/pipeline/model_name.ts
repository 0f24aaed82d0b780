/**
 * The folder name llama.cpp's converter names a Hugging Face model after
 * (and reads its basename, size label, finetune and version from:
 * `arch/hf_model_card.ts`).
 *
 * @module
 */

import { isHubRef, parseHubRef } from "../sources/hub_ref.ts";
import type { ModelLocation } from "./open_model.ts";
import { BlobFolder } from "../io/blob_folder.ts";
import { fs } from "../runtime/fs.ts";

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
