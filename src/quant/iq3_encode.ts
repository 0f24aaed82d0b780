// This module is browser compatible.

/**
 * Encoders for ggml's 3-bit i-quants on the D4 lattice grids: IQ3_XXS (98
 * bytes per 256 values) and IQ3_S (110 bytes), ports of llama.cpp's
 * `quantize_iq3_xxs` / `quantize_iq3_s` (`quantize_row_iq3_*_impl`) with the
 * search of `_iq_grid_search.ts`, so the bytes are ggml's. Importance weights
 * are optional for both (ggml weights by `x²` without them).
 *
 * @module
 */

import { iqGrid } from "./_iq_grids.ts";
import {
  blockWeights,
  foldSigns,
  gridIndexOf,
  type GridSearch,
  maxOf,
  scaleCode,
  searchGridScale,
  sumSquares,
} from "./_iq_grid_search.ts";
import { f32ToF16 } from "./f16.ts";
import { countBlocks } from "./_count_blocks.ts";
import { writeU16, writeU32 } from "./_bytes.ts";

const fr = Math.fround;
/** ggml's GROUP_MAX_EPS_IQ3_XXS. */
const EPS_IQ3_XXS = fr(1e-8);
const F_0_2 = fr(0.2);

const WEIGHT = new Float32Array(32);
const WAUX = new Float32Array(32);
const XVAL = new Float32Array(32);
const L = new Int8Array(32);
const SIGNS = new Uint8Array(4);
const SCALES = new Float32Array(8);

const squares = (v: number) => fr(v * v);

/**
 * Quantize values to IQ3_XXS super-blocks, as llama.cpp's `quantize_iq3_xxs`.
 *
 * @param values Whole 256-value super-blocks; with `importance`, whole rows of `importance.length`.
 * @param out Destination of `values.length / 256 * 98` bytes.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values` is not whole super-blocks (or rows).
 *
 * @example Usage
 * ```ts
 * import { encodeIq3Xxs } from "./iq3_encode.ts";
 * import { decodeIq3Xxs } from "./i_quants.ts";
 * const values = new Float32Array(256).map((_, i) => Math.sin(i));
 * const back = decodeIq3Xxs(encodeIq3Xxs(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.5));
 * ```
 */
export function encodeIq3Xxs(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const nb = countBlocks("IQ3_XXS", values, importance);
  const y = out ?? new Uint8Array(nb * 98);
  const cols = importance?.length ?? 256;
  const s: GridSearch = {
    grid: iqGrid("IQ3_XXS"),
    kMaxQ: 8,
    isMax: 15,
    step: F_0_2,
    onGridStart: true,
    refine: "offgrid",
  };
  for (let ibl = 0; ibl < nb; ibl++) {
    const o = ibl * 98;
    const xo = ibl * 256;
    y.fill(0, o, o + 98);
    const sigma2 = fr(fr(2 * sumSquares(values, xo)) / 256);
    let maxScale = 0;
    for (let ib = 0; ib < 8; ib++) {
      const xb = xo + 32 * ib;
      blockWeights(values, xb, 32, sigma2, importance, xb % cols, squares, WEIGHT, WAUX);
      foldSigns(values, xb, 32, WEIGHT, XVAL, SIGNS, true);
      const max = maxOf(XVAL, 32);
      L.fill(0);
      if (max < EPS_IQ3_XXS) {
        SCALES[ib] = 0;
        continue;
      }
      let scale = searchGridScale(s, 32, XVAL, WEIGHT, WAUX, max, fr(max / 15), L);
      if (scale < 0) {
        scale = -scale;
        for (let k = 0; k < 4; k++) SIGNS[k] = ~SIGNS[k]! & 127;
      }
      for (let k = 0; k < 8; k++) y[o + 2 + 8 * ib + k] = gridIndexOf(s.grid, L, 4 * k);
      const signs = SIGNS[0]! | (SIGNS[1]! << 7) | (SIGNS[2]! << 14) | (SIGNS[3]! << 21);
      writeU32(y, o + 66 + 4 * ib, signs);
      SCALES[ib] = scale;
      maxScale = maxScale > scale ? maxScale : scale;
    }
    if (!maxScale) {
      y.fill(0, o, o + 98);
      continue;
    }
    const d = fr(maxScale / 31);
    writeU16(y, o, f32ToF16(fr(d * fr(1.0125))));
    const id = fr(1 / d);
    for (let ib = 0; ib < 8; ib++) {
      y[o + 66 + 4 * ib + 3]! |= scaleCode(id, SCALES[ib]!, 15) << 4;
    }
  }
  return y;
}

