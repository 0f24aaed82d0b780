// This module is browser compatible.

/**
 * Encoders for ggml's ternary-grid i-quants: IQ1_S (50 bytes per 256 values)
 * and IQ1_M (56 bytes), ports of llama.cpp's `quantize_iq1_s` /
 * `quantize_iq1_m`. Each block's values take one of three levels shifted by
 * ±IQ1S_DELTA; the best two boundaries between them are found exhaustively
 * over the sorted values (prefix sums), then each group of 8 is snapped to the
 * grid (`iq1_find_best_neighbour2`). Every operation is rounded to f32 in
 * ggml's order, so the bytes are ggml's. IQ1_S needs importance weights
 * (ggml asserts); IQ1_M weights by `x²` without.
 *
 * @module
 */

import { type IqGrid, iqGrid } from "./_iq_grids.ts";
import { blockWeights, requireImportance, scaleCode, sumSquares } from "./_iq_grid_search.ts";
import { f32ToF16 } from "./f16.ts";
import { countBlocks } from "./_count_blocks.ts";
import { writeU16 } from "./_bytes.ts";

const fr = Math.fround;
const FLT_MAX = fr(3.4028234663852886e38);
/** ggml's GROUP_MAX_EPS_IQ1_S and GROUP_MAX_EPS_IQ1_M. */
const EPS_IQ1_S = fr(1e-12);
const EPS_IQ1_M = fr(1e-7);
/** The three levels shifted up (`x_p`) or down (`x_m`) by IQ1S_DELTA = IQ1M_DELTA = 0.125. */
const X_P = new Float32Array([-1 + 0.125, 0.125, 1 + 0.125]);
const X_M = new Float32Array([-1 - 0.125, -0.125, 1 - 0.125]);
/** IQ1_M's qh bits for a sub-block's shifts (`+,+`, `+,-`, `-,+`, `-,-`). */
const MASKS = [0x00, 0x80, 0x08, 0x88];

const WEIGHT = new Float32Array(32);
const L = new Int8Array(32);
const IDX = new Int32Array(32);
const SUMX = new Float32Array(33);
const SUMW = new Float32Array(33);
const INDEX = new Int32Array(4);
const SCALES = new Float32Array(16);
const SHIFTS = new Int8Array(16);

const squares = (v: number) => fr(v * v);

/** The largest |x| of `n` values at `x[xo]` (ggml's `MAX` fold of `fabsf`). */
function absMax(x: Float32Array, xo: number, n: number): number {
  let max = Math.abs(x[xo]!);
  for (let i = 1; i < n; i++) {
    const a = Math.abs(x[xo + i]!);
    max = max > a ? max : a;
  }
  return max;
}

/** `IDX` = 0..n-1 ordered by value, ties in index order (glibc's qsort is a merge sort: stable). */
function sortIndices(x: Float32Array, xo: number, n: number): void {
  for (let j = 0; j < n; j++) {
    const v = x[xo + j]!;
    let k = j;
    while (k > 0 && x[xo + IDX[k - 1]!]! > v) {
      IDX[k] = IDX[k - 1]!;
      k--;
    }
    IDX[k] = j;
  }
}

/** Assign levels 0/1/2 to the sorted values split at `i1`, `i2`. */
function splitLevels(n: number, i1: number, i2: number): void {
  for (let j = 0; j < n; j++) L[IDX[j]!] = j < i1 ? 0 : j < i2 ? 1 : 2;
}

/**
 * ggml's `iq1_find_best_neighbour2`: among the neighbours of the off-grid
 * vector `u`, the point whose levels (mapped through `xx`) times `scale` are
 * nearest `x[xo..]`, weighted; writes its levels to `L[lo..]`.
 */
