// This module is browser compatible.

/**
 * Internal: the search IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S share in
 * llama.cpp's `ggml-quants.c` (`quantize_row_iq2_*_impl`,
 * `quantize_row_iq3_*_impl`): fold the signs out of a block, try a range of
 * scales, snap each group of 4 or 8 levels to the grid (or its nearest
 * neighbour there, `iq2_find_best_neighbour` / `iq3_find_best_neighbour`),
 * keep the scale with the best weighted fit, and refit. The five functions
 * differ only in the parameters of {@linkcode GridSearch}; every operation is
 * rounded to f32 in ggml's order.
 *
 * @module
 */

import type { IqGrid } from "./_iq_grids.ts";
import { nearestInt } from "./_round.ts";

const fr = Math.fround;
const FLT_MAX = fr(3.4028234663852886e38);

/** What differs between the i-quants' searches. */
export interface GridSearch {
  grid: IqGrid;
  /** Levels are 0..kMaxQ-1. */
  kMaxQ: number;
  /** Scale candidates `is` in -isMax..isMax. */
  isMax: number;
  /** The step between candidates (`0.1f` or `0.2f`). */
  step: number;
  /** ggml's `is_on_grid` before the search (IQ3_S starts with false). */
  onGridStart: boolean;
  /**
   * When the best fit is refit: `"offgrid"` the groups that were not on the
   * grid, if any; `"all"` every group, if any was off the grid (IQ3_S);
   * `"always"` every group (IQ2_XXS).
   */
  refine: "offgrid" | "all" | "always";
}

/** Scratch, sized for the largest block (32 values, 8 groups). */
const LAUX = new Int8Array(32);
const ON_GRID = new Uint8Array(8);
const ON_GRID_AUX = new Uint8Array(8);

/**
 * The grid point nearest `xval[xo..]` at `scale` among the neighbours of the
 * off-grid level vector `u`, by `waux`-weighted squared error (first on ties);
 * writes its levels to `L[lo..]` and returns its index.
 */
export function findBestNeighbour(
  grid: IqGrid,
  u: number,
  xval: Float32Array,
  waux: Float32Array,
  xo: number,
  scale: number,
  L: Int8Array,
  lo: number,
): number {
  const { dim, odd, levels } = grid;
  const list = grid.neighbours(u);
  let bestD2 = FLT_MAX;
  let index = -1;
  for (let j = 0; j < list.length; j++) {
    const g = list[j]! * dim;
    let d2 = 0;
    for (let i = 0; i < dim; i++) {
      const diff = fr(fr(scale * odd[g + i]!) - xval[xo + i]!);
      d2 = fr(d2 + fr(fr(waux[xo + i]! * diff) * diff));
      // The terms are ≥ 0 and a rounded sum never falls, so this point cannot
      // win any more (a later one must be strictly nearer): same choice, less work.
      if (d2 >= bestD2) break;
    }
    if (d2 < bestD2) {
      bestD2 = d2;
      index = list[j]!;
    }
  }
  if (index < 0) {
    throw new RangeError("Cannot encode an i-quant block: its values overflow float32 distances");
  }
  for (let i = 0; i < dim; i++) L[lo + i] = levels[index * dim + i]!;
  return index;
}

/**
 * Snap the `n / dim` groups of `xval` at inverse scale `id` to levels, then to
 * the grid (the nearest neighbour at `scale` when off it). Writes the levels
 * to `L` and each group's on-grid flag to `onGrid` (when given); `only`
 * restricts the work to the groups whose flag in it is 0.
 */
