// This module is browser compatible.

/**
 * One way to read bytes (DESIGN.md §2.1): local files, HTTP ranges and Blobs
 * all look alike to format readers, so `apr inspect` of a remote 50 GB file
 * reads a few KB.
 *
 * @module
 */

/**
 * Default size of the chunks a payload stream yields: large enough for fast
 * I/O, small enough to bound memory. 1 MiB, not more: a passthrough import
 * (read a chunk, CRC it, write it) ran 2-3x slower with 4 MiB chunks than
 * with 0.5-2 MiB ones in interleaved rounds on the 2-core development machine
 * (docs/BENCHMARKS.md, issue 14): a chunk that still sits in the CPU caches
 * when `write()` copies it costs far less than one that has left them.
 */
export const DEFAULT_CHUNK_SIZE = 1024 * 1024;

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

// Buffers handed downstream by a producer that keeps no reference to them
// (see markReleasable). A WeakSet, so an unreleased chunk is still collected
// normally.
const RELEASABLE = new WeakSet<ArrayBufferLike>();

/**
 * Mark a chunk as exclusively owned by whoever receives it: its producer
 * keeps no reference to its buffer, and no other view of the buffer exists.
 * The final consumer may then free it at once with {@linkcode releaseChunk}
 * instead of leaving it for the garbage collector, which collects buffers
 * lazily (tens of MiB of dead chunks otherwise pile up: DESIGN.md §1.2).
 * Consumers that keep chunks simply do not release them.
 *
 * @param chunk A fresh chunk whose buffer nothing else references.
 * @returns `chunk`.
 */
export function markReleasable<T extends ArrayBufferView>(chunk: T): T {
  RELEASABLE.add(chunk.buffer);
  return chunk;
}

/**
 * Most bytes kept for reuse by {@linkcode releaseChunk}: a few chunks, enough
 * for a pipeline's steady state (read, convert, write), a fixed cost.
 */
const MAX_RECYCLED_BYTES = 4 * DEFAULT_CHUNK_SIZE;
// Released buffers by byte length, for takeBuffer().
const RECYCLED = new Map<number, ArrayBuffer[]>();
let recycledBytes = 0;

// Releasable buffers handed to several consumers: how many have not released them yet.
const HOLDERS = new WeakMap<ArrayBufferLike, number>();

/**
 * Hand one releasable chunk to several consumers (`pipeline/shared_reads.ts`):
 * each releases it when done with it, and only the last
 * {@linkcode releaseChunk} frees it (a consumer that keeps it leaves it to the
 * garbage collector, as an unmarked chunk). With four outputs of one read,
 * shared chunks left to the collector measured ~33 MiB of garbage.
 *
 * @param chunk The chunk about to be shared.
 * @param consumers How many consumers receive it (each releases it at most once).
 * @returns Whether it was marked releasable.
 */
export function shareChunk(chunk: ArrayBufferView, consumers: number): boolean {
  if (!RELEASABLE.has(chunk.buffer)) return false;
  HOLDERS.set(chunk.buffer, (HOLDERS.get(chunk.buffer) ?? 1) - 1 + consumers);
  return true;
}

/**
 * Take over a chunk marked with {@linkcode markReleasable}, to hand its
 * memory on (as a worker's job, say) instead of copying it: the memory moves
 * to a new buffer (`ArrayBuffer.prototype.transfer`, no copy), returned as a
 * view marked releasable, and `chunk` is left detached, so the producer's
 * {@linkcode releaseChunk} of it does nothing. Only a chunk that spans its
 * whole buffer and is not shared ({@linkcode shareChunk}) is taken.
 *
 * @param chunk A chunk received from a stream.
 * @returns The chunk's bytes in a buffer of their own, or `undefined` when it
 *   cannot be taken (copy it instead).
 */
export function takeChunk(chunk: Uint8Array): Uint8Array | undefined {
  const buffer = chunk.buffer as ArrayBuffer & { transfer?: () => ArrayBuffer };
  if (
    typeof buffer.transfer !== "function" || HOLDERS.has(buffer) || chunk.byteOffset !== 0 ||
    chunk.byteLength !== buffer.byteLength || !RELEASABLE.delete(buffer)
  ) {
    return undefined;
  }
  return markReleasable(new Uint8Array(buffer.transfer()));
}