function bestNeighbour(
  grid: IqGrid,
  u: number,
  x: Float32Array,
  xo: number,
  wo: number,
  scale: number,
  xx: Float32Array,
  lo: number,
): number {
  const list = grid.neighbours(u);
  let best = FLT_MAX;
  let index = -1;
  for (let n = 0; n < list.length; n++) {
    const g = list[n]! * 8;
    let d2 = 0;
    for (let i = 0; i < 8; i++) {
      const diff = fr(fr(scale * xx[grid.levels[g + i]!]!) - x[xo + i]!);
      d2 = fr(d2 + fr(fr(WEIGHT[wo + i]! * diff) * diff));
      if (d2 >= best) break; // the terms are ≥ 0: this point cannot win any more
    }
    if (d2 < best) {
      best = d2;
      index = list[n]!;
    }
  }
  // ggml then scans the whole grid with an out-of-range read (xval[i]); only
  // non-finite distances get there.
  if (index < 0) {
    throw new RangeError("Cannot encode an IQ1 block: its values overflow float32 distances");
  }
  for (let i = 0; i < 8; i++) L[lo + i] = grid.levels[index * 8 + i]!;
  return index;
}

/**
 * Snap the 8-value groups of the current block (levels in `L`) to the grid
 * into `INDEX`, with `xxOf(k)` the shifted levels of group k; when one was off
 * the grid, refit the scale (kept unless the fit is positive).
 */
function snapGroups(
  grid: IqGrid,
  x: Float32Array,
  xo: number,
  groups: number,
  scale: number,
  xxOf: (k: number) => Float32Array,
): number {
  let allOnGrid = true;
  for (let k = 0; k < groups; k++) {
    let u = 0;
    for (let j = 0; j < 8; j++) u |= L[8 * k + j]! << (2 * j);
    let index = grid.map[u]!;
    if (index < 0) {
      allOnGrid = false;
      index = bestNeighbour(grid, u, x, xo + 8 * k, 8 * k, scale, xxOf(k), 8 * k);
    }
    INDEX[k] = index;
  }
  if (allOnGrid) return scale;
  let sumqx = 0;
  let sumq2 = 0;
  for (let k = 0; k < groups; k++) {
    const xx = xxOf(k);
    for (let j = 0; j < 8; j++) {
      const w = WEIGHT[8 * k + j]!;
      const q = xx[grid.levels[INDEX[k]! * 8 + j]!]!;
      sumqx = fr(sumqx + fr(fr(w * q) * x[xo + 8 * k + j]!));
      sumq2 = fr(sumq2 + fr(fr(w * q) * q));
    }
  }
  return sumqx > 0 && sumq2 > 0 ? fr(sumqx / sumq2) : scale;
}

/** `(a − b)·c` in f32. */
function dm(a: number, b: number, c: number): number {
  return fr(fr(a - b) * c);
}

/** `(a − b)·c·c` in f32. */
function dmm(a: number, b: number, c: number): number {
  return fr(fr(fr(a - b) * c) * c);
}

/**
 * Quantize values to IQ1_S super-blocks, as llama.cpp's `quantize_iq1_s`.
 *
 * @param values Whole rows of `importance.length` values (whole 256-value super-blocks).
 * @param out Destination of `values.length / 256 * 50` bytes.
 * @param importance One weight per column of a row (an importance matrix entry): required.
 * @returns `out`, or a new array when `out` is not given.
 * @throws {TypeError} Without `importance`.
 * @throws {RangeError} When `values` is not whole rows.
 *
 * @example Usage
 * ```ts
 * import { encodeIq1S } from "./iq1_encode.ts";
 * const values = new Float32Array(256).map((_, i) => Math.sin(i));
 * console.assert(encodeIq1S(values, undefined, new Float32Array(256).fill(1)).length === 50);
 * ```
 */