function snap(
  s: GridSearch,
  n: number,
  xval: Float32Array,
  waux: Float32Array,
  id: number,
  scale: number,
  L: Int8Array,
  onGrid?: Uint8Array,
  only?: Uint8Array,
): void {
  const { grid } = s;
  const { dim, bits, map } = grid;
  const top = s.kMaxQ - 1;
  for (let k = 0; k < n / dim; k++) {
    if (only !== undefined && only[k] === 1) continue;
    let u = 0;
    for (let i = 0; i < dim; i++) {
      // nearest_int(0.5f*(id*x - 1)); halving an f32 is exact (bar subnormals, which round to 0 anyway).
      const t = 0.5 * fr(fr(id * xval[dim * k + i]!) - 1);
      let l = t >= -4194303 && t <= 4194303
        ? (t + 6755399441055744) - 6755399441055744
        : nearestInt(fr(t));
      l = l < 0 ? 0 : l > top ? top : l;
      L[dim * k + i] = l;
      u |= l << (bits * i);
    }
    const index = map[u]!;
    if (onGrid !== undefined) onGrid[k] = index >= 0 ? 1 : 0;
    if (index < 0) findBestNeighbour(grid, u, xval, waux, dim * k, scale, L, dim * k);
  }
}

/** Σ w·x·q and Σ w·q² over `n` values at levels `L` (q = 2l + 1), in C's order. */
function fit(
  n: number,
  xval: Float32Array,
  weight: Float32Array,
  L: Int8Array,
  out: Float32Array,
): void {
  let sumqx = 0;
  let sumq2 = 0;
  for (let i = 0; i < n; i++) {
    const w = weight[i]!;
    const q = 2 * L[i]! + 1;
    sumqx = fr(sumqx + fr(fr(w * xval[i]!) * q));
    sumq2 = fr(sumq2 + fr(fr(w * q) * q));
  }
  out[0] = sumqx;
  out[1] = sumq2;
}

const SUMS = new Float32Array(2);

/**
 * The scale search and refit of one block of `n` sign-folded values `xval`:
 * candidates `(2·kMaxQ − 1 + is·step) / denom`, the best kept, then refit on
 * the grid. `L` holds the starting levels and receives the final ones.
 *
 * @returns The block's scale (negative only in ggml's "should never happen" case).
 */
export function searchGridScale(
  s: GridSearch,
  n: number,
  xval: Float32Array,
  weight: Float32Array,
  waux: Float32Array,
  denom: number,
  startScale: number,
  L: Int8Array,
): number {
  const groups = n / s.grid.dim;
  let best = 0;
  let scale = startScale;
  ON_GRID.fill(s.onGridStart ? 1 : 0, 0, groups);
  const top = 2 * s.kMaxQ - 1;
  for (let is = -s.isMax; is <= s.isMax; is++) {
    const id = fr(fr(top + fr(is * s.step)) / denom);
    const thisScale = fr(1 / id);
    snap(s, n, xval, waux, id, thisScale, LAUX, ON_GRID_AUX);
    fit(n, xval, weight, LAUX, SUMS);
    const sumqx = SUMS[0]!;
    const sumq2 = SUMS[1]!;
    if (sumq2 > 0 && fr(sumqx * sumqx) > fr(best * sumq2)) {
      scale = fr(sumqx / sumq2);
      best = fr(scale * sumqx);
      for (let i = 0; i < n; i++) L[i] = LAUX[i]!;
      for (let k = 0; k < groups; k++) ON_GRID[k] = ON_GRID_AUX[k]!;
    }
  }
  let offGrid = 0;
  for (let k = 0; k < groups; k++) if (ON_GRID[k] === 0) offGrid++;
  if (scale > 0 && (s.refine === "always" || offGrid > 0)) {
    snap(
      s,
      n,
      xval,
      waux,
      fr(1 / scale),
      scale,
      L,
      undefined,
      s.refine === "offgrid" ? ON_GRID : undefined,
    );
    fit(n, xval, weight, L, SUMS);
    if (SUMS[1]! > 0) scale = fr(SUMS[0]! / SUMS[1]!);
  }
  return scale;
}

/** Σx² of the 256 values at `x[xo]`, in C's order. */
export function sumSquares(x: Float32Array, xo: number): number {
  let s = 0;
  for (let i = 0; i < 256; i++) s = fr(s + fr(x[xo + i]! * x[xo + i]!));
  return s;
}

