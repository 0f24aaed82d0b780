// This module is browser compatible.

/**
 * A {@linkcode ByteSource} over a `Blob` (or `File`), so every format reader
 * also works in a browser.
 *
 * @module
 */

import { assertRange, type ByteSource, DEFAULT_CHUNK_SIZE, streamByReads } from "./byte_source.ts";

/**
 * Wrap a Blob as a ByteSource.
 *
 * @example Usage
 * ```ts
 * import { BlobSource } from "./blob_source.ts";
 * const source = new BlobSource(new Blob([new Uint8Array([1, 2, 3])]), "three.bin");
 * console.assert((await source.read(1, 2))[0] === 2);
 * ```
 */
export class BlobSource implements ByteSource {
  /** A name for messages. */
  readonly name: string;
  /** Size of the blob. */
  readonly size: number;
  #blob: Blob;

  /**
   * Wrap a Blob.
   * Never throws.
   *
   * @param blob The bytes.
   * @param name A name for messages.
   */
  constructor(blob: Blob, name = "blob") {
    this.#blob = blob;
    this.name = name;
    this.size = blob.size;
  }

  /**
   * Read exactly `length` bytes at `offset`.
   *
   * @param offset First byte.
   * @param length Number of bytes.
   * @returns The bytes.
   * @throws {RangeError} When the range is outside the source (offset or length not whole, or past its end).
   */
  async read(offset: number, length: number): Promise<Uint8Array> {
    assertRange(this.name, this.size, offset, length);
    return new Uint8Array(await this.#blob.slice(offset, offset + length).arrayBuffer());
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
    return streamByReads(this, start, end, chunkSize);
  }

  /**
   * Nothing to release.
   * Never throws.
   *
   * @returns At once.
   */
  close(): Promise<void> {
    return Promise.resolve();
  }
}
