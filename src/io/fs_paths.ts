/**
 * Small file-system questions every sink asks: does the output exist (to
 * honour `--force`), and remove a partial file if it is there.
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import { type FileInfo, fs } from "../runtime/fs.ts";

/**
 * Whether anything (file, folder or link, even a dangling one) is at `path`.
 *
 * @param path The path.
 * @returns `true` when something is there.
 * @throws {Error} For failures other than "not found" (e.g. permission denied).
 */
export async function pathExists(path: string): Promise<boolean> {
  return (await lstatIfExists(path)) !== undefined;
}

/**
 * What is at `path` (not following a link), or `undefined` when nothing is.
 *
 * @param path The path.
 * @returns Its info, or `undefined`.
 * @throws {Error} For failures other than "not found" (e.g. permission denied).
 */
export async function lstatIfExists(path: string): Promise<FileInfo | undefined> {
  try {
    return await fs.lstat(path);
  } catch (error) {
    if (error instanceof fs.errors.NotFound) return undefined;
    throw error;
  }
}

/**
 * Refuse to replace an existing output unless `force` is set, and never
 * replace anything but a regular file (a planted link or a folder): every
 * writer checks this before starting, for every output it will rename into
 * place (shards, manifest, index), and again before each final rename.
 *
 * @param path The output path.
 * @param force Whether replacing a regular file is allowed.
 * @throws {UsageError} When `path` exists and `force` is not set, or is not a regular file.
 */
export async function assertOutputFree(path: string, force: boolean | undefined): Promise<void> {
  const info = await lstatIfExists(path);
  if (info === undefined) return;
  // What force cannot replace is said first: "use force" would not help.
  if (!info.isFile) {
    const what = info.isSymlink
      ? "a symbolic link"
      : info.isDirectory
      ? "a directory"
      : "not a regular file";
    throw new UsageError(`Cannot write "${path}": it is ${what}; only a regular file is replaced`);
  }
  if (force !== true) {
    throw new UsageError(`Cannot write "${path}": it exists; use force: true to overwrite it`);
  }
}

/**
 * Remove a file if it exists.
 *
 * @param path The file.
 * @throws {Error} For failures other than "not found".
 */
export async function removeIfExists(path: string): Promise<void> {
  try {
    await fs.remove(path);
  } catch (error) {
    if (!(error instanceof fs.errors.NotFound)) throw error;
  }
}
