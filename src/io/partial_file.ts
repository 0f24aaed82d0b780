/**
 * The life of an output file, shared by every sink: written as
 * `OUT.partial` (plus, for APR, `OUT.partial.journal`), renamed to `OUT` when
 * complete, removed when it cannot be resumed.
 *
 * The output folder may be writable by someone else (docs/SECURITY.md, "Local
 * attacker"): a symbolic link planted at `OUT.partial` must not make aprkit
 * truncate or overwrite the file it points to, and `OUT` is only ever replaced
 * when it is a regular file. So a fresh partial is created exclusively after
 * removing whatever entry is there (a link is removed as a link; its target is
 * untouched), a partial resumed from must be a regular file, and the rename
 * checks what it replaces.
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import { assertOutputFree, removeIfExists } from "./fs_paths.ts";
import { type FileInfo, fs, type RuntimeFile } from "../runtime/fs.ts";

/**
 * The partial file of an output.
 *
 * @param path The final path.
 * @returns `path + ".partial"`.
 */
export function partialPathOf(path: string): string {
  return `${path}.partial`;
}

/**
 * Create a new, empty file for writing (and reading back), never following a
 * link: an existing file or link at `path` is removed first, then the file is
 * created exclusively, so a link planted in between fails the call instead of
 * being followed.
 *
 * @param path The partial file (or journal).
 * @returns The open handle.
 * @throws {UsageError} When `path` is a directory.
 */
export async function createFreshFile(path: string): Promise<RuntimeFile> {
  await assertNotDirectory(path);
  await removeIfExists(path);
  return await fs.open(path, { read: true, write: true, createNew: true });
}

/**
 * Open an existing partial file to resume writing it; it must be a regular
 * file, not a link to one.
 *
 * @param path The partial file.
 * @returns The open handle.
 * @throws {UsageError} When `path` is not a regular file.
 * @throws {Deno.errors.NotFound} When it does not exist.
 */
export async function openExistingFile(path: string): Promise<RuntimeFile> {
  await assertRegularFile(path);
  return await fs.open(path, { read: true, write: true });
}

/**
 * Check that a file to resume from (a partial output, a journal) is a regular
 * file, not a link planted in its place.
 *
 * @param path The file.
 * @throws {UsageError} When `path` is not a regular file.
 * @throws {Deno.errors.NotFound} When it does not exist.
 */
export async function assertRegularFile(path: string): Promise<void> {
  const info = await fs.lstat(path);
  if (!info.isFile) {
    throw new UsageError(
      `Cannot resume "${path}": it is ${describeEntry(info)}, not a regular file; remove it`,
    );
  }
}

/**
 * Write a whole small file (a manifest, a journal's first line, an LZ4 image)
 * the way {@linkcode createFreshFile} creates one.
 *
 * @param path The file.
 * @param data Its content.
 */
export async function writeFreshFile(path: string, data: Uint8Array | string): Promise<void> {
  const file = await createFreshFile(path);
  try {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    for (let written = 0; written < bytes.length;) {
      written += await file.write(bytes.subarray(written));
    }
  } finally {
    file.close();
  }
}

/**
 * Rename a complete partial file to its final name. The final name may hold
 * nothing, or a regular file when `force` is set; anything else (a directory,
 * a link) is refused, so a rename never replaces what it should not.
 *
 * @param partial The complete partial file.
 * @param path The final path.
 * @param force Whether an existing regular file may be replaced.
 * @throws {UsageError} When `path` exists without `force`, or is not a regular file.
 */
export async function renameIntoPlace(
  partial: string,
  path: string,
  force: boolean | undefined,
): Promise<void> {
  await assertOutputFree(path, force); // a regular file (with force) or nothing
  await fs.rename(partial, path);
}

/**
 * Remove a partial file (or journal) if it exists; a link is removed as a link.
 *
 * @param path The file.
 */
export async function discardFile(path: string): Promise<void> {
  await removeIfExists(path);
}

async function assertNotDirectory(path: string): Promise<void> {
  try {
    const info = await fs.lstat(path);
    if (info.isDirectory) {
      throw new UsageError(`Cannot write "${path}": it is a directory`);
    }
  } catch (error) {
    if (!(error instanceof fs.errors.NotFound)) throw error;
  }
}

function describeEntry(info: FileInfo): string {
  if (info.isSymlink) return "a symbolic link";
  if (info.isDirectory) return "a directory";
  return "not a regular file";
}
