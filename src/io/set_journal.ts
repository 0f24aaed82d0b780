/**
 * The journal of an output written as a set of files (a split GGUF set,
 * a sharded APR or SafeTensors output), which is also the set's lock (docs/SECURITY.md,
 * "Two writers"). One file per set is locked for the whole run, from before
 * anything of the set is touched until the set is published or given up:
 * the shards' own partial files are each locked only while written, so
 * without it a second run could remove a completed shard of the first and
 * write its own in its place, and the first would publish a set mixing both.
 *
 * The journal is created exclusively and locked (`createFreshFile`), or, to
 * resume, opened only when it is a regular file and not locked
 * (`openExistingFile`); it is written through the held handle, and checked
 * to still be the file at its path before the set is published.
 *
 * Not browser compatible: it writes files.
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import { fs, type RuntimeFile } from "../runtime/fs.ts";
import { join } from "../runtime/path.ts";
import { pathExists, removeIfExists } from "./fs_paths.ts";
import {
  assertStillHeld,
  createFreshFile,
  discardFile,
  openExistingFile,
  sourceChangedError,
} from "./partial_file.ts";
import { storageFailure } from "./storage_errors.ts";

/** Largest set journal read back: a line per shard, at most 65,535 shards of ~100 bytes. */
export const MAX_SET_JOURNAL_BYTES = 16 * 1024 * 1024;

/** A set's journal, held open and locked by this run. */
export class SetJournal {
  /** The journal's path. */
  readonly path: string;
  #file: RuntimeFile | undefined;

  private constructor(path: string, file: RuntimeFile) {
    this.path = path;
    this.#file = file;
  }

  /**
   * Start a set afresh: whatever journal is at `path` is replaced (unless
   * another run holds it), and the new one is locked.
   *
   * @param path The journal (`OUT.partial.journal`).
   * @returns The held journal, empty.
   * @throws {UsageError} When another process is writing the set.
   */
  static async create(path: string): Promise<SetJournal> {
    return new SetJournal(path, await createFreshFile(path));
  }

  /**
   * Take over the journal a previous run left, to resume it.
   *
   * @param path The journal.
   * @param output The output, for messages.
   * @returns The held journal and its text, or `undefined` when there is none.
   * @throws {UsageError} When another process is writing the set, or the journal is not a regular file or too large.
   */
  static async resume(
    path: string,
    output: string,
  ): Promise<{ journal: SetJournal; text: string } | undefined> {
    if (!(await pathExists(path))) return undefined;
    const file = await openExistingFile(path);
    const journal = new SetJournal(path, file);
    try {
      const { size } = await file.stat();
      if (size > MAX_SET_JOURNAL_BYTES) {
        throw new UsageError(
          `Cannot resume "${output}": its journal "${path}" is ${size} bytes, more than any split output writes (${MAX_SET_JOURNAL_BYTES}); run without --resume to start over`,
        );
      }
      const bytes = new Uint8Array(size);
      for (let at = 0; at < size;) {
        const n = await file.read(bytes.subarray(at));
        if (n === null) break;
        at += n;
      }
      return { journal, text: new TextDecoder().decode(bytes) };
    } catch (error) {
      journal.close();
      throw error;
    }
  }

  /**
   * Take the set's lock and start its journal with the plan (and the
   * source's identity): afresh, or with `resume` from the journal a
   * previous run left, which must record the same plan and source.
   *
   * @param path The journal.
   * @param output The output, for messages.
   * @param start The plan's hash, the source's identity, whether to resume,
   *   and which of a resumed journal's later lines stay (all by default;
   *   e.g. the shards still as recorded).
   * @returns The held journal, holding the plan line and the lines kept.
   * @throws {UsageError} When another process is writing the set, or a resumed journal records another plan or source.
   */
  static async begin(
    path: string,
    output: string,
    start: {
      plan: string;
      source?: string | undefined;
      resume: boolean;
      keep?: (lines: string[]) => Promise<string[]>;
    },
  ): Promise<SetJournal> {
    const found = start.resume ? await SetJournal.resume(path, output) : undefined;
    const journal = found?.journal ?? await SetJournal.create(path);
    try {
      const lines = found === undefined
        ? []
        : found.text.split("\n").filter((l) => l !== "").map((l) => `${l}\n`);
      if (found !== undefined) {
        let first: { plan?: unknown; source?: unknown } | null | undefined;
        try {
          first = JSON.parse(lines[0]?.trim() ?? "null") as typeof first;
        } catch {
          first = undefined;
        }
        if (first?.plan !== start.plan) {
          throw new UsageError(
            `Cannot resume "${output}": its partial shards were planned from a different ` +
              "input or options; run without --resume (or with --force) to start over",
          );
        }
        // The same plan from changed bytes (a source file rewritten in place).
        if (start.source !== undefined && first.source !== start.source) {
          throw sourceChangedError(output, path);
        }
      }
      const kept = start.keep === undefined ? lines.slice(1) : await start.keep(lines.slice(1));
      await journal.rewrite(planLine(start.plan, start.source) + kept.join(""));
      return journal;
    } catch (error) {
      journal.close();
      throw error;
    }
  }

