// This module is browser compatible.

/**
 * A buffered, forward-only cursor over a {@linkcode ByteSource} for the GGUF
 * header: a sequence of small fields (and MBs of vocabulary strings) parsed
 * synchronously from one buffer. Awaiting per field cost more than the
 * parsing itself (a 32 000-token vocabulary took ~110 ms, one promise per
 * string), so the parser reads whole items (a KV pair, a tensor info)
 * synchronously with {@linkcode Cursor.each}; only an item that runs past the
 * buffer waits, for a refill that covers it, and is parsed again.
 *
 * @module
 */

import type { ByteSource } from "../../io/byte_source.ts";
import { ModelFormatError } from "../../errors.ts";

/** Bytes fetched by the first refill: small enough for a remote header probe. */
export const CURSOR_WINDOW = 64 * 1024;
/**
 * Largest refill beyond what an item needs. Windows double up to this, so a
 * 10 MB vocabulary over HTTP takes a handful of range requests, not hundreds.
 */
export const CURSOR_MAX_WINDOW = 4 * 1024 * 1024;

/**
 * Thrown by {@linkcode Cursor.need} when the bytes lie in the file but past
 * the buffer; caught by {@linkcode Cursor.each}, never seen by callers.
 */
class NeedBytes {
  /** File offset the item needs buffered up to. */
  readonly end: number;
  constructor(end: number) {
    this.end = end;
  }
}

/** A forward cursor reading little-endian fields; every read is bounds-checked (G5). */
export class Cursor {
  #source: ByteSource;
  #buffer: Uint8Array = new Uint8Array(0);
  #view: DataView = new DataView(new ArrayBuffer(0));
  /** File offset of `#buffer[0]`. */
  #bufferStart = 0;
  /** Current file offset. */
  #position = 0;
  #window = CURSOR_WINDOW;
  /** Array elements read so far: the header parser's memory budget (GGUF_MAX_ARRAY_ELEMENTS). */
  arrayElements = 0;
  /** String bytes read so far: the header parser's memory budget (GGUF_MAX_STRING_BYTES). */
  stringBytes = 0;

  constructor(source: ByteSource) {
    this.#source = source;
  }

  /** Current file offset. */
  get position(): number {
    return this.#position;
  }

  /** Bytes between the position and the end of the file. */
  get remaining(): number {
    return this.#source.size - this.#position;
  }

  /** Build the error for a malformed file. */
  fail(reason: string, offset: number = this.#position, cause?: unknown): ModelFormatError {
    return new ModelFormatError(
      "GGUF",
      this.#source.name,
      reason,
      cause === undefined ? { offset } : { offset, cause },
    );
  }

  /**
   * Check that `n` bytes at the position are buffered, for the synchronous
   * readers below. FORMATS.md G5: a field that runs past the end of the file
   * is "truncated", with its offset. Bytes that lie in the file but past the
   * buffer end the item: {@linkcode Cursor.each} refills and parses it again.
   */
  need(n: number, what: string): void {
    const end = this.#position + n;
    if (end <= this.#bufferStart + this.#buffer.length) return;
    const size = this.#source.size;
    if (end > size) {
      throw this.fail(
        `truncated: ${what} needs ${n} bytes at byte ${this.#position}, but the file ends at byte ${size}`,
      );
    }
    throw new NeedBytes(end);
  }

  /**
   * Parse `count` items in order with `item(i)`, synchronously while the
   * buffer holds them. An item that needs bytes past the buffer is undone —
   * position and budgets back to its start, so `item` must change nothing
   * else before its last read — and parsed again once the buffer covers it.
   *
   * @param count How many items.
   * @param item Parses item `i` with the synchronous readers.
   */
  async each(count: number, item: (i: number) => void): Promise<void> {
    for (let i = 0; i < count;) {
      const position = this.#position;
      const elements = this.arrayElements;
      const strings = this.stringBytes;
      try {
        item(i);
        i++;
      } catch (error) {
        if (!(error instanceof NeedBytes)) throw error;
        this.#position = position;
        this.arrayElements = elements;
        this.stringBytes = strings;
        await this.#fill(error.end);
      }
    }
  }

  /**
   * Parse one item with `parse`, as {@linkcode Cursor.each} does.
   *
   * @param parse Parses the item with the synchronous readers.
   * @returns What `parse` returns.
   */
  async one<T>(parse: () => T): Promise<T> {
    let value: T | undefined;
    await this.each(1, () => {
      value = parse();
    });
    return value as T;
  }

  /** True when `n` bytes at the position are buffered: `need()` without building its message. */
  has(n: number): boolean {
    return this.#position + n <= this.#bufferStart + this.#buffer.length;
  }

  /**
   * Buffer from the position past `end`: at least twice what the item has
   * asked for so far (an item parsed again after each refill then costs at
   * most twice its size in all), and at least the window. The bytes already
   * buffered are kept, not read again (a range request each, over HTTP).
   */
  async #fill(end: number): Promise<void> {
    const start = this.#position;
    const size = this.#source.size;
    const length = Math.min(size - start, Math.max(this.#window, 2 * (end - start)));
    this.#window = Math.min(this.#window * 2, CURSOR_MAX_WINDOW);
    const bufferEnd = this.#bufferStart + this.#buffer.length;
    let next: Uint8Array;
    if (start >= this.#bufferStart && start < bufferEnd) {
      const kept = this.#buffer.subarray(start - this.#bufferStart);
      const fresh = await this.#source.read(bufferEnd, start + length - bufferEnd);
      next = new Uint8Array(length);
      next.set(kept);
      next.set(fresh, kept.length);
    } else {
      next = await this.#source.read(start, length);
    }
    this.#buffer = next;
    this.#view = new DataView(next.buffer, next.byteOffset, next.byteLength);
    this.#bufferStart = start;
  }

  #at(n: number): number {
    const i = this.#position - this.#bufferStart;
    this.#position += n;
    return i;
  }

  // The synchronous readers below assume `need()` covered them.
  u8(): number {
    return this.#view.getUint8(this.#at(1));
  }
  i8(): number {
    return this.#view.getInt8(this.#at(1));
  }
  u16(): number {
    return this.#view.getUint16(this.#at(2), true);
  }
  i16(): number {
    return this.#view.getInt16(this.#at(2), true);
  }
  u32(): number {
    return this.#view.getUint32(this.#at(4), true);
  }
  i32(): number {
    return this.#view.getInt32(this.#at(4), true);
  }
  f32(): number {
    return this.#view.getFloat32(this.#at(4), true);
  }
  f64(): number {
    return this.#view.getFloat64(this.#at(8), true);
  }
  u64(): bigint {
    return this.#view.getBigUint64(this.#at(8), true);
  }
  i64(): bigint {
    return this.#view.getBigInt64(this.#at(8), true);
  }
  /** A view of the next `n` buffered bytes (valid until the next refill). */
  bytes(n: number): Uint8Array {
    const i = this.#at(n);
    return this.#buffer.subarray(i, i + n);
  }
}