export function encodeIq1S(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const qw = requireImportance("IQ1_S", importance);
  const nb = countBlocks("IQ1_S", values, qw);
  const y = out ?? new Uint8Array(nb * 50);
  const grid = iqGrid("IQ1_S");
  for (let ibl = 0; ibl < nb; ibl++) {
    const o = ibl * 50;
    const xo = ibl * 256;
    y.fill(0, o, o + 50);
    const sigma2 = fr(fr(2 * sumSquares(values, xo)) / 256);
    let maxScale = 0;
    for (let ib = 0; ib < 8; ib++) {
      const xb = xo + 32 * ib;
      blockWeights(values, xb, 32, sigma2, qw, xb % qw.length, squares, WEIGHT);
      const max = absMax(values, xb, 32);
      SCALES[ib] = 0;
      SHIFTS[ib] = 1;
      if (max < EPS_IQ1_S) continue;
      sortIndices(values, xb, 32);
      SUMX[0] = 0;
      SUMW[0] = 0;
      for (let j = 0; j < 32; j++) {
        const i = IDX[j]!;
        SUMX[j + 1] = fr(SUMX[j]! + fr(WEIGHT[i]! * values[xb + i]!));
        SUMW[j + 1] = fr(SUMW[j]! + WEIGHT[i]!);
      }
      let bestScore = -FLT_MAX;
      let scale = max;
      let besti1 = -1;
      let besti2 = -1;
      let shift = 0;
      const sx0 = SUMX[0]!;
      const sw0 = SUMW[0]!;
      const sxn = SUMX[32]!;
      const swn = SUMW[32]!;
      for (let i1 = 0; i1 <= 32; i1++) {
        const sx1 = SUMX[i1]!;
        const sw1 = SUMW[i1]!;
        for (let i2 = i1; i2 <= 32; i2++) {
          const sx2 = SUMX[i2]!;
          const sw2 = SUMW[i2]!;
          for (let sign = 1; sign >= -1; sign -= 2) {
            const xx = sign === 1 ? X_P : X_M;
            const sumqx = fr(
              fr(dm(sx1, sx0, xx[0]!) + dm(sx2, sx1, xx[1]!)) + dm(sxn, sx2, xx[2]!),
            );
            const sumq2 = fr(
              fr(dmm(sw1, sw0, xx[0]!) + dmm(sw2, sw1, xx[1]!)) + dmm(swn, sw2, xx[2]!),
            );
            if (sumq2 > 0 && fr(sumqx * sumqx) > fr(bestScore * sumq2)) {
              scale = fr(sumqx / sumq2);
              bestScore = fr(scale * sumqx);
              besti1 = i1;
              besti2 = i2;
              shift = sign;
            }
          }
        }
      }
      if (besti1 < 0 || besti2 < 0 || shift === 0) continue;
      splitLevels(32, besti1, besti2);
      if (scale < 0) {
        for (let j = 0; j < 32; j++) L[j] = 2 - L[j]!;
        scale = -scale;
        shift = -shift;
      }
      const xx = shift === 1 ? X_P : X_M;
      scale = snapGroups(grid, values, xb, 4, scale, () => xx);
      let h = 0;
      for (let k = 0; k < 4; k++) {
        y[o + 2 + 4 * ib + k] = INDEX[k]! & 255;
        h |= (INDEX[k]! >> 8) << (3 * k);
      }
      writeU16(y, o + 34 + 2 * ib, h);
      SCALES[ib] = scale;
      SHIFTS[ib] = shift;
      maxScale = maxScale > scale ? maxScale : scale;
    }
    if (!maxScale) continue;
    const d = fr(maxScale / 15);
    writeU16(y, o, f32ToF16(fr(d * fr(1.125))));
    const id = fr(1 / d);
    for (let ib = 0; ib < 8; ib++) {
      let l = scaleCode(id, SCALES[ib]!, 7);
      if (SHIFTS[ib] === -1) l |= 8;
      y[o + 34 + 2 * ib + 1]! |= l << 4;
    }
  }
  return y;
}

