/**
 * A {@linkcode ByteSource} over a local file: positioned reads, never the
 * whole file in memory.
 *
 * @module
 */

import { storageFailure } from "./storage_errors.ts";
import { readFull } from "./_read_full.ts";
import {
  assertRange,
  type ByteSource,
  DEFAULT_CHUNK_SIZE,
  streamByReads,
  takeBuffer,
} from "./byte_source.ts";
import { fs, type RuntimeFile, SEEK_START } from "../runtime/fs.ts";

/**
 * Open a local file for random-access reading.
 *
 * @param path Path of the file.
 * @returns A ByteSource; close it when done.
 * @throws {Deno.errors.NotFound} When the file does not exist.
 */
export async function openFileSource(path: string): Promise<FileSource> {
  const file = await fs.open(path, { read: true });
  try {
    const { size, isFile } = await file.stat();
    if (!isFile) throw new TypeError(`Cannot read "${path}": not a regular file`);
    return new FileSource(path, file, size);
  } catch (error) {
    file.close();
    throw error;
  }
}

/** A local file as a ByteSource. Reads are serialized on one handle (seek, then read). */
export class FileSource implements ByteSource {
  /** The path the file was opened with. */
  readonly name: string;
  /** File size in bytes, as of opening. */
  readonly size: number;
  #file: RuntimeFile;
  #closed = false;
  // Where the handle's cursor is after the last read (undefined: unknown, e.g.
  // after a failed read): a payload streamed in order needs no seek, which
  // saves an asynchronous call per chunk (~0.1 CPU-s per GB of 1 MiB chunks).
  #cursor: number | undefined = 0;
  // Seek-then-read is two calls on a shared cursor: chain them so concurrent
  // callers never interleave.
  #queue: Promise<unknown> = Promise.resolve();

  /**
   * Take ownership of an open handle.
   * Never throws.
   *
   * @param name Path, for messages.
   * @param file An open handle, now owned by this source.
   * @param size Size of the file.
   */
  constructor(name: string, file: RuntimeFile, size: number) {
    this.name = name;
    this.#file = file;
    this.size = size;
  }

  /**
   * Read exactly `length` bytes at `offset`.
   *
   * @param offset First byte.
   * @param length Number of bytes.
   * @returns The bytes.
   * @throws {RangeError} When the range is outside the source (offset or length not whole, or past its end). Also when the file ends early (truncated while open).
   * @throws {TypeError} When the source is closed.
   */
  read(offset: number, length: number): Promise<Uint8Array> {
    assertRange(this.name, this.size, offset, length);
    // A failing device names this file (exit code 3), not just "os error 5".
    const result = this.#queue.then(() => this.#readAt(offset, length)).catch((error) => {
      throw storageFailure(error, this.name, "read");
    });
    // The queue keeps only the order, not the bytes: a header read last
    // (21 MB for 261,000 tensors) would otherwise stay alive as the queue's
    // value until the next read, which zero-size tensors never make.
    this.#queue = result.then(() => {}, () => {});
    return result;
  }

  async #readAt(offset: number, length: number): Promise<Uint8Array> {
    if (this.#closed) throw new TypeError(`Cannot read "${this.name}": the file is closed`);
    // Recycled memory when a consumer released an earlier chunk: every byte is
    // overwritten below, or the read throws.
    const buffer = new Uint8Array(takeBuffer(length));
    if (this.#cursor !== offset) {
      this.#cursor = undefined;
      await this.#file.seek(offset, SEEK_START);
    }
    this.#cursor = undefined;
    await readFull(this.#file, buffer, this.name, offset, " (was it truncated while open?)");
    this.#cursor = offset + length;
    return buffer;
  }

  /**
   * Stream `[start, end)` in chunks.
   *
   * @param start First byte.
   * @param end One past the last byte.
   * @param chunkSize Largest chunk.
   * @returns The chunks.
   * @throws {RangeError} When the range is outside the source (offset or length not whole, or past its end).
   */
  stream(
    start: number,
    end: number,
    chunkSize: number = DEFAULT_CHUNK_SIZE,
  ): ReadableStream<Uint8Array> {
    // #readAt returns a new buffer per read and keeps no reference to it.
    return streamByReads(this, start, end, chunkSize, true);
  }

  /**
   * Close the file handle.
   * Never throws. Closing twice is harmless.
   *
   * @returns When reads in flight are done and the handle is closed.
   */
  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      // Wait for reads in flight before releasing the handle.
      return this.#queue.then(() => this.#file.close());
    }
    return Promise.resolve();
  }
}
