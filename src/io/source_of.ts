/**
 * The entry points that read one file's bytes (`validateApr`, `openApr`,
 * `parseGgufHeader`, `parseSafetensorsHeader`) take a {@linkcode ByteSource}
 * or a path, in Deno and Node alike: a path is opened here, and a missing
 * one is `NotFound` with `code: "ENOENT"`, named in aprkit's words.
 *
 * @module
 */

import type { ByteSource } from "./byte_source.ts";
import { openFileSource } from "./file_source.ts";
import { fs, notFoundError } from "../runtime/fs.ts";

/**
 * The source `source` names: itself, or the file at a path, opened.
 *
 * @param source A source, or a path.
 * @param what What is read, for messages ("APR file").
 * @returns The source, and whether it was opened here (the caller then owns it).
 * @throws {TypeError} For anything else, before any I/O.
 * @throws {Deno.errors.NotFound} When the path does not exist (`code: "ENOENT"`).
 */
export async function openSourceOf(
  source: ByteSource | string,
  what: string,
): Promise<{ source: ByteSource; opened: boolean }> {
  if (typeof source === "string") {
    if (source === "") throw new TypeError(`Cannot read the ${what}: the path is empty`);
    try {
      return { source: await openFileSource(source), opened: true };
    } catch (error) {
      if (error instanceof fs.errors.NotFound) {
        throw notFoundError(`Cannot open "${source}": no such file`, { cause: error });
      }
      throw error;
    }
  }
  if (typeof (source as Partial<ByteSource> | null)?.read !== "function") {
    throw new TypeError(
      `Cannot read the ${what}: expected a path or a ByteSource (a FileSource, BlobSource, ...)`,
    );
  }
  return { source, opened: false };
}

/**
 * Run `use` on the source `source` names, closing it afterwards if it was
 * opened here (a given source is left open, as before).
 *
 * @param source A source, or a path.
 * @param what What is read, for messages.
 * @param use What to do with it.
 * @returns What `use` returns.
 */
export async function withSourceOf<T>(
  source: ByteSource | string,
  what: string,
  use: (source: ByteSource) => Promise<T>,
): Promise<T> {
  const opened = await openSourceOf(source, what);
  try {
    return await use(opened.source);
  } finally {
    if (opened.opened) await opened.source.close();
  }
}
