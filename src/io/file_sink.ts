/**
 * A positioned file writer: the write side of the APR sink (DESIGN.md §2.3).
 * Each write lands at an explicit offset, so tensors can be written in any
 * order, and nothing is buffered beyond the caller's chunk.
 *
 * @module
 */

import { createFreshFile, openExistingFile } from "./partial_file.ts";
import { fs, type RuntimeFile, SEEK_START } from "../runtime/fs.ts";
import { storageFailure } from "./storage_errors.ts";
import { readFull } from "./_read_full.ts";

/** Options of {@linkcode FileSink.open}. */
export interface FileSinkOptions {
  /** Create the file if missing. @default {true} */
  create?: boolean;
  /** Truncate an existing file to 0 bytes. @default {false} */
  truncate?: boolean;
}

/** A file open for positioned writes (and reads, to verify what was written). */
export class FileSink {
  /** The path the file was opened with. */
  readonly path: string;
  #file: RuntimeFile;
  #closed = false;
  // Seek-then-write is two calls on a shared cursor: chain them.
  #queue: Promise<unknown> = Promise.resolve();
  // A second handle for syncing beside the writes (see syncDataBeside).
  #syncHandle: RuntimeFile | undefined;

  /**
   * Take ownership of an open handle; use {@linkcode FileSink.open}.
   *
   * @param path Path, for messages.
   * @param file An open handle, now owned by this sink.
   */
  constructor(path: string, file: RuntimeFile) {
    this.path = path;
    this.#file = file;
  }

  /**
   * Open (by default create) a file for positioned writes.
   *
   * @example Usage
   * ```ts ignore
   * import { FileSink } from "./file_sink.ts";
   * const sink = await FileSink.open("out.bin", { truncate: true });
   * await sink.writeAt(10, new Uint8Array([1, 2]));
   * await sink.close();
   * ```
   *
   * @param path Path of the file.
   * @param options Create / truncate.
   * @returns The sink; close it when done.
   */
  static async open(path: string, options: FileSinkOptions = {}): Promise<FileSink> {
    // Never through a link planted at the path (see partial_file.ts): a
    // truncating open makes a fresh file, any other open needs a regular file.
    if (options.truncate === true) return new FileSink(path, await createFreshFile(path));
    if (options.create === false) return new FileSink(path, await openExistingFile(path));
    try {
      return new FileSink(path, await openExistingFile(path));
    } catch (error) {
      if (!(error instanceof fs.errors.NotFound)) throw error;
      return new FileSink(path, await createFreshFile(path));
    }
  }

  #run<T>(op: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(() => {
      if (this.#closed) throw new TypeError(`Cannot write "${this.path}": the file is closed`);
      // A full disk or a failing device names this file (exit code 3).
      return op().catch((error) => {
        throw storageFailure(error, this.path, "write");
      });
    });
    this.#queue = result.catch(() => {});
    return result;
  }

  /**
   * Write all of `bytes` at `offset` (extending the file if needed).
   *
   * @param offset Byte offset.
   * @param bytes The bytes.
   */
  writeAt(offset: number, bytes: Uint8Array): Promise<void> {
    if (!Number.isSafeInteger(offset) || offset < 0) {
      throw new RangeError(`Cannot write "${this.path}": offset ${offset} is not valid`);
    }
    return this.#run(async () => {
      await this.#file.seek(offset, SEEK_START);
      let done = 0;
      while (done < bytes.length) done += await this.#file.write(bytes.subarray(done));
    });
  }

  /**
   * Read exactly `length` bytes at `offset` into a new array.
   *
   * @param offset Byte offset.
   * @param length Bytes to read.
   * @returns The bytes.
   * @throws {RangeError} When the file ends first.
   */
  readAt(offset: number, length: number): Promise<Uint8Array> {
    return this.#run(async () => {
      const buffer = new Uint8Array(length);
      await this.#file.seek(offset, SEEK_START);
      await readFull(this.#file, buffer, this.path, offset);
      return buffer;
    });
  }

  /** Current file size in bytes. */
  size(): Promise<number> {
    return this.#run(async () => (await this.#file.stat()).size);
  }

  /** Flush written data to the device (fdatasync). */
  syncData(): Promise<void> {
    return this.#run(() => this.#file.syncData());
  }

  /**
   * Set the file length, cutting or zero-extending it.
   *
   * @param length New length in bytes.
   */
  truncate(length: number): Promise<void> {
    return this.#run(() => this.#file.truncate(length));
  }

  /** Close the handle after pending operations. Safe to call twice. */
  /**
   * Flush to disk every write that has completed so far, without holding up
   * the writes queued after it: the sync runs on a second handle of the same
   * file (fdatasync flushes the file, whichever handle asks). Lets a writer
   * keep streaming while its last batch becomes durable.
   */
  async syncDataBeside(): Promise<void> {
    try {
      this.#syncHandle ??= await fs.open(this.path, { write: true });
      await this.#syncHandle.syncData();
    } catch (error) {
      throw storageFailure(error, this.path, "write");
    }
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    const done = this.#queue.then(() => {
      this.#closed = true;
      this.#file.close();
      this.#syncHandle?.close();
      this.#syncHandle = undefined;
    });
    this.#queue = done.catch(() => {});
    return done;
  }
}
