// This module is browser compatible.

/**
 * A folder of `Blob`s as {@linkcode ModelFiles}: what a browser gives for a
 * picked or dropped folder (`<input webkitdirectory>`: `File`s with their
 * `webkitRelativePath`), so a sharded model (an index and its shards) opens
 * as it does from a local folder, nothing read until a tensor is.
 *
 * @module
 */

import { BlobSource } from "./blob_source.ts";
import type { ByteSource } from "./byte_source.ts";
import type { ModelFiles } from "./model_files.ts";

/** Most files a folder may hold, as for a local folder's listing. */
const MAX_FOLDER_FILES = 100_000;

/** A folder of blobs, by relative `/`-separated path. */
export class BlobFolder implements ModelFiles {
  /** The folder's name (its base name: what names an imported Hugging Face folder). */
  readonly name: string;
  #files: Map<string, Blob>;

  /**
   * Name a folder of blobs.
   *
   * @param name The folder's name.
   * @param files Each file by its path inside the folder (`/`-separated).
   * @throws {TypeError} For an empty name, too many files, or a path that is empty, absolute or has a `..` or `.` segment.
   */
  constructor(name: string, files: Map<string, Blob>) {
    if (typeof name !== "string" || name === "") {
      throw new TypeError("Cannot open a folder of files: its name is empty");
    }
    if (files.size > MAX_FOLDER_FILES) {
      throw new TypeError(
        `Cannot open "${name}": ${files.size} files, more than ${MAX_FOLDER_FILES}`,
      );
    }
    for (const path of files.keys()) {
      if (
        path === "" || path.startsWith("/") ||
        path.split("/").some((s) => s === ".." || s === "." || s === "")
      ) {
        throw new TypeError(`Cannot open "${name}": unsafe file path ${JSON.stringify(path)}`);
      }
    }
    this.name = name;
    this.#files = new Map(files);
  }

  /**
   * The folder a browser gives for `<input type="file" webkitdirectory>`
   * (or a drop): files named by `webkitRelativePath`, whose first segment is
   * the folder.
   *
   * @param files The picked files.
   * @returns The folder.
   * @throws {TypeError} When the files are not one folder's.
   */
  static fromFiles(files: Iterable<File>): BlobFolder {
    const byPath = new Map<string, Blob>();
    let folder: string | undefined;
    for (const file of files) {
      const relative = (file as File & { webkitRelativePath?: string }).webkitRelativePath ||
        file.name;
      const slash = relative.indexOf("/");
      const top = slash < 0 ? "" : relative.slice(0, slash);
      if (folder !== undefined && top !== folder) {
        throw new TypeError(
          `Cannot open a folder of files: "${relative}" is not in "${folder}" with the others`,
        );
      }
      folder = top;
      byPath.set(slash < 0 ? relative : relative.slice(slash + 1), file);
    }
    if (folder === undefined) throw new TypeError("Cannot open a folder of files: it is empty");
    return new BlobFolder(folder || "folder", byPath);
  }

  /**
   * Every file's path, sorted.
   * Never throws.
   *
   * @returns The paths.
   */
  list(): Promise<string[]> {
    return Promise.resolve([...this.#files.keys()].sort());
  }

  /**
   * Open one file.
   *
   * @param path Its path in the folder.
   * @returns The file as a byte source.
   * @throws {TypeError} When the folder has no such file.
   */
  open(path: string): Promise<ByteSource> {
    const blob = this.#files.get(path);
    if (blob === undefined) {
      return Promise.reject(new TypeError(`Cannot open "${this.locate(path)}": no such file`));
    }
    return Promise.resolve(new BlobSource(blob, this.locate(path)));
  }

  /**
   * A file's location, for messages.
   * Never throws.
   *
   * @param path Its path in the folder.
   * @returns `folder/path`.
   */
  locate(path: string): string {
    return `${this.name}/${path}`;
  }
}
