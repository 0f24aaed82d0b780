// This module is browser compatible.

/**
 * Q4_K (APR_V2.md §5, FORMATS.md §3): super-blocks of 256 values in 144 bytes
 * — f16 `d`, f16 `dmin`, 12 bytes of packed 6-bit sub-block scales and mins,
 * 128 bytes of nibbles; eight sub-blocks of 32.
 *
 * The encoder is a port of llama.cpp's quantizers (`quantize_row_q4_K_ref`
 * with `make_qkx2_quants`, what `llama-quantize` runs without an importance
 * matrix, and `quantize_row_q4_K_impl` with one), in f32 arithmetic with a
 * rounding after every operation, so it produces the same bytes. The decoder is bit-exact with
 * `dequantize_row_q4_K`.
 *
 * @module
 */

import { f16Table } from "./f16.ts";
import { scaleMinK4 } from "./_k_scales.ts";
import { fitScaleMinBlock, type ScaleSearch } from "./_k_scale_min_block.ts";
import { countBlocks } from "./_count_blocks.ts";

/** Values per Q4_K super-block. */
export const Q4_K_BLOCK_ELEMENTS = 256;
/** Bytes per Q4_K super-block. */
export const Q4_K_BLOCK_BYTES = 144;

/** Q4_K's reference search (`make_qkx2_quants(32, 15, …, -1, 0.1, 20)`). */
const SEARCH: ScaleSearch = { nmax: 15, rmin: -1, rdelta: Math.fround(0.1), nstep: 20 };
/** Scratch: one super-block's levels. */
const L = new Uint8Array(256);

/**
 * Quantize values to Q4_K super-blocks (llama.cpp's algorithm): the reference
 * quantizer `quantize_row_q4_K_ref`, or with an importance matrix
 * `quantize_row_q4_K_impl` (what `llama-quantize --imatrix` runs).
 *
 * @param values A whole number of 256-value super-blocks (pad rows with zeros
 * first); with `importance`, a whole number of rows of `importance.length` values.
 * @param out Destination of `values.length / 256 * 144` bytes.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values.length` is not a multiple of 256 (or of the row).
 *
 * @example Usage
 * ```ts
 * import { decodeQ4K, encodeQ4K } from "./q4_k.ts";
 * const values = new Float32Array(256).map((_, i) => Math.sin(i));
 * const back = decodeQ4K(encodeQ4K(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.1));
 * ```
 */
export function encodeQ4K(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const nb = countBlocks("Q4_K", values, importance);
  const y = out ?? new Uint8Array(nb * Q4_K_BLOCK_BYTES);
  const cols = importance?.length ?? 256;
  for (let i = 0; i < nb; i++) {
    const xo = i * 256;
    const o = i * Q4_K_BLOCK_BYTES;
    fitScaleMinBlock(values, xo, SEARCH, y, o, L, importance, xo % cols);
    let q = o + 16;
    for (let j = 0; j < 256; j += 64) {
      for (let l = 0; l < 32; l++) y[q + l] = L[j + l]! | (L[j + l + 32]! << 4);
      q += 32;
    }
  }
  return y;
}

/**
 * Dequantize Q4_K super-blocks, bit-exact with llama.cpp's `dequantize_row_q4_K`.
 *
 * @param bytes Whole blocks of 144 bytes, at any offset.
 * @param out Destination of `256 * blocks` values.
 * @returns `out`, or a new array when `out` is not given.
 */
export function decodeQ4K(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const nb = Math.floor(bytes.length / Q4_K_BLOCK_BYTES);
  const y = out ?? new Float32Array(nb * 256);
  const t = f16Table();
  const sm = new Uint8Array(2);
  for (let i = 0; i < nb; i++) {
    const o = i * Q4_K_BLOCK_BYTES;
    const d = t[bytes[o]! | (bytes[o + 1]! << 8)]!;
    const min = t[bytes[o + 2]! | (bytes[o + 3]! << 8)]!;
    let q = o + 16;
    let yi = i * 256;
    for (let is = 0; is < 8; is += 2) {
      scaleMinK4(is, bytes, o + 4, sm);
      // d * sc and min * m are exact in f32 (11 + 6 bits), as are the products
      // with the nibbles below, so a single rounding on store matches C.
      const d1 = d * sm[0]!;
      const m1 = min * sm[1]!;
      scaleMinK4(is + 1, bytes, o + 4, sm);
      const d2 = d * sm[0]!;
      const m2 = min * sm[1]!;
      for (let l = 0; l < 32; l++) y[yi++] = d1 * (bytes[q + l]! & 15) - m1;
      for (let l = 0; l < 32; l++) y[yi++] = d2 * (bytes[q + l]! >>> 4) - m2;
      q += 32;
    }
  }
  return y;
}
