// This module is browser compatible.

/**
 * Encoders for ggml's 2-bit i-quants on the E8 lattice grids: IQ2_XXS (66
 * bytes per 256 values), IQ2_XS (74) and IQ2_S (82), ports of llama.cpp's
 * `quantize_iq2_xxs` / `quantize_iq2_xs` / `quantize_iq2_s` with the search
 * of `_iq_grid_search.ts`, so the bytes are ggml's. IQ2_XXS and IQ2_XS need
 * importance weights (ggml asserts); IQ2_S weights by `σ²/4 + x²` without.
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
  requireImportance,
  scaleCode,
  searchGridScale,
  sumSquares,
} from "./_iq_grid_search.ts";
import { makeQpQuants } from "./_make_quants.ts";
import { f32ToF16 } from "./f16.ts";
import { countBlocks } from "./_count_blocks.ts";
import { writeU16, writeU32 } from "./_bytes.ts";

const fr = Math.fround;
/** ggml's GROUP_MAX_EPS and GROUP_MAX_EPS_IQ2_S. */
const EPS = fr(1e-15);
const EPS_IQ2_S = fr(1e-8);
const F_0_1 = fr(0.1);

const WEIGHT = new Float32Array(32);
const WAUX = new Float32Array(32);
const XVAL = new Float32Array(32);
const L = new Int8Array(32);
const LU8 = new Uint8Array(L.buffer);
const SIGNS = new Uint8Array(4);
const SCALES = new Float32Array(16);
const Q2 = new Uint32Array(16);

const unweighted = () => 0;

/**
 * Quantize values to IQ2_XXS super-blocks, as llama.cpp's `quantize_iq2_xxs`.
 *
 * @param values Whole rows of `importance.length` values (whole 256-value super-blocks).
 * @param out Destination of `values.length / 256 * 66` bytes.
 * @param importance One weight per column of a row (an importance matrix entry): required.
 * @returns `out`, or a new array when `out` is not given.
 * @throws {TypeError} Without `importance`.
 * @throws {RangeError} When `values` is not whole rows.
 *
 * @example Usage
 * ```ts
 * import { encodeIq2Xxs } from "./iq2_encode.ts";
 * const values = new Float32Array(256).map((_, i) => Math.sin(i));
 * console.assert(encodeIq2Xxs(values, undefined, new Float32Array(256).fill(1)).length === 66);
 * ```
 */
export function encodeIq2Xxs(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const qw = requireImportance("IQ2_XXS", importance);
  const nb = countBlocks("IQ2_XXS", values, qw);
  const y = out ?? new Uint8Array(nb * 66);
  const s: GridSearch = {
    grid: iqGrid("IQ2_XXS"),
    kMaxQ: 3,
    isMax: 6,
    step: F_0_1,
    onGridStart: true,
    refine: "always",
  };
  for (let ibl = 0; ibl < nb; ibl++) {
    const o = ibl * 66;
    const xo = ibl * 256;
    Q2.fill(0);
    const sigma2 = fr(sumSquares(values, xo) / 256);
    let maxScale = 0;
    for (let ib = 0; ib < 8; ib++) {
      const xb = xo + 32 * ib;
      blockWeights(values, xb, 32, sigma2, qw, xb % qw.length, unweighted, WEIGHT, WAUX);
      foldSigns(values, xb, 32, WEIGHT, XVAL, SIGNS, true);
      const max = maxOf(XVAL, 32);
      if (max < EPS) {
        SCALES[ib] = 0;
        L.fill(0);
        continue;
      }
      let scale = makeQpQuants(32, 4, XVAL, LU8, WEIGHT);
      const effMax = fr(scale * 3);
      if (effMax <= 0) {
        SCALES[ib] = 0;
        L.fill(0);
        continue;
      }
      scale = searchGridScale(s, 32, XVAL, WEIGHT, WAUX, effMax, scale, L);
      if (scale < 0) {
        scale = -scale;
        for (let k = 0; k < 4; k++) SIGNS[k] = ~SIGNS[k]! & 127;
      }
      for (let k = 0; k < 4; k++) {
        Q2[2 * ib] = (Q2[2 * ib]! | (gridIndexOf(s.grid, L, 8 * k) << (8 * k))) >>> 0;
        Q2[2 * ib + 1] = (Q2[2 * ib + 1]! | (SIGNS[k]! << (7 * k))) >>> 0;
      }
      SCALES[ib] = scale;
      maxScale = maxScale > scale ? maxScale : scale;
    }
    y.fill(0, o, o + 66);
    if (!maxScale) continue;
    const d = fr(maxScale / 31);
    writeU16(y, o, f32ToF16(d));
    const id = fr(1 / d);
    for (let ib = 0; ib < 8; ib++) {
      Q2[2 * ib + 1] = (Q2[2 * ib + 1]! | (scaleCode(id, SCALES[ib]!, 15) << 28)) >>> 0;
    }
    for (let i = 0; i < 16; i++) writeU32(y, o + 2 + 4 * i, Q2[i]!);
  }
  return y;
}

/**
 * The 16-value sub-block search of IQ2_XS and IQ2_S: writes each sub-block's
 * grid index and sign byte with `put`, returns the largest scale (0 when the
 * super-block is all below `eps`).
 */