  /**
   * Replace the journal's content.
   *
   * @param text The new content.
   */
  async rewrite(text: string): Promise<void> {
    const file = this.#held();
    await file.truncate(0);
    await file.seek(0, 0);
    await this.#write(text);
  }

  /**
   * Add a line at the end.
   *
   * @param line The line, with its newline.
   */
  async append(line: string): Promise<void> {
    await this.#held().seek(0, 2);
    await this.#write(line);
  }

  /**
   * Refuse when the journal at the path is no longer this run's (another
   * process removed or replaced it): the set is then not this run's to publish.
   *
   * @param output The output, for the message.
   */
  async assertStillHeld(output: string): Promise<void> {
    await assertStillHeld(this.path, output);
  }

  /** Remove the journal (the set is published or given up) and release the lock. */
  async discard(): Promise<void> {
    await discardFile(this.path);
    this.close();
  }

  /** Release the lock, keeping the journal for a resume. Safe to call twice. */
  close(): void {
    try {
      this.#file?.close();
    } catch {
      // Already closed.
    }
    this.#file = undefined;
  }

  #held(): RuntimeFile {
    if (this.#file === undefined) {
      throw new TypeError(`Cannot write "${this.path}": the journal was closed`);
    }
    return this.#file;
  }

  async #write(text: string): Promise<void> {
    const bytes = new TextEncoder().encode(text);
    const file = this.#held();
    try {
      for (let written = 0; written < bytes.length;) {
        written += await file.write(bytes.subarray(written));
      }
    } catch (error) {
      throw storageFailure(error, this.path, "write");
    }
  }
}

/**
 * The journal's first line: the plan, and the source's identity when known.
 *
 * @param plan The plan's hash.
 * @param source The source's identity.
 * @returns The line, with its newline.
 */
export function planLine(plan: string, source: string | undefined): string {
  return `${JSON.stringify({ plan, ...(source === undefined ? {} : { source }) })}\n`;
}

/**
 * The files of other sets of one output in its folder (an earlier run with
 * another shard size: `NAME-0000i-of-0000M` beside a set of N shards).
 *
 * @param folder The output's folder.
 * @param isOther Whether a file name belongs to another set of the output.
 * @returns Their names, sorted.
 */
export async function otherSetFiles(
  folder: string,
  isOther: (name: string) => boolean,
): Promise<string[]> {
  const found: string[] = [];
  try {
    for await (const entry of fs.readDir(folder || ".")) {
      if (isOther(entry.name)) found.push(entry.name);
    }
  } catch (error) {
    if (!(error instanceof fs.errors.NotFound)) throw error;
  }
  return found.sort();
}

/**
 * Refuse a second set of an output beside another one: neither would load
 * as one model. Replaced only with `force` ({@linkcode removeOtherSet}).
 *
 * @param output The output.
 * @param other The other set's files ({@linkcode otherSetFiles}); nothing when empty.
 * @throws {UsageError} When there are any.
 */
export function refuseOtherSet(output: string, other: readonly string[]): void {
  if (other.length === 0) return;
  throw new UsageError(
    `Cannot write "${output}": another split set of it exists ("${
      other[0]
    }", ${other.length} file(s)); a second set beside it would make neither load; use force: true to replace it`,
  );
}

/**
 * Remove another set's files once the new set is published (with `force`):
 * regular files only, never through a link.
 *
 * @param folder Their folder.
 * @param names Their names ({@linkcode otherSetFiles}).
 */
export async function removeOtherSet(folder: string, names: readonly string[]): Promise<void> {
  for (const name of names) {
    const path = join(folder || ".", name);
    if ((await fs.lstat(path).catch(() => undefined))?.isFile) await removeIfExists(path);
  }
}
