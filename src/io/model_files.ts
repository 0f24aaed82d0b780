/**
 * A model repository as a set of named files: a local directory, a Hub
 * snapshot in the cache, or a Hub repository read over HTTP. Readers of
 * sharded models and companion files (config.json, tokenizer.json) take this,
 * so the same code serves a folder on disk and `--no-cache` streaming.
 *
 * @module
 */

import { join } from "../runtime/path.ts";
import { ModelFormatError } from "../errors.ts";
import type { ByteSource } from "./byte_source.ts";
import { openFileSource } from "./file_source.ts";
import { fs } from "../runtime/fs.ts";

/** The files of one model repository. Paths are relative and `/`-separated. */
export interface ModelFiles {
  /** Where the files are, for messages: a directory path or `hf://org/name@commit`. */
  readonly name: string;
  /** Every file's relative path, sorted (for a Hub repo, the repo's listing). Implementations may cache it. */
  list(): Promise<string[]>;
  /** Open one file for random access. */
  open(path: string): Promise<ByteSource>;
  /** Full location of one file (a path or URL), for messages. */
  locate(path: string): string;
  /**
   * Check every opened file against the checksum its server announced,
   * reading what was not read yet; absent where there is nothing to check.
   */
  verify?(): Promise<void>;
}

/** Most entries a model folder's listing looks at: a Hub repository has a few thousand files. */
export const MAX_LISTED_ENTRIES = 100_000;

/** The files of a local directory, listed recursively. */
export class LocalModelFiles implements ModelFiles {
  /** The directory. */
  readonly name: string;

  #maxEntries: number;

  /**
   * Name a directory.
   * Never throws.
   *
   * @param directory The directory holding the model.
   * @param maxEntries Most entries the listing looks at.
   */
  constructor(directory: string, maxEntries: number = MAX_LISTED_ENTRIES) {
    this.name = directory;
    this.#maxEntries = maxEntries;
  }

  /**
   * Every regular file below the directory. A symbolic link to a file counts
   * (the HF cache's snapshots are links into `blobs/`); a link to a folder is
   * not entered, so a link loop (`a/b -> ..`, from an archive or a git
   * clone) cannot make the walk endless. At most `maxEntries` (default
   * {@linkcode MAX_LISTED_ENTRIES}) entries are looked at.
   *
   * @returns Paths relative to the directory, sorted.
   * @throws {Deno.errors.NotFound} When the directory does not exist.
   * @throws {Deno.errors.PermissionDenied} When it cannot be read.
   * @throws {RangeError} When the listing passes `maxEntries` entries.
   */
  async list(): Promise<string[]> {
    const found: string[] = [];
    let seen = 0;
    const walk = async (relative: string): Promise<void> => {
      for await (const entry of fs.readDir(join(this.name, relative))) {
        if (++seen > this.#maxEntries) {
          throw new RangeError(
            `Cannot list "${this.name}": more than ${this.#maxEntries} files and folders`,
          );
        }
        const path = relative === "" ? entry.name : `${relative}/${entry.name}`;
        if (entry.isDirectory) {
          await walk(path);
        } else if (entry.isFile) {
          found.push(path);
        } else if (entry.isSymlink) {
          const target = await fs.stat(join(this.name, path)).catch(() => undefined);
          if (target?.isFile) found.push(path);
        }
      }
    };
    await walk("");
    return found.sort();
  }

  /**
   * Open one file.
   *
   * @param path Path relative to the directory.
   * @returns The file as a byte source.
   * @throws {Deno.errors.NotFound} When the file does not exist.
   */
  open(path: string): Promise<ByteSource> {
    return openFileSource(this.locate(path));
  }

  /**
   * The file's path on disk.
   * Never throws.
   *
   * @param path Path relative to the directory.
   * @returns The path joined to the directory.
   */
  locate(path: string): string {
    return join(this.name, path);
  }
}

/** Largest JSON companion file read whole (FORMATS.md I5 caps the index at 250 MB). */
export const MAX_JSON_FILE_BYTES = 250_000_000;

/**
 * Read a file of a model repository whole, once `check` has seen its size:
 * `check` throws for a file too large, so a hostile one is never read.
 *
 * @param files The repository.
 * @param path The file's relative path (it must exist).
 * @param check Sees the size before anything is read; throws to refuse it.
 * @returns The bytes.
 */
export async function readCheckedFile(
  files: ModelFiles,
  path: string,
  check: (size: number) => void,
): Promise<Uint8Array> {
  const source = await files.open(path);
  try {
    check(source.size);
    return await source.read(0, source.size);
  } finally {
    await source.close();
  }
}

/**
 * {@linkcode readCheckedFile}, decoded as UTF-8.
 *
 * @param files The repository.
 * @param path The file's relative path (it must exist).
 * @param check Sees the size before anything is read; throws to refuse it.
 * @returns The text.
 * @throws {ModelFormatError} When the bytes are not UTF-8.
 */
export async function readCheckedText(
  files: ModelFiles,
  path: string,
  check: (size: number) => void,
): Promise<string> {
  const bytes = await readCheckedFile(files, path, check);
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (cause) {
    // A malformed file, not a bug: one line naming it (issue 20 item 8).
    throw new ModelFormatError("JSON", files.locate(path), "not valid UTF-8", { cause });
  }
}

/**
 * Read a small file of a model repository whole, as text.
 *
 * @param files The repository.
 * @param path The file's relative path.
 * @param maxBytes Refuse larger files (checked before reading).
 * @returns The text, or `undefined` when the file does not exist.
 */
export async function readTextFile(
  files: ModelFiles,
  path: string,
  maxBytes: number = MAX_JSON_FILE_BYTES,
): Promise<string | undefined> {
  if (!(await files.list()).includes(path)) return undefined;
  return await readCheckedText(files, path, (size) => {
    if (size > maxBytes) {
      throw new RangeError(
        `Cannot read "${files.locate(path)}": ${size} bytes is over the ${maxBytes}-byte limit`,
      );
    }
  });
}
