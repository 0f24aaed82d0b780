// This module is browser compatible.

/**
 * Q5_K (FORMATS.md §3): super-blocks of 256 values in 176 bytes — f16 `d`,
 * f16 `dmin`, 12 bytes of packed 6-bit sub-block scales and mins, 32 bytes of
 * fifth bits, 128 bytes of nibbles; eight sub-blocks of 32. GGUF only: APR
 * readers do not decode it (docs/QUANTIZATION.md, presets for APR).
 *
 * The encoder is a port of llama.cpp's quantizers (`quantize_row_q5_K_ref`,
 * what `llama-quantize` runs without an importance matrix, and
 * `quantize_row_q5_K_impl` with one) in f32 arithmetic, so it produces the
 * same bytes. The decoder is `decodeQ5K` in `k_quants.ts`.
 *
 * @module
 */

import { fitScaleMinBlock, type ScaleSearch } from "./_k_scale_min_block.ts";
import { countBlocks } from "./_count_blocks.ts";

/** Bytes per Q5_K super-block. */
export const Q5_K_BLOCK_BYTES = 176;

/** Q5_K's reference search (`make_qkx2_quants(32, 31, …, -0.5, 0.1, 15)`). */
const SEARCH: ScaleSearch = {
  nmax: 31,
  rmin: Math.fround(-0.5),
  rdelta: Math.fround(0.1),
  nstep: 15,
};
/** Scratch: one super-block's levels. */
const L = new Uint8Array(256);

/**
 * Quantize values to Q5_K super-blocks (llama.cpp's algorithm).
 *
 * @param values A whole number of 256-value super-blocks; with `importance`,
 * a whole number of rows of `importance.length` values.
 * @param out Destination of `values.length / 256 * 176` bytes.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values.length` is not a multiple of 256 (or of the row).
 *
 * @example Usage
 * ```ts
 * import { encodeQ5K } from "./q5_k.ts";
 * import { decodeQ5K } from "./k_quants.ts";
 * const values = new Float32Array(256).map((_, i) => Math.sin(i));
 * const back = decodeQ5K(encodeQ5K(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.05));
 * ```
 */
export function encodeQ5K(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const nb = countBlocks("Q5_K", values, importance);
  const y = out ?? new Uint8Array(nb * Q5_K_BLOCK_BYTES);
  const cols = importance?.length ?? 256;
  for (let i = 0; i < nb; i++) {
    const xo = i * 256;
    const o = i * Q5_K_BLOCK_BYTES;
    fitScaleMinBlock(values, xo, SEARCH, y, o, L, importance, xo % cols);
    // qh: bit 2k (2k+1) of byte j is the fifth bit of value j (j + 32) of pair k.
    const qh = o + 16;
    y.fill(0, qh, qh + 32);
    let ql = o + 48;
    let m1 = 1;
    let m2 = 2;
    for (let n = 0; n < 256; n += 64) {
      for (let j = 0; j < 32; j++) {
        let l1 = L[n + j]!;
        if (l1 > 15) {
          l1 -= 16;
          y[qh + j] = y[qh + j]! | m1;
        }
        let l2 = L[n + j + 32]!;
        if (l2 > 15) {
          l2 -= 16;
          y[qh + j] = y[qh + j]! | m2;
        }
        y[ql + j] = l1 | (l2 << 4);
      }
      m1 <<= 2;
      m2 <<= 2;
      ql += 32;
    }
  }
  return y;
}