/**
 * Fold the signs out of `n` values at `x[xo]` into `xval` (absolute values)
 * and `signs` (a byte per 8). With `parity` (IQ2_XXS, IQ2_XS, IQ3_XXS: 7 sign
 * bits stored, the 8th implied even), an odd count of negatives flips the
 * value of least `weight·x²` back, and the bytes keep 7 bits.
 */
export function foldSigns(
  x: Float32Array,
  xo: number,
  n: number,
  weight: Float32Array,
  xval: Float32Array,
  signs: Uint8Array,
  parity: boolean,
): void {
  for (let k = 0; k < n / 8; k++) {
    let nflip = 0;
    let sgn = 0;
    for (let i = 0; i < 8; i++) {
      const v = x[xo + 8 * k + i]!;
      if (v >= 0) {
        xval[8 * k + i] = v;
      } else {
        xval[8 * k + i] = -v;
        nflip++;
        sgn |= 1 << i;
      }
    }
    if (parity && nflip % 2 === 1) {
      let imin = 0;
      let min = fr(fr(weight[8 * k]! * x[xo + 8 * k]!) * x[xo + 8 * k]!);
      for (let i = 1; i < 8; i++) {
        const v = x[xo + 8 * k + i]!;
        const ax = fr(fr(weight[8 * k + i]! * v) * v);
        if (ax < min) {
          min = ax;
          imin = i;
        }
      }
      xval[8 * k + imin] = -xval[8 * k + imin]!;
      sgn ^= 1 << imin;
    }
    signs[k] = parity ? sgn & 127 : sgn;
  }
}

/** The largest of `n` values, as ggml's `MAX` fold (a NaN wins when it comes last). */
export function maxOf(xval: Float32Array, n: number): number {
  let max = xval[0]!;
  for (let i = 1; i < n; i++) max = max > xval[i]! ? max : xval[i]!;
  return max;
}

/**
 * ggml's importance weights for `n` values at `x[xo]`: `qw · √(σ² + x²)` with
 * an importance matrix entry (`qw[qo..]`), else `fallback(x)`.
 */
export function blockWeights(
  x: Float32Array,
  xo: number,
  n: number,
  sigma2: number,
  qw: Float32Array | undefined,
  qo: number,
  fallback: (v: number) => number,
  weight: Float32Array,
  waux?: Float32Array,
): void {
  for (let i = 0; i < n; i++) {
    const v = x[xo + i]!;
    weight[i] = qw === undefined
      ? fallback(v)
      : fr(qw[qo + i]! * fr(Math.sqrt(fr(sigma2 + fr(v * v)))));
  }
  if (waux !== undefined) { for (let i = 0; i < n; i++) waux[i] = fr(Math.sqrt(weight[i]!)); }
}

/** ggml's `nearest_int(0.5f*(id*s - 1))` clamped to 0..max: a sub-block scale's code. */
export function scaleCode(id: number, s: number, max: number): number {
  const l = nearestInt(fr(0.5 * fr(fr(id * s) - 1)));
  return Math.max(0, Math.min(max, l));
}

/**
 * The grid index of the `grid.dim` levels at `L[lo]`, which the search has
 * put on the grid (ggml aborts with "Oops: found point … not on grid").
 */
export function gridIndexOf(grid: IqGrid, L: Int8Array, lo: number): number {
  let u = 0;
  for (let i = 0; i < grid.dim; i++) u |= L[lo + i]! << (grid.bits * i);
  const index = grid.map[u]!;
  if (index < 0) throw new Error(`Cannot encode an i-quant block: point ${u} is not on the grid`);
  return index;
}

/**
 * The importance weights of a type ggml quantizes only with them
 * (`ggml_quantize_requires_imatrix`: IQ2_XXS, IQ2_XS, IQ1_S).
 *
 * @throws {TypeError} When there are none.
 */
export function requireImportance(
  type: string,
  importance: Float32Array | undefined,
): Float32Array {
  if (importance === undefined) {
    throw new TypeError(
      `Cannot encode ${type} without importance weights: ggml (and llama-quantize) require an importance matrix for it`,
    );
  }
  return importance;
}