const PX = [new Float32Array(17), new Float32Array(17)] as const;
const PW = [new Float32Array(17), new Float32Array(17)] as const;
const QX_P = new Float32Array(2);
const QX_M = new Float32Array(2);
const Q2_P = new Float32Array(2);
const Q2_M = new Float32Array(2);
const SUMQX = new Float32Array(4);
const SUMQ2 = new Float32Array(4);
const SC = new Uint16Array(4);
const P2 = X_P[2]!;
const M2 = X_M[2]!;
const CP1 = fr(fr(X_P[0]! * X_P[0]!) - fr(X_P[1]! * X_P[1]!));
const CP2 = fr(fr(X_P[1]! * X_P[1]!) - fr(X_P[2]! * X_P[2]!));
const CM1 = fr(fr(X_M[0]! * X_M[0]!) - fr(X_M[1]! * X_M[1]!));
const CM2 = fr(fr(X_M[1]! * X_M[1]!) - fr(X_M[2]! * X_M[2]!));

/** IQ1_M's shifted levels for group k (of 2) of a sub-block with shifts `s` (0–3). */
function iq1mLevels(s: number, k: number): Float32Array {
  return (k === 0 ? s < 2 : s % 2 === 0) ? X_P : X_M;
}

/**
 * Quantize values to IQ1_M super-blocks, as llama.cpp's `quantize_iq1_m`.
 *
 * @param values Whole 256-value super-blocks; with `importance`, whole rows of `importance.length`.
 * @param out Destination of `values.length / 256 * 56` bytes.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values` is not whole super-blocks (or rows).
 *
 * @example Usage
 * ```ts
 * import { encodeIq1M } from "./iq1_encode.ts";
 * const values = new Float32Array(256).map((_, i) => Math.sin(i));
 * console.assert(encodeIq1M(values).length === 56);
 * ```
 */
