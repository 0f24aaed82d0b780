// This module is browser compatible.

/**
 * APR_Q4 (APR_V2.md §5): blocks of 32 values over the flattened tensor, each
 * an f16 scale (`absmax / 7` in f32, 1 for an all-zero block) and 16 bytes of
 * nibbles `clamp(round(v / s), -8, 7) + 8`, element `i` in byte `i / 2`, low
 * nibble for even `i`. The quotient uses the f32 scale, not the stored f16.
 *
 * @module
 */

import { f16Table, f32ToF16 } from "./f16.ts";
import { readU16, writeU16 } from "./_bytes.ts";

/** Values per APR_Q4 block. */
export const APR_Q4_BLOCK_ELEMENTS = 32;
/** Bytes per APR_Q4 block: f16 scale + 16 bytes of nibbles. */
export const APR_Q4_BLOCK_BYTES = 18;

const fr = Math.fround;

/**
 * Quantize values to APR_Q4 blocks. A last partial block is zero-filled.
 *
 * @param values The values (a whole number of blocks, except at the tensor's end).
 * @param out Destination of `ceil(n / 32) * 18` bytes.
 * @returns `out`, or a new array when `out` is not given.
 *
 * @example Usage
 * ```ts
 * import { decodeAprQ4, encodeAprQ4 } from "./apr_q4.ts";
 * const bytes = encodeAprQ4(new Float32Array([7, 2.5, -2.5])); // one zero-filled block
 * console.assert(bytes.length === 18);
 * console.assert(decodeAprQ4(bytes).subarray(0, 3).join() === "7,3,-3");
 * ```
 */
export function encodeAprQ4(values: Float32Array, out?: Uint8Array): Uint8Array {
  const n = values.length;
  const blocks = Math.ceil(n / APR_Q4_BLOCK_ELEMENTS);
  const dst = out ?? new Uint8Array(blocks * APR_Q4_BLOCK_BYTES);
  for (let b = 0; b < blocks; b++) {
    const base = b * APR_Q4_BLOCK_ELEMENTS;
    const end = Math.min(base + APR_Q4_BLOCK_ELEMENTS, n);
    let absmax = 0;
    for (let i = base; i < end; i++) {
      const a = Math.abs(values[i]!);
      if (a > absmax) absmax = a;
    }
    const s = absmax === 0 ? 1 : fr(absmax / 7);
    const o = b * APR_Q4_BLOCK_BYTES;
    writeU16(dst, o, f32ToF16(s));
    for (let j = 0; j < 16; j++) {
      const i0 = base + 2 * j;
      const lo = i0 < end ? quant4(values[i0]!, s) : 8;
      const hi = i0 + 1 < end ? quant4(values[i0 + 1]!, s) : 8;
      dst[o + 2 + j] = lo | (hi << 4);
    }
  }
  return dst;
}

function quant4(v: number, s: number): number {
  // Halves away from zero, clamped to [-8, 7]; NaN gives 0 as Rust's cast does.
  const r = fr(v / s);
  if (r < 0) {
    const a = -r;
    return 8 - (a >= 8 ? 8 : (a + 0.5) | 0);
  }
  return 8 + (r >= 7 ? 7 : (r + 0.5) | 0);
}

/**
 * Dequantize APR_Q4 blocks: `(nibble - 8) * f16_to_f32(scale)`.
 *
 * @param bytes Whole blocks of 18 bytes.
 * @param out Destination of `32 * blocks` values.
 * @returns `out`, or a new array when `out` is not given.
 */
export function decodeAprQ4(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const blocks = Math.floor(bytes.length / APR_Q4_BLOCK_BYTES);
  const dst = out ?? new Float32Array(blocks * APR_Q4_BLOCK_ELEMENTS);
  const t = f16Table();
  for (let b = 0; b < blocks; b++) {
    const o = b * APR_Q4_BLOCK_BYTES;
    const s = t[readU16(bytes, o)]!;
    const y = b * APR_Q4_BLOCK_ELEMENTS;
    for (let j = 0; j < 16; j++) {
      const q = bytes[o + 2 + j]!;
      dst[y + 2 * j] = ((q & 15) - 8) * s;
      dst[y + 2 * j + 1] = ((q >>> 4) - 8) * s;
    }
  }
  return dst;
}
