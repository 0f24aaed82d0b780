// This module is browser compatible.

/**
 * IEEE 754 binary16 (half precision) conversions, bit-exact: f32 → f16 rounds
 * to nearest, ties to even (APR_V2.md §5), produces subnormals, overflows to
 * ±infinity, and keeps NaN a quiet NaN (sign and top payload bits kept).
 * f16 → f32 is exact.
 *
 * @module
 */

import { f32Bits, readU16, u16View, writableU16, writeU16 } from "./_bytes.ts";

const SCRATCH_F32 = new Float32Array(1);

// Float16Array exists in V8 >= 13.5 (Deno 2.3+) and current browsers; older
// engines fall back to the bit-exact scalar path.
// deno-lint-ignore no-explicit-any
const NativeFloat16Array: Float32ArrayConstructor | undefined = (globalThis as any).Float16Array;
const SCRATCH_U32 = new Uint32Array(SCRATCH_F32.buffer);

/**
 * Convert raw f32 bits to f16 bits (round to nearest, ties to even).
 *
 * @param x The f32 bit pattern, as an unsigned 32-bit integer.
 * @returns The f16 bit pattern.
 */
export function f32BitsToF16Bits(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const a = x & 0x7fffffff;
  if (a >= 0x38800000) {
    // Normal f16 range (>= 2^-14) or beyond.
    if (a >= 0x477ff000) {
      // >= 65520 rounds to infinity (65520 is the tie between 65504 and 2^16, and
      // 65504's mantissa is odd); NaN stays NaN, forced quiet, top payload bits kept.
      if (a > 0x7f800000) return sign | 0x7e00 | ((a >>> 13) & 0x3ff);
      return sign | 0x7c00;
    }
    // Rebias the exponent (127 → 15) and round the 13 dropped bits to even.
    const m = a - 0x38000000;
    return sign | ((m + 0xfff + ((m >>> 13) & 1)) >>> 13);
  }
  if (a <= 0x33000000) return sign; // <= 2^-25: rounds to ±0 (2^-25 itself is a tie to even 0).
  // Subnormal f16: value in units of 2^-24 is mant >> (126 - e), rounded to even.
  const e = a >>> 23;
  const mant = (a & 0x7fffff) | 0x800000;
  const shift = 126 - e;
  const half = 1 << (shift - 1);
  let r = mant >>> shift;
  const rem = mant & ((half << 1) - 1);
  if (rem > half || (rem === half && (r & 1) === 1)) r++;
  return sign | r;
}

/**
 * Convert a number to f16 bits, first rounding it to f32 (as a Float32Array
 * would), then to f16 with ties to even.
 *
 * @param value The value.
 * @returns The f16 bit pattern.
 */
export function f32ToF16(value: number): number {
  SCRATCH_F32[0] = value;
  return f32BitsToF16Bits(SCRATCH_U32[0]!);
}

let F16_TABLE: Float32Array | undefined;

function buildF16Table(): Float32Array {
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) t[h] = f16BitsToF32Slow(h);
  return t;
}

function f16BitsToF32Slow(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) {
    if (m === 0) return sign * Infinity;
    // NaN: build the f32 pattern so sign and payload survive (quiet bit included).
    SCRATCH_U32[0] = ((h & 0x8000) << 16) | 0x7f800000 | (m << 13);
    return SCRATCH_F32[0]!;
  }
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

/** The 65536-entry f16 → f32 table (256 KiB), built on first use. */
export function f16Table(): Float32Array {
  return F16_TABLE ??= buildF16Table();
}

/**
 * Convert f16 bits to a number (exact).
 *
 * @param h The f16 bit pattern.
 * @returns The value.
 */
export function f16ToF32(h: number): number {
  return f16Table()[h & 0xffff]!;
}

/**
 * Encode f32 values as little-endian f16 bytes.
 *
 * @param values The values.
 * @param out Destination of `2 * values.length` bytes, at any byte offset.
 * @returns `out`, or a new array when `out` is not given.
 *
 * @example Usage
 * ```ts
 * import { encodeF16 } from "./f16.ts";
 * const bytes = encodeF16(new Float32Array([1, 65520, -0]));
 * console.assert(bytes.join() === "0,60,0,124,0,128"); // 0x3c00, +inf, -0
 * ```
 */
export function encodeF16(values: Float32Array, out?: Uint8Array): Uint8Array {
  const n = values.length;
  const dst = out ?? new Uint8Array(2 * n);
  if (dst.length < 2 * n) {
    throw new RangeError(`Cannot encode f16: output holds ${dst.length} bytes, ${2 * n} needed`);
  }
  const bits = f32Bits(values);
  const w = writableU16(dst);
  if (w !== undefined && NativeFloat16Array !== undefined) {
    // The engine's conversion is RNE too (checked against f32BitsToF16Bits for all
    // 2^32 inputs) and ~1.4x faster, but it canonicalizes NaN: redo only those.
    new NativeFloat16Array(w.buffer, w.byteOffset, n).set(values.subarray(0, n));
    for (let i = 0; i < n; i++) {
      if ((w[i]! & 0x7fff) > 0x7c00) w[i] = f32BitsToF16Bits(bits[i]!);
    }
  } else if (w !== undefined) {
    for (let i = 0; i < n; i++) w[i] = f32BitsToF16Bits(bits[i]!);
  } else {
    for (let i = 0; i < n; i++) writeU16(dst, 2 * i, f32BitsToF16Bits(bits[i]!));
  }
  return dst;
}

/**
 * Decode little-endian f16 bytes to f32 values (exact).
 *
 * @param bytes Payload of `2n` bytes, at any byte offset.
 * @param out Destination of `n` values.
 * @returns `out`, or a new array when `out` is not given.
 *
 * @example Usage
 * ```ts
 * import { decodeF16 } from "./f16.ts";
 * console.assert(decodeF16(new Uint8Array([0xff, 0x7b])).join() === "65504");
 * ```
 */
export function decodeF16(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const n = bytes.length >>> 1;
  const dst = out ?? new Float32Array(n);
  const t = f16Table();
  if ((bytes.byteOffset & 1) === 0) {
    const h = u16View(bytes);
    for (let i = 0; i < n; i++) dst[i] = t[h[i]!]!;
  } else {
    for (let i = 0; i < n; i++) dst[i] = t[readU16(bytes, 2 * i)]!;
  }
  return dst;
}