export function encodeIq1M(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const nb = countBlocks("IQ1_M", values, importance);
  const y = out ?? new Uint8Array(nb * 56);
  const cols = importance?.length ?? 256;
  const grid = iqGrid("IQ1_M");
  for (let ibl = 0; ibl < nb; ibl++) {
    // qs (32 bytes), qh (16), scales (4 × u16: 3-bit sub-block scales, the f16 scale's nibbles on top).
    const o = ibl * 56;
    const xo = ibl * 256;
    y.fill(0, o, o + 56);
    const sigma2 = fr(fr(2 * sumSquares(values, xo)) / 256);
    let maxScale = 0;
    for (let ib = 0; ib < 16; ib++) {
      const xb = xo + 16 * ib;
      blockWeights(values, xb, 16, sigma2, importance, xb % cols, squares, WEIGHT);
      const max = absMax(values, xb, 16);
      SCALES[ib] = 0;
      SHIFTS[ib] = 0;
      if (max < EPS_IQ1_M) continue;
      sortIndices(values, xb, 16);
      // Prefix sums per half (each half of 8 has its own shift).
      PX[0][0] =
        PX[1][0] =
        PW[0][0] =
        PW[1][0] =
          0;
      for (let j = 0; j < 16; j++) {
        const i = IDX[j]!;
        const h = i < 8 ? 0 : 1;
        PX[h][j + 1] = fr(PX[h][j]! + fr(WEIGHT[i]! * values[xb + i]!));
        PX[1 - h]![j + 1] = PX[1 - h]![j]!;
        PW[h][j + 1] = fr(PW[h][j]! + WEIGHT[i]!);
        PW[1 - h]![j + 1] = PW[1 - h]![j]!;
      }
      let bestScore = -FLT_MAX;
      let scale = max;
      let besti1 = -1;
      let besti2 = -1;
      let bestK = -1;
      for (let i1 = 0; i1 <= 16; i1++) {
        for (let i2 = i1; i2 <= 16; i2++) {
          for (let h = 0; h < 2; h++) {
            const px = PX[h as 0 | 1];
            const pw = PW[h as 0 | 1];
            const txs = px[16]!;
            const tws = pw[16]!;
            const sx = fr(px[i1]! + px[i2]!);
            QX_P[h] = fr(fr(txs * P2) - sx);
            QX_M[h] = fr(fr(txs * M2) - sx);
            Q2_P[h] = fr(fr(fr(fr(tws * P2) * P2) + fr(pw[i1]! * CP1)) + fr(pw[i2]! * CP2));
            Q2_M[h] = fr(fr(fr(fr(tws * M2) * M2) + fr(pw[i1]! * CM1)) + fr(pw[i2]! * CM2));
          }
          SUMQX[0] = QX_P[0]! + QX_P[1]!;
          SUMQX[1] = QX_P[0]! + QX_M[1]!;
          SUMQX[2] = QX_M[0]! + QX_P[1]!;
          SUMQX[3] = QX_M[0]! + QX_M[1]!;
          SUMQ2[0] = Q2_P[0]! + Q2_P[1]!;
          SUMQ2[1] = Q2_P[0]! + Q2_M[1]!;
          SUMQ2[2] = Q2_M[0]! + Q2_P[1]!;
          SUMQ2[3] = Q2_M[0]! + Q2_M[1]!;
          for (let k = 0; k < 4; k++) {
            const sqx = SUMQX[k]!;
            const sq2 = SUMQ2[k]!;
            if (sq2 > 0 && fr(sqx * sqx) > fr(bestScore * sq2)) {
              scale = fr(sqx / sq2);
              bestScore = fr(scale * sqx);
              besti1 = i1;
              besti2 = i2;
              bestK = k;
            }
          }
        }
      }
      if (besti1 < 0 || besti2 < 0 || bestK < 0) continue;
      splitLevels(16, besti1, besti2);
      if (scale < 0) {
        for (let j = 0; j < 16; j++) L[j] = 2 - L[j]!;
        scale = -scale;
        bestK = 3 - bestK;
      }
      const k0 = bestK;
      scale = snapGroups(grid, values, xb, 2, scale, (k) => iq1mLevels(k0, k));
      y[o + 2 * ib] = INDEX[0]! & 255;
      y[o + 2 * ib + 1] = INDEX[1]! & 255;
      y[o + 32 + ib] = (INDEX[0]! >> 8) | ((INDEX[1]! >> 8) << 4);
      SCALES[ib] = scale;
      SHIFTS[ib] = bestK;
      maxScale = maxScale > scale ? maxScale : scale;
    }
    if (!maxScale) continue;
    let d = fr(maxScale / 15);
    const id = fr(1 / d);
    const sc = SC;
    sc.fill(0);
    let sumqx = 0;
    let sumq2 = 0;
    for (let ib = 0; ib < 16; ib++) {
      const l = scaleCode(id, SCALES[ib]!, 7);
      sc[ib >> 2] = sc[ib >> 2]! | (l << (3 * (ib % 4)));
      y[o + 32 + ib]! |= MASKS[SHIFTS[ib]!]!;
      const xb = xo + 16 * ib;
      blockWeights(values, xb, 16, sigma2, importance, xb % cols, squares, WEIGHT);
      const qh = y[o + 32 + ib]!;
      for (let k = 0; k < 2; k++) {
        const xx = iq1mLevels(SHIFTS[ib]!, k);
        const g = (y[o + 2 * ib + k]! + ((qh << (8 - 4 * k)) & 0x700)) * 8;
        for (let j = 0; j < 8; j++) {
          const w = WEIGHT[8 * k + j]!;
          const q = fr(xx[grid.levels[g + j]!]! * (2 * l + 1));
          sumqx = fr(sumqx + fr(fr(w * q) * values[xb + 8 * k + j]!));
          sumq2 = fr(sumq2 + fr(fr(w * q) * q));
        }
      }
    }
    if (sumq2 > 0) d = fr(sumqx / sumq2);
    const s = f32ToF16(fr(d * fr(1.1125)));
    sc[0] = sc[0]! | ((s & 0x000f) << 12);
    sc[1] = sc[1]! | ((s & 0x00f0) << 8);
    sc[2] = sc[2]! | ((s & 0x0f00) << 4);
    sc[3] = sc[3]! | (s & 0xf000);
    for (let i = 0; i < 4; i++) writeU16(y, o + 48 + 2 * i, sc[i]!);
  }
  return y;
}
