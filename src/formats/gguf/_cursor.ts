// This module is browser compatible.

/**
 * A small buffered, forward-only cursor over a {@linkcode ByteSource}: the
 * GGUF header is a sequence of small fields (and MBs of vocabulary strings),
 * so it is read in windows of {@linkcode CURSOR_WINDOW} bytes rather than one
 * `read()` per field or one read of the whole file.
 *
 * @module
 */

import type { ByteSource } from "../../io/byte_source.ts";
import { ModelFormatError } from "../../errors.ts";

/** Bytes fetched by the first refill: small enough for a remote header probe. */
export const CURSOR_WINDOW = 64 * 1024;
/**
 * Largest refill. Windows double up to this, so a 10 MB vocabulary over HTTP
 * takes a handful of range requests, not hundreds, while memory stays bounded.
 */
export const CURSOR_MAX_WINDOW = 4 * 1024 * 1024;

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

  /** True when `n` bytes at the position are already buffered (no await needed). */
  has(n: number): boolean {
    return this.#position + n <= this.#bufferStart + this.#buffer.length;
  }

  /**
   * Make `n` bytes at the position available. FORMATS.md G5: a field that
   * runs past the end of the file is "truncated", with its offset.
   */
  async need(n: number, what: string): Promise<void> {
    if (this.has(n)) return;
    const size = this.#source.size;
    if (this.#position + n > size) {
      throw this.fail(
        `truncated: ${what} needs ${n} bytes at byte ${this.#position}, but the file ends at byte ${size}`,
      );
    }
    const length = Math.min(Math.max(this.#window, n), size - this.#position);
    this.#window = Math.min(this.#window * 2, CURSOR_MAX_WINDOW);
    this.#buffer = await this.#source.read(this.#position, length);
    this.#view = new DataView(
      this.#buffer.buffer,
      this.#buffer.byteOffset,
      this.#buffer.byteLength,
    );
    this.#bufferStart = this.#position;
  }

  #at(n: number): number {
    const i = this.#position - this.#bufferStart;
    this.#position += n;
    return i;
  }

  // The synchronous readers below assume `need()` (or `has()`) covered them.
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
  /** A view of the next `n` buffered bytes (valid until the next `need()`). */
  bytes(n: number): Uint8Array {
    const i = this.#at(n);
    return this.#buffer.subarray(i, i + n);
  }
}
