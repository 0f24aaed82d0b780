// This module is browser compatible.

/**
 * LZ4 *block* format (not frame), the one place aprkit touches LZ4.
 *
 * Compression uses the npm package `lz4js` (pure JavaScript, no native or
 * WebAssembly parts, so it runs in Deno, browsers and a compiled binary).
 * Decompression is a strict decoder written here: lz4js' decoder does not
 * check offsets or lengths against its buffers, and a corrupt file must be
 * rejected with a clear message, never decoded into garbage.
 *
 * @module
 */

import lz4js from "lz4js";

/** The part of lz4js used here (the package ships no types). */
interface Lz4js {
  compressBound(n: number): number;
  compressBlock(
    src: Uint8Array,
    dst: Uint8Array,
    sIndex: number,
    sLength: number,
    hashTable: Uint32Array,
  ): number;
}

const codec = lz4js as unknown as Lz4js;

/** LZ4's hash table of 2^16 entries, as lz4js sizes it. */
const HASH_ENTRIES = 1 << 16;

/**
 * Compress bytes into one LZ4 block.
 *
 * @param src The bytes.
 * @returns The block (decodes to exactly `src`).
 */
export function lz4CompressBlock(src: Uint8Array): Uint8Array {
  const dst = new Uint8Array(codec.compressBound(src.length) + 16);
  const n = codec.compressBlock(src, dst, 0, src.length, new Uint32Array(HASH_ENTRIES));
  // lz4js returns 0 when it found no match: the block is then all literals.
  return n > 0 ? dst.slice(0, n) : literalBlock(src);
}

/** One sequence of literals only: a valid block for any input. */
function literalBlock(src: Uint8Array): Uint8Array {
  const extra = src.length >= 15 ? Math.floor((src.length - 15) / 255) + 1 : 0;
  const out = new Uint8Array(1 + extra + src.length);
  let at = 0;
  if (src.length >= 15) {
    out[at++] = 0xf0;
    let n = src.length - 15;
    for (; n >= 255; n -= 255) out[at++] = 255;
    out[at++] = n;
  } else {
    out[at++] = src.length << 4;
  }
  out.set(src, at);
  return out;
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