function quantizeSixteens(
  s: GridSearch,
  values: Float32Array,
  xo: number,
  sigma2: number,
  qw: Float32Array | undefined,
  fallback: (v: number) => number,
  eps: number,
  parity: boolean,
  put: (i8: number, index: number, signs: number) => void,
): number {
  const cols = qw?.length ?? 256;
  let maxScale = 0;
  for (let ib = 0; ib < 16; ib++) {
    const xb = xo + 16 * ib;
    blockWeights(values, xb, 16, sigma2, qw, xb % cols, fallback, WEIGHT, WAUX);
    foldSigns(values, xb, 16, WEIGHT, XVAL, SIGNS, parity);
    const max = maxOf(XVAL, 16);
    L.fill(0, 0, 16);
    if (max < eps) {
      SCALES[ib] = 0;
      continue;
    }
    let scale = searchGridScale(s, 16, XVAL, WEIGHT, WAUX, max, fr(max / 5), L);
    if (scale < 0) {
      scale = -scale;
      for (let k = 0; k < 2; k++) SIGNS[k] = ~SIGNS[k]! & (parity ? 127 : 255);
    }
    for (let k = 0; k < 2; k++) put(2 * ib + k, gridIndexOf(s.grid, L, 8 * k), SIGNS[k]!);
    SCALES[ib] = scale;
    maxScale = maxScale > scale ? maxScale : scale;
  }
  return maxScale;
}

/** Pack 16 4-bit sub-block scale codes, two per byte, low nibble first. */
function packScales(y: Uint8Array, at: number, maxScale: number): void {
  const d = fr(maxScale / 31);
  const id = fr(1 / d);
  for (let ib = 0; ib < 16; ib += 2) {
    y[at + ib / 2] = scaleCode(id, SCALES[ib]!, 15) | (scaleCode(id, SCALES[ib + 1]!, 15) << 4);
  }
}

/**
 * Quantize values to IQ2_XS super-blocks, as llama.cpp's `quantize_iq2_xs`.
 *
 * @param values Whole rows of `importance.length` values (whole 256-value super-blocks).
 * @param out Destination of `values.length / 256 * 74` bytes.
 * @param importance One weight per column of a row (an importance matrix entry): required.
 * @returns `out`, or a new array when `out` is not given.
 * @throws {TypeError} Without `importance`.
 * @throws {RangeError} When `values` is not whole rows.
 *
 * @example Usage
 * ```ts
 * import { encodeIq2Xs } from "./iq2_encode.ts";
 * const values = new Float32Array(256).map((_, i) => Math.sin(i));
 * console.assert(encodeIq2Xs(values, undefined, new Float32Array(256).fill(1)).length === 74);
 * ```
 */
export function encodeIq2Xs(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const qw = requireImportance("IQ2_XS", importance);
  const nb = countBlocks("IQ2_XS", values, qw);
  const y = out ?? new Uint8Array(nb * 74);
  const s: GridSearch = {
    grid: iqGrid("IQ2_XS"),
    kMaxQ: 3,
    isMax: 9,
    step: F_0_1,
    onGridStart: true,
    refine: "offgrid",
  };
  for (let ibl = 0; ibl < nb; ibl++) {
    const o = ibl * 74;
    const xo = ibl * 256;
    y.fill(0, o, o + 74);
    const sigma2 = fr(sumSquares(values, xo) / 256);
    // qs: a u16 per 8 values, the grid index and 7 sign bits above it.
    const maxScale = quantizeSixteens(
      s,
      values,
      xo,
      sigma2,
      qw,
      unweighted,
      EPS,
      true,
      (i8, index, signs) => writeU16(y, o + 2 + 2 * i8, index | (signs << 9)),
    );
    if (!maxScale) {
      y.fill(0, o + 2, o + 66);
      continue;
    }
    writeU16(y, o, f32ToF16(fr(maxScale / 31)));
    packScales(y, o + 66, maxScale);
  }
  return y;
}

/**
 * Quantize values to IQ2_S super-blocks, as llama.cpp's `quantize_iq2_s`.
 *
 * @param values Whole 256-value super-blocks; with `importance`, whole rows of `importance.length`.
 * @param out Destination of `values.length / 256 * 82` bytes.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values` is not whole super-blocks (or rows).
 *
 * @example Usage
 * ```ts
 * import { encodeIq2S } from "./iq2_encode.ts";
 * import { decodeIq2S } from "./i_quants.ts";
 * const values = new Float32Array(256).map((_, i) => Math.sin(i));
 * const back = decodeIq2S(encodeIq2S(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.8));
 * ```
 */
export function encodeIq2S(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const nb = countBlocks("IQ2_S", values, importance);
  const y = out ?? new Uint8Array(nb * 82);
  const s: GridSearch = {
    grid: iqGrid("IQ2_S"),
    kMaxQ: 3,
    isMax: 9,
    step: F_0_1,
    onGridStart: true,
    refine: "offgrid",
  };
  for (let ibl = 0; ibl < nb; ibl++) {
    const o = ibl * 82;
    const xo = ibl * 256;
    y.fill(0, o, o + 82);
    const sigma2 = fr(fr(2 * sumSquares(values, xo)) / 256);
    const quarter = fr(0.25 * sigma2);
    // d (2), qs (32 grid bytes, 32 sign bytes), qh (8: 2 high index bits per 8 values), scales (8).
    const maxScale = quantizeSixteens(
      s,
      values,
      xo,
      sigma2,
      importance,
      (v) => fr(quarter + fr(v * v)),
      EPS_IQ2_S,
      false,
      (i8, index, signs) => {
        y[o + 2 + i8] = index & 255;
        y[o + 66 + (i8 >> 2)]! |= (index >> 8) << (2 * (i8 % 4));
        y[o + 34 + i8] = signs;
      },
    );
    if (!maxScale) continue;
    writeU16(y, o, f32ToF16(fr(fr(maxScale / 31) * fr(0.9875))));
    packScales(y, o + 74, maxScale);
  }
  return y;
}