/**
 * A buffer of `byteLength` bytes for a new chunk: one released earlier when
 * available (its memory is already mapped, so no page faults and zeroing,
 * which measured as seconds of system time per GiB), else a new one. Its
 * contents are arbitrary: the caller must overwrite all of it.
 *
 * @param byteLength Size of the buffer.
 * @returns A buffer nobody else references.
 */
export function takeBuffer(byteLength: number): ArrayBuffer {
  const b = RECYCLED.get(byteLength)?.pop();
  if (b === undefined) return new ArrayBuffer(byteLength);
  recycledBytes -= byteLength;
  return b;
}

/**
 * Free kept buffers of lengths other than `n`, the longest-kept lengths
 * first, until `n` more bytes fit: buffers of a length the run has moved on
 * from (a Q6_K output head's pieces, ~0.4 MiB each) would otherwise hold the
 * room for good, and every later chunk would be a new buffer, zeroed and
 * faulted in (measured: every 1 MiB chunk and job of a Q3_K_S conversion).
 */
function makeRoom(n: number): void {
  for (const [length, list] of RECYCLED) {
    if (recycledBytes + n <= MAX_RECYCLED_BYTES) return;
    if (length === n) continue;
    while (list.length > 0 && recycledBytes + n > MAX_RECYCLED_BYTES) {
      (list.pop() as ArrayBuffer & { transfer(length?: number): ArrayBuffer }).transfer(0);
      recycledBytes -= length;
    }
    if (list.length === 0) RECYCLED.delete(length);
  }
}

/**
 * Give a chunk's memory back now, if its producer marked it with
 * {@linkcode markReleasable}; otherwise do nothing. Call it only when done
 * with the chunk and holding no other view of it: the buffer is detached
 * (`ArrayBuffer.prototype.transfer`), so every view of it becomes empty, and
 * its memory is kept for {@linkcode takeBuffer} (up to a few chunks) or freed.
 *
 * @param chunk A chunk received from a stream and no longer needed.
 */
export function releaseChunk(chunk: ArrayBufferView): void {
  const buffer = chunk.buffer;
  const holders = HOLDERS.get(buffer);
  if (holders !== undefined) {
    // Shared: freed by the last of its consumers only.
    if (holders > 1) {
      HOLDERS.set(buffer, holders - 1);
      return;
    }
    HOLDERS.delete(buffer);
  }
  if (!RELEASABLE.delete(buffer)) return;
  // Engines without ArrayBuffer.prototype.transfer (ES2024) fall back to GC.
  const b = buffer as ArrayBuffer & { transfer?: (length?: number) => ArrayBuffer };
  if (typeof b.transfer !== "function" || b.detached) return;
  const n = b.byteLength;
  if (n > 0 && n <= MAX_RECYCLED_BYTES) makeRoom(n);
  if (n > 0 && recycledBytes + n <= MAX_RECYCLED_BYTES) {
    // Same length: the memory moves to a new buffer without a copy.
    const kept = b.transfer();
    const list = RECYCLED.get(n);
    if (list === undefined) RECYCLED.set(n, [kept]);
    else list.push(kept);
    recycledBytes += n;
  } else {
    b.transfer(0);
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
 * @param releasable True when `read()` returns arrays with their own buffer
 *   that the source keeps no reference to: chunks are then marked with
 *   {@linkcode markReleasable}, so the final consumer can free them at once.
 * @returns A stream of fresh chunks covering `[start, end)`.
 */
export function streamByReads(
  source: Pick<ByteSource, "name" | "size" | "read">,
  start: number,
  end: number,
  chunkSize: number = DEFAULT_CHUNK_SIZE,
  releasable = false,
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
      controller.enqueue(releasable ? markReleasable(chunk) : chunk);
    },
    // One chunk of read-ahead overlaps reading with the consumer's work.
  }, { highWaterMark: 1 });
}
