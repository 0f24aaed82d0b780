// This module is browser compatible.

/**
 * One way to read bytes (DESIGN.md §2.1): local files, HTTP ranges and Blobs
 * all look alike to format readers, so `apr inspect` of a remote 50 GB file
 * reads a few KB.
 *
 * @module
 */

/** Default size of the chunks a payload stream yields: large enough for fast I/O, small enough to bound memory. */
export const DEFAULT_CHUNK_SIZE = 4 * 1024 * 1024;

/** Random-access, read-only bytes of known size. */
export interface ByteSource {
  /** Path or URL, for error messages (never carries credentials). */
  readonly name: string;
  /** Total size in bytes. */
  readonly size: number;
  /**
   * Read exactly `length` bytes at `offset` into a new array.
   * Rejects with a `RangeError` when the range is outside the source.
   */
  read(offset: number, length: number): Promise<Uint8Array>;
  /**
   * Stream bytes `[start, end)` in chunks of at most `chunkSize` bytes. Each
   * chunk is a fresh array the consumer may keep. Nothing is read ahead beyond
   * one chunk; cancelling stops the reads.
   */
  stream(start: number, end: number, chunkSize?: number): ReadableStream<Uint8Array>;
  /** Release the underlying handle or connection. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * Check that `[offset, offset + length)` lies inside a source of `size` bytes.
 *
 * @param name The source's name, for the message.
 * @param size The source's size.
 * @param offset Start of the range.
 * @param length Length of the range.
 * @throws {RangeError} When the range is outside the source or not whole numbers.
 */
export function assertRange(name: string, size: number, offset: number, length: number): void {
  if (
    !Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0 ||
    offset + length > size
  ) {
    throw new RangeError(
      `Cannot read "${name}": bytes [${offset}, ${offset + length}) are outside its ${size} bytes`,
    );
  }
}

/**
 * Build the `stream()` of a ByteSource from its `read()`: pull-based, one
 * chunk at a time, so memory stays at one chunk per open stream.
 *
 * @param source The source to read from.
 * @param start First byte.
 * @param end One past the last byte.
 * @param chunkSize Largest chunk.
 * @returns A stream of fresh chunks covering `[start, end)`.
 */
export function streamByReads(
  source: Pick<ByteSource, "name" | "size" | "read">,
  start: number,
  end: number,
  chunkSize: number = DEFAULT_CHUNK_SIZE,
): ReadableStream<Uint8Array> {
  assertRange(source.name, source.size, start, end - start);
  if (!Number.isSafeInteger(chunkSize) || chunkSize <= 0) {
    throw new RangeError(`Cannot stream "${source.name}": chunk size ${chunkSize} is not positive`);
  }
  let position = start;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (position >= end) {
        controller.close();
        return;
      }
      const length = Math.min(chunkSize, end - position);
      const chunk = await source.read(position, length);
      position += length;
      controller.enqueue(chunk);
    },
    // One chunk of read-ahead overlaps reading with the consumer's work.
  }, { highWaterMark: 1 });
}
