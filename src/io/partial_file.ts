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
 * Two runs writing one output (docs/SECURITY.md, "Two writers"): the handle
 * of a partial file holds an exclusive OS lock (`flock`), which the OS drops
 * when the process ends however it ends. A second writer tests that lock
 * before it removes or opens anything, and is refused at once — with
 * `--force` too, which replaces a finished output, not a run in progress. The
 * rename into place checks that `OUT.partial` is still the file this process
 * created (same device and inode), so a run never renames a file it did not
 * write.
 *
 * @module
 */

import { HubAnswerError, ModelFormatError, UsageError } from "../errors.ts";
import { assertOutputFree, lstatIfExists, removeIfExists } from "./fs_paths.ts";
import { type FileInfo, fs, type RuntimeFile } from "../runtime/fs.ts";
import { storageFailure } from "./storage_errors.ts";

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
 * Whether a failure means the input itself is bad, so a resumable output
 * (an APR partial and its journal, a split GGUF set's completed shards) must
 * leave nothing to resume from: a resume would reuse bytes written from a bad
 * source. Every other failure (an interruption, a full disk, a refused
 * option) keeps what a resume can use. A `HubAnswerError` is content that
 * failed its sha256; a `TypeError` or `RangeError` is a value the input
 * carried that the writer cannot take. A `UsageError` (also a `TypeError`)
 * is the command, not the input: it keeps.
 *
 * @param reason Why the output failed.
 * @returns `true` when the partial output must be removed.
 */
export function isBadInput(reason: unknown): boolean {
  if (reason instanceof UsageError) return false;
  return reason instanceof ModelFormatError || reason instanceof TypeError ||
    reason instanceof RangeError || reason instanceof HubAnswerError;
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
  await assertNotLocked(path);
  await removeIfExists(path);
  const file = await fs.open(path, { read: true, write: true, createNew: true });
  await lockOrRefuse(file, path);
  return file;
}

/**
 * The identity (device, inode) of each partial file this process holds, by
 * path: what {@linkcode renameIntoPlace} expects to find there.
 */
const held = new Map<string, { id: string; sealed: boolean }>();

/**
 * A file's identity: device and inode; for a sealed file (closed, complete)
 * also its size and times, since a removed file's inode number is soon
 * given to the next file created.
 */
function identity(info: FileInfo, sealed = false): string | undefined {
  if (info.ino === null) return undefined;
  const id = `${info.dev}:${info.ino}`;
  return sealed
    ? `${id}:${info.size}:${info.mtime?.getTime() ?? ""}:${info.ctime?.getTime() ?? ""}`
    : id;
}

/**
 * Record a partial file this process created as complete and closed (a
 * split set's finished shard): from now on it must also keep its size and
 * times until it is renamed, so a file put in its place after its inode was
 * freed is not taken for it.
 *
 * @param path The partial file, closed.
 */
export async function sealHeld(path: string): Promise<void> {
  if (!held.has(path)) return;
  const id = identity(await fs.lstat(path), true);
  if (id === undefined) held.delete(path);
  else held.set(path, { id, sealed: true });
}

/**
 * Whether partial files are locked: `flock` is advisory on Unix, but
 * Windows' `LockFileEx` is mandatory and would stop this process's own
 * second handles (the resume verifier, the sync handle) from reading.
 */
const LOCKING = globalThis.Deno?.build.os !== "windows";

/** Lock `file` (open at `path`) exclusively, or close it and refuse. */
async function lockOrRefuse(file: RuntimeFile, path: string): Promise<void> {
  let locked = true;
  try {
    if (LOCKING && file.tryLock) locked = await file.tryLock(true);
  } catch {
    // A file system without locks (some network mounts): work as before.
  }
  if (!locked) {
    file.close();
    throw busy(path);
  }
  const id = identity(await file.stat());
  if (id !== undefined) held.set(path, { id, sealed: false });
}

function busy(path: string): UsageError {
  return new UsageError(
    `Cannot write "${path}": another process is writing it (it holds its lock); wait for that run to finish or choose another output (force: true does not stop a run in progress)`,
  );
}

/**
 * Refuse when another process holds the lock of the partial file at `path`
 * (a run in progress); a partial left by a run that ended is not locked.
 *
 * @param path The partial file.
 * @throws {UsageError} When another process is writing it.
 */
export async function assertNotLocked(path: string): Promise<void> {
  const info = await lstatIfExists(path);
  if (info === undefined) return;
  if (!LOCKING || !info.isFile) return; // a link or anything else is removed, never opened
  let probe: RuntimeFile;
  try {
    probe = await fs.open(path, { read: true });
  } catch {
    return; // gone or unreadable: the remove or create that follows reports it
  }
  try {
    let free: boolean;
    try {
      free = probe.tryLock ? await probe.tryLock(true) : true;
    } catch {
      free = true; // no locks on this file system
    }
    if (!free) throw busy(path);
  } finally {
    probe.close(); // closing drops the probe's own lock
  }
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
  const file = await fs.open(path, { read: true, write: true });
  await lockOrRefuse(file, path);
  return file;
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
  } catch (error) {
    throw storageFailure(error, path, "write");
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
 * @throws {UsageError} When `path` exists without `force`, or is not a regular
 * file, or when `partial` is no longer the file this process created.
 */
export async function renameIntoPlace(
  partial: string,
  path: string,
  force: boolean | undefined,
): Promise<void> {
  await assertOutputFree(path, force); // a regular file (with force) or nothing
  await assertStillHeld(partial, path);
  await fs.rename(partial, path);
  held.delete(partial);
}

/**
 * Refuse when a file this process created and locked (a partial output, a
 * set's journal) is no longer the file at its path: another process removed
 * or replaced it behind the lock. Files this process did not create (a
 * completed shard kept for a resume) are not checked.
 *
 * @param partial The file.
 * @param path The output it serves, for the message.
 * @throws {UsageError} When `partial` is not the file this process created.
 */
export async function assertStillHeld(partial: string, path: string): Promise<void> {
  const expected = held.get(partial);
  if (expected === undefined) return;
  const found = await fs.lstat(partial).then(
    (info) => identity(info, expected.sealed),
    () => undefined,
  );
  if (found !== expected.id) {
    held.delete(partial);
    throw new UsageError(
      `Cannot write "${path}": "${partial}" was replaced or removed by another process while this run wrote it; nothing was renamed, run again`,
    );
  }
}

/**
 * Rename every complete partial file of a set (a split GGUF set's shards) to
 * its final name, all or none: every member is checked first (its final name
 * free, or a regular file with `force`; its partial still the file this
 * process wrote), and when a rename fails after others succeeded, those are
 * renamed back to their partial names, so no half set is ever published.
 *
 * @param members Each partial file and its final path, in order.
 * @param force Whether existing regular files may be replaced.
 * @throws {UsageError} When a member's final name is taken or its partial was replaced.
 */
export async function renameSetIntoPlace(
  members: readonly { readonly partial: string; readonly path: string }[],
  force: boolean | undefined,
): Promise<void> {
  for (const m of members) {
    await assertOutputFree(m.path, force);
    await assertStillHeld(m.partial, m.path);
  }
  const done: { partial: string; path: string }[] = [];
  try {
    for (const m of members) {
      await fs.rename(m.partial, m.path);
      held.delete(m.partial);
      done.push(m);
    }
  } catch (error) {
    // Take the set back out of place: its completed shards stay for a resume.
    for (const m of done.reverse()) await fs.rename(m.path, m.partial).catch(() => {});
    throw error;
  }
}

/**
 * The refusal of a resume whose source changed since the partial output was
 * written (`source_identity.ts`): what was committed came from other bytes.
 *
 * @param output The output.
 * @param partial The partial file (or set journal) written from the old source.
 * @returns The error to throw.
 */
export function sourceChangedError(output: string, partial: string): UsageError {
  return new UsageError(
    `Cannot resume "${output}": its source changed since "${partial}" was written (a source file was modified, replaced or moved), so the committed tensors came from other bytes; run with force: true to start over`,
  );
}

/**
 * Remove a partial file (or journal) if it exists; a link is removed as a link.
 *
 * @param path The file.
 */
export async function discardFile(path: string): Promise<void> {
  held.delete(path);
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
