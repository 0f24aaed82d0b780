/**
 * The name llama.cpp's converter gives a Hugging Face model that names
 * itself nowhere: its folder's (or repository's) name in title form.
 *
 * @module
 */

import { isHubRef, parseHubRef } from "../sources/hub_ref.ts";
import type { ModelLocation } from "./open_model.ts";
import { BlobFolder } from "../io/blob_folder.ts";
import { fs } from "../runtime/fs.ts";

/**
 * gguf-py's `Metadata.id_to_title` (c392e50): `-` becomes a space; an
 * all-lowercase word is title-cased (a letter after a non-letter is upper
 * case, as Python's `str.title`) unless it is a version (`v1.2`) or starts
 * with a digit; other words are kept.
 *
 * @example Usage
 * ```ts
 * import { idToTitle } from "./model_name.ts";
 * console.assert(idToTitle("tiny-llama") === "Tiny Llama");
 * console.assert(idToTitle("Meta-Llama-3-8B") === "Meta Llama 3 8B");
 * ```
 *
 * @param id A folder or repository name.
 * @returns The title.
 */
export function idToTitle(id: string): string {
  return id.trim().replaceAll("-", " ").split(/\s+/).filter((w) => w !== "").map((word) => {
    const lower = word === word.toLowerCase() && word !== word.toUpperCase();
    if (!lower || /^(v\d+(?:\.\d+)*|\d.*)$/.test(word)) return word;
    let out = "";
    let afterLetter = false;
    for (const c of word) {
      const letter = c.toLowerCase() !== c.toUpperCase();
      out += letter ? (afterLetter ? c.toLowerCase() : c.toUpperCase()) : c;
      afterLetter = letter;
    }
    return out;
  }).join(" ");
}

/**
 * The converter's fallback name for a model from a Hugging Face folder or
 * repository: the folder's base name, or for `hf://org/name[/sub]` the last
 * part, in title form. Undefined for other sources (a file, a URL, a Blob).
 *
 * @param source Where the model was read from.
 * @param format The source model's format (only `"safetensors"` folders are named).
 * @returns The name, or undefined.
 */
export async function hfFolderName(
  source: ModelLocation,
  format: string,
): Promise<string | undefined> {
  if (format !== "safetensors") return undefined;
  // A browser's picked folder is named as the same folder on disk.
  if (source instanceof BlobFolder) return idToTitle(source.name);
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
  return name === undefined || name === "" ? undefined : idToTitle(name);
}
