/**
 * Small file-system questions every sink asks: does the output exist (to
 * honour `--force`), and remove a partial file if it is there.
 *
 * @module
 */

import { UsageError } from "../errors.ts";

/**
 * Whether anything (file, folder or link, even a dangling one) is at `path`.
 *
 * @param path The path.
 * @returns `true` when something is there.
 * @throws {Error} For failures other than "not found" (e.g. permission denied).
 */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/**
 * Refuse to replace an existing output unless `force` is set: every writer
 * checks this before starting and again before its final rename.
 *
 * @param path The output path.
 * @param force Whether replacing it is allowed.
 * @throws {UsageError} When `path` exists and `force` is not set.
 */
export async function assertOutputFree(path: string, force: boolean | undefined): Promise<void> {
  if (force !== true && await pathExists(path)) {
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
    await Deno.remove(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}
