/**
 * Small file-system questions every sink asks: does the output exist (to
 * honour `--force`), and remove a partial file if it is there.
 *
 * @module
 */

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
