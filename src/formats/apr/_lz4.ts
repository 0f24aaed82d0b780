// This module is browser compatible.

/**
 * LZ4 *block* format (not frame), the one place aprkit touches LZ4.
 *
 * Both directions are written here, so the library's module graph has no npm
 * dependency: `mod.ts` imports by path or URL with no import map, and runs in
 * browsers as is. The compressor is LZ4's classic greedy single-pass scheme
 * (a 4-byte hash table, matches within 64 KiB); the decoder is strict: every
 * offset and length is checked, and a corrupt file is rejected with a clear
 * message, never decoded into garbage.
 *
 * @module
 */

/** Entries of the match-finder's hash table (2^16, as reference LZ4's fast mode). */
const HASH_BITS = 16;
const HASH_SHIFT = 32 - HASH_BITS;
/** The shortest match LZ4 can encode. */
const MIN_MATCH = 4;
/** LZ4's end-of-block rules: the last 5 bytes are literals … */
const LAST_LITERALS = 5;
/** … and the last match starts at least 12 bytes before the end. */
const MF_LIMIT = 12;
/** Misses before the search step grows (2^6, as reference LZ4). */
const SKIP_TRIGGER = 6;
/** A match offset is 16 bits. */
const MAX_OFFSET = 65_535;

/**
 * The largest block {@linkcode lz4CompressBlock} can produce for `n` bytes.
 *
 * @param n Input length.
 * @returns An upper bound on the block's length.
 */
export function lz4CompressBound(n: number): number {
  return n + Math.floor(n / 255) + 16;
}

/**
 * Compress bytes into one LZ4 block. Deterministic: the same bytes always
 * give the same block.
 *
 * @param src The bytes.
 * @returns The block (decodes to exactly `src`).
 */
export function lz4CompressBlock(src: Uint8Array): Uint8Array {
  const n = src.length;
  const dst = new Uint8Array(lz4CompressBound(n));
  // Position + 1 of the last place each 4-byte hash was seen (0: never).
  const table = new Uint32Array(1 << HASH_BITS);
  const matchEnd = n - LAST_LITERALS;
  const lastStart = n - MF_LIMIT;
  let d = 0;
  let anchor = 0;
  let s = 0;
  let misses = 1 << SKIP_TRIGGER;
  while (s <= lastStart) {
    // Inlined 32-bit read and hash: this loop runs once per input byte.
    const value = src[s]! | (src[s + 1]! << 8) | (src[s + 2]! << 16) | (src[s + 3]! << 24);
    const h = Math.imul(value, 2654435761) >>> HASH_SHIFT;
    const candidate = table[h]! - 1;
    table[h] = s + 1;
    if (
      candidate < 0 || s - candidate > MAX_OFFSET || src[candidate] !== src[s] ||
      src[candidate + 1] !== src[s + 1] || src[candidate + 2] !== src[s + 2] ||
      src[candidate + 3] !== src[s + 3]
    ) {
      // Skip faster through data that does not compress, as LZ4 does: one
      // byte at a time for 64 misses, then 2, 3… after each further 64.
      s += misses++ >> SKIP_TRIGGER;
      continue;
    }
    misses = 1 << SKIP_TRIGGER;
    let start = s;
    let from = candidate;
    // Grow the match backwards over pending literals, then forwards.
    while (start > anchor && from > 0 && src[start - 1] === src[from - 1]) {
      start--;
      from--;
    }
    let end = s + MIN_MATCH;
    while (end < matchEnd && src[end] === src[from + (end - start)]) end++;
    const literals = start - anchor;
    const matchLength = end - start - MIN_MATCH;
    dst[d++] = (Math.min(literals, 15) << 4) | Math.min(matchLength, 15);
    if (literals >= 15) d = writeLength(dst, d, literals - 15);
    // Short runs are copied by hand: a subarray per sequence costs more.
    if (literals < 64) { for (let i = anchor; i < start; i++) dst[d++] = src[i]!; }
    else {
      dst.set(src.subarray(anchor, start), d);
      d += literals;
    }
    const offset = start - from;
    dst[d++] = offset & 0xff;
    dst[d++] = offset >> 8;
    if (matchLength >= 15) d = writeLength(dst, d, matchLength - 15);
    s = end;
    anchor = end;
  }
  // The last sequence: literals only.
  const literals = n - anchor;
  dst[d++] = Math.min(literals, 15) << 4;
  if (literals >= 15) d = writeLength(dst, d, literals - 15);
  dst.set(src.subarray(anchor), d);
  d += literals;
  return dst.slice(0, d);
}

/** Write the extra bytes of a length over 15 at `d`; returns the next position. */
function writeLength(dst: Uint8Array, d: number, extra: number): number {
  for (; extra >= 255; extra -= 255) dst[d++] = 255;
  dst[d++] = extra;
  return d;
}

/** Why a block failed to decode, and where (offset in the block). */
export class Lz4BlockError extends Error {
  /** Offset in the compressed block where decoding stopped. */
  readonly position: number;

  /**
   * Describe a corrupt block.
   *
   * @param message What is wrong.
   * @param position Offset in the compressed block.
   */
  constructor(message: string, position: number) {
    super(message);
    this.name = "Lz4BlockError";
    this.position = position;
  }
}

/**
 * Decode one LZ4 block into `dst`, which must come out exactly full.
 * Every length and offset is checked before it is used.
 *
 * @param src The compressed block.
 * @param dst The output, of the exact decompressed size.
 * @throws {Lz4BlockError} When the block is corrupt or does not fill `dst` exactly.
 */
export function lz4DecompressBlock(src: Uint8Array, dst: Uint8Array): void {
  const end = src.length;
  const out = dst.length;
  let s = 0;
  let d = 0;
  const fail = (message: string): never => {
    throw new Lz4BlockError(message, s);
  };
  const readLength = (base: number): number => {
    let n = base;
    if (base === 15) {
      for (;;) {
        if (s >= end) fail("truncated inside a length");
        const b = src[s++]!;
        n += b;
        if (b !== 255) break;
      }
    }
    return n;
  };
  if (end === 0) fail("empty block");
  for (;;) {
    if (s >= end) fail("truncated: a sequence token is missing");
    const token = src[s++]!;
    const literals = readLength(token >> 4);
    if (s + literals > end) {
      fail(`a run of ${literals} literals runs past the end of the block`);
    }
    if (d + literals > out) {
      fail(`the block decodes to more than the declared ${out} bytes`);
    }
    dst.set(src.subarray(s, s + literals), d);
    s += literals;
    d += literals;
    // The last sequence has literals only.
    if (s === end) break;
    if (s + 2 > end) fail("truncated inside a match offset");
    const offset = src[s]! | (src[s + 1]! << 8);
    s += 2;
    if (offset === 0 || offset > d) {
      fail(`match offset ${offset} points before the start of the output (at ${d})`);
    }
    const length = readLength(token & 15) + 4;
    if (d + length > out) {
      fail(`the block decodes to more than the declared ${out} bytes`);
    }
    if (offset >= length) {
      dst.copyWithin(d, d - offset, d - offset + length);
      d += length;
    } else {
      // Overlapping copy repeats the last `offset` bytes.
      for (let i = 0; i < length; i++, d++) dst[d] = dst[d - offset]!;
    }
  }
  if (d !== out) fail(`the block decodes to ${d} bytes, ${out} were declared`);
}
