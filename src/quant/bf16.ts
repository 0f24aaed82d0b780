// This module is browser compatible.

/**
 * bfloat16 conversions (APR_V2.md §5): f32 → bf16 keeps the upper 16 bits
 * after rounding to nearest, ties to even; NaN stays NaN, forced quiet (sign
 * and top payload bits kept). bf16 → f32 is exact (the bits shifted left 16).
 *
 * @module
 */

import { f32Bits, readU16, u16View, writableU16, writeU16 } from "./_bytes.ts";

const SCRATCH_F32 = new Float32Array(1);
const SCRATCH_U32 = new Uint32Array(SCRATCH_F32.buffer);

/**
 * Convert raw f32 bits to bf16 bits (round to nearest, ties to even).
 *
 * @param x The f32 bit pattern, as an unsigned 32-bit integer.
 * @returns The bf16 bit pattern.
 */
export function f32BitsToBf16Bits(x: number): number {
  if ((x & 0x7fffffff) > 0x7f800000) return ((x >>> 16) | 0x40) & 0xffff;
  // Adding 0x7fff plus the kept lsb rounds the dropped half to even; a carry
  // into the exponent is the correct rounding (up to infinity at the top).
  return ((x >>> 0) + 0x7fff + ((x >>> 16) & 1)) >>> 16 & 0xffff;
}

/**
 * Convert a number to bf16 bits, first rounding it to f32.
 *
 * @param value The value.
 * @returns The bf16 bit pattern.
 */
export function f32ToBf16(value: number): number {
  SCRATCH_F32[0] = value;
  return f32BitsToBf16Bits(SCRATCH_U32[0]!);
}

/**
 * Convert bf16 bits to a number (exact).
 *
 * @param h The bf16 bit pattern.
 * @returns The value.
 */
export function bf16ToF32(h: number): number {
  SCRATCH_U32[0] = (h & 0xffff) << 16;
  return SCRATCH_F32[0]!;
}

/**
 * Encode f32 values as little-endian bf16 bytes.
 *
 * @param values The values.
 * @param out Destination of `2 * values.length` bytes, at any byte offset.
 * @returns `out`, or a new array when `out` is not given.
 *
 * @example Usage
 * ```ts
 * import { encodeBf16 } from "./bf16.ts";
 * console.assert(encodeBf16(new Float32Array([1, -2])).join() === "128,63,0,192");
 * ```
 */
export function encodeBf16(values: Float32Array, out?: Uint8Array): Uint8Array {
  const n = values.length;
  const dst = out ?? new Uint8Array(2 * n);
  if (dst.length < 2 * n) {
    throw new RangeError(`Cannot encode bf16: output holds ${dst.length} bytes, ${2 * n} needed`);
  }
  const bits = f32Bits(values);
  const w = writableU16(dst);
  if (w !== undefined) {
    for (let i = 0; i < n; i++) {
      const x = bits[i]!;
      w[i] = (x & 0x7fffffff) > 0x7f800000
        ? (x >>> 16) | 0x40
        : (x + 0x7fff + ((x >>> 16) & 1)) >>> 16;
    }
  } else {
    for (let i = 0; i < n; i++) writeU16(dst, 2 * i, f32BitsToBf16Bits(bits[i]!));
  }
  return dst;
}

/**
 * Decode little-endian bf16 bytes to f32 values (exact).
 *
 * @param bytes Payload of `2n` bytes, at any byte offset.
 * @param out Destination of `n` values.
 * @returns `out`, or a new array when `out` is not given.
 */
export function decodeBf16(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const n = bytes.length >>> 1;
  const dst = out ?? new Float32Array(n);
  const o = f32Bits(dst);
  if ((bytes.byteOffset & 1) === 0) {
    const h = u16View(bytes);
    for (let i = 0; i < n; i++) o[i] = h[i]! << 16;
  } else {
    for (let i = 0; i < n; i++) o[i] = readU16(bytes, 2 * i) << 16;
  }
  return dst;
}
