// This module is browser compatible.

/**
 * CRC-32 (zlib/IEEE: reflected polynomial 0xEDB88320, init and final xor
 * 0xFFFFFFFF), the checksum of APR v2's header and footer (APR_V2.md §1–2).
 *
 * Uses `node:zlib`'s native `crc32` where the runtime has it (Deno, Node: many
 * GB/s), and a table-driven fallback in browsers.
 *
 * @module
 */

import { HAS_NODE_MODULES } from "../../runtime/which.ts";

type Crc32Function = (data: Uint8Array, value?: number) => number;

// A dynamic import, only where node: modules exist (src/runtime/which.ts), so
// that a browser neither fails to load the module nor asks for "node:zlib".
let native: Crc32Function | undefined;
if (HAS_NODE_MODULES) {
  try {
    const zlib = await import("node:zlib");
    if (typeof zlib.crc32 === "function") native = zlib.crc32 as Crc32Function;
  } catch {
    native = undefined;
  }
}

const POLY = 0xedb88320;

let table: Uint32Array | undefined;
function crcTable(): Uint32Array {
  if (table === undefined) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  return table;
}

/**
 * CRC-32 of `bytes`, continuing from the CRC of the bytes before them.
 *
 * @example Usage
 * ```ts
 * import { crc32 } from "./crc32.ts";
 * const crc = crc32(new TextEncoder().encode("123456789"));
 * console.assert(crc === 0xcbf43926);
 * ```
 *
 * @param bytes The bytes to checksum.
 * @param previous The CRC of the preceding bytes (0 to start).
 * @returns The CRC of the preceding bytes followed by `bytes`, as an unsigned 32-bit number.
 */
export function crc32(bytes: Uint8Array, previous = 0): number {
  if (native !== undefined) return native(bytes, previous >>> 0) >>> 0;
  const t = crcTable();
  let c = (previous ^ 0xffffffff) >>> 0;
  for (let i = 0; i < bytes.length; i++) c = t[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// Multiply a and b modulo the CRC polynomial (bit-reflected GF(2) arithmetic,
// zlib's multmodp).
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

// X2N[k] = x^(2^k) mod p, zlib's x2n_table.
const X2N: number[] = (() => {
  const out: number[] = [];
  let p = 0x40000000; // x^1
  out.push(p);
  for (let n = 1; n < 32; n++) {
    p = multModP(p, p);
    out.push(p);
  }
  return out;
})();

/**
 * CRC-32 of the concatenation of two byte runs, from the CRC of each and the
 * length of the second (zlib's `crc32_combine`): how the APR sink builds the
 * footer from per-tensor CRCs (DESIGN.md §2.3).
 *
 * @example Usage
 * ```ts
 * import { crc32, crc32Combine } from "./crc32.ts";
 * const a = new TextEncoder().encode("12345");
 * const b = new TextEncoder().encode("6789");
 * console.assert(crc32Combine(crc32(a), crc32(b), b.length) === 0xcbf43926);
 * ```
 *
 * @param crcA CRC of the first run.
 * @param crcB CRC of the second run.
 * @param lengthB Length of the second run in bytes (any safe integer, may exceed 2^32).
 * @returns CRC of the first run followed by the second.
 * @throws {RangeError} When `lengthB` is not a non-negative safe integer.
 */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  if (!Number.isSafeInteger(lengthB) || lengthB < 0) {
    throw new RangeError(`Cannot combine CRCs: length ${lengthB} is not a non-negative integer`);
  }
  // x^(8 * lengthB) mod p: walk the bits of lengthB (as a Number, since it
  // may exceed 32 bits), starting at k = 3 because one byte is 2^3 bits.
  let p = 0x80000000; // x^0
  let n = lengthB;
  let k = 3;
  while (n > 0) {
    if (n % 2 === 1) p = multModP(X2N[k & 31]!, p);
    n = Math.floor(n / 2);
    k++;
  }
  return (multModP(p, crcA >>> 0) ^ (crcB >>> 0)) >>> 0;
}
