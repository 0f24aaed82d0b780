/**
 * A model repository as a set of named files: a local directory, a Hub
 * snapshot in the cache, or a Hub repository read over HTTP. Readers of
 * sharded models and companion files (config.json, tokenizer.json) take this,
 * so the same code serves a folder on disk and `--no-cache` streaming.
 *
 * @module
 */

import { join } from "node:path";
import type { ByteSource } from "./byte_source.ts";
import { openFileSource } from "./file_source.ts";

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

/** The files of a local directory, listed recursively. */
export class LocalModelFiles implements ModelFiles {
  /** The directory. */
  readonly name: string;

  /**
   * Name a directory.
   * Never throws.
   *
   * @param directory The directory holding the model.
   */
  constructor(directory: string) {
    this.name = directory;
  }

  /**
   * Every regular file below the directory (following symlinks, as the HF cache needs).
   *
   * @returns Paths relative to the directory, sorted.
   * @throws {Deno.errors.NotFound} When the directory does not exist.
   * @throws {Deno.errors.PermissionDenied} When it cannot be read.
   */
  async list(): Promise<string[]> {
    const found: string[] = [];
    const walk = async (relative: string): Promise<void> => {
      for await (const entry of Deno.readDir(join(this.name, relative))) {
        const path = relative === "" ? entry.name : `${relative}/${entry.name}`;
        if (entry.isDirectory) {
          await walk(path);
        } else if (entry.isFile) {
          found.push(path);
        } else if (entry.isSymlink) {
          const target = await Deno.stat(join(this.name, path)).catch(() => undefined);
          if (target?.isFile) found.push(path);
          else if (target?.isDirectory) await walk(path);
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
  const source = await files.open(path);
  try {
    if (source.size > maxBytes) {
      throw new RangeError(
        `Cannot read "${
          files.locate(path)
        }": ${source.size} bytes is over the ${maxBytes}-byte limit`,
      );
    }
    return new TextDecoder("utf-8", { fatal: true }).decode(await source.read(0, source.size));
  } finally {
    await source.close();
  }
}