/**
 * Quantize values to IQ3_S super-blocks, as llama.cpp's `quantize_iq3_s`.
 *
 * @param values Whole 256-value super-blocks; with `importance`, whole rows of `importance.length`.
 * @param out Destination of `values.length / 256 * 110` bytes.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values` is not whole super-blocks (or rows).
 *
 * @example Usage
 * ```ts
 * import { encodeIq3S } from "./iq3_encode.ts";
 * import { decodeIq3S } from "./i_quants.ts";
 * const values = new Float32Array(256).map((_, i) => Math.sin(i));
 * const back = decodeIq3S(encodeIq3S(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.5));
 * ```
 */
export function encodeIq3S(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const nb = countBlocks("IQ3_S", values, importance);
  const y = out ?? new Uint8Array(nb * 110);
  const cols = importance?.length ?? 256;
  const s: GridSearch = {
    grid: iqGrid("IQ3_S"),
    kMaxQ: 8,
    isMax: 9,
    step: F_0_2,
    onGridStart: false,
    refine: "all",
  };
  for (let ibl = 0; ibl < nb; ibl++) {
    const o = ibl * 110;
    const xo = ibl * 256;
    y.fill(0, o, o + 110);
    const sigma2 = fr(fr(2 * sumSquares(values, xo)) / 256);
    let maxScale = 0;
    // ggml advances its qs and signs pointers only past sub-blocks it encodes
    // (a skipped all-zero one leaves them), while qh is indexed by sub-block.
    let qs = o + 2;
    let signs = o + 74;
    for (let ib = 0; ib < 8; ib++) {
      const xb = xo + 32 * ib;
      blockWeights(values, xb, 32, sigma2, importance, xb % cols, squares, WEIGHT, WAUX);
      foldSigns(values, xb, 32, WEIGHT, XVAL, SIGNS, false);
      const max = maxOf(XVAL, 32);
      L.fill(0);
      if (!max) {
        SCALES[ib] = 0;
        continue;
      }
      let scale = searchGridScale(s, 32, XVAL, WEIGHT, WAUX, max, fr(max / 15), L);
      if (scale < 0) {
        scale = -scale;
        for (let k = 0; k < 4; k++) SIGNS[k] = ~SIGNS[k]! & 255;
      }
      for (let k = 0; k < 8; k++) {
        const index = gridIndexOf(s.grid, L, 4 * k);
        y[qs + k] = index & 255;
        y[o + 66 + ib]! |= (index >> 8) << k;
      }
      qs += 8;
      y.set(SIGNS, signs);
      signs += 4;
      SCALES[ib] = scale;
      maxScale = maxScale > scale ? maxScale : scale;
    }
    if (!maxScale) continue;
    const d = fr(maxScale / 31);
    writeU16(y, o, f32ToF16(fr(d * fr(1.033))));
    const id = fr(1 / d);
    for (let ib = 0; ib < 8; ib += 2) {
      const l1 = scaleCode(id, SCALES[ib]!, 15);
      const l2 = scaleCode(id, SCALES[ib + 1]!, 15);
      y[o + 106 + ib / 2] = l1 | (l2 << 4);
    }
  }
  return y;
}
