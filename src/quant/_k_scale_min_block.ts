// This module is browser compatible.

/**
 * Internal: the part Q4_K and Q5_K share — fitting one 256-value super-block
 * as eight 32-value sub-blocks of `scale * L - min`, packing the f16 `d`,
 * f16 `dmin` and the twelve bytes of 6-bit scales and mins, and choosing each
 * value's level. A port of llama.cpp's `quantize_row_q{4,5}_K_ref` (without an
 * importance matrix) and `quantize_row_q{4,5}_K_impl` (with one), in f32
 * arithmetic with a rounding after every operation.
 *
 * @module
 */

import { nearestInt } from "./_round.ts";
import { f16Table, f32ToF16 } from "./f16.ts";
import { makeQkx2Quants, makeQpQuants } from "./_make_quants.ts";

const fr = Math.fround;

/** The candidate-scale search of one K-quant's reference quantizer. */
export interface ScaleSearch {
  /** Largest level (15 for Q4_K, 31 for Q5_K). */
  readonly nmax: number;
  /** `make_qkx2_quants`' `rmin`, `rdelta` and `nstep` without an importance matrix. */
  readonly rmin: number;
  readonly rdelta: number;
  readonly nstep: number;
}

// Scratch for one super-block.
const LS = new Uint8Array(8);
const LM = new Uint8Array(8);
const LAUX = new Float64Array(32);
const WEIGHTS = new Float64Array(32);
const MINS = new Float32Array(8);
const SCALES = new Float32Array(8);
const SW = new Float32Array(8);
const RES = new Float32Array(1);
/** The f16 bits of the block's `d` and `dmin`, set by the fit. */
const DM_BITS = new Uint16Array(2);
/** `make_qkx3_quants`' search, as every `_impl` calls it. */
const IMPL_RMIN = fr(-0.9);
const IMPL_RDELTA = fr(0.05);
const IMPL_NSTEP = 36;

/**
 * Fit the super-block at `values[xo..xo+256)`: writes `d`, `dmin` and the
 * packed scales to `y[o..o+16)` and each value's level (`0..nmax`) to `L`.
 *
 * @param qw The importance weights of these 256 columns (from `qo`), or
 * `undefined` for the reference quantizer.
 */
export function fitScaleMinBlock(
  values: Float32Array,
  xo: number,
  search: ScaleSearch,
  y: Uint8Array,
  o: number,
  L: Uint8Array,
  qw: Float32Array | undefined,
  qo: number,
): void {
  const nmax = search.nmax;
  // The fit's levels stay in L for sub-blocks whose scale rounds to 0 (C skips them below).
  if (qw === undefined) fitReference(values, xo, search, L);
  else fitWeighted(values, xo, nmax, qw, qo, L);
  const s = o + 4;
  for (let j = 0; j < 8; j++) {
    const ls = LS[j]!;
    const lm = LM[j]!;
    if (j < 4) {
      y[s + j] = ls;
      y[s + j + 4] = lm;
    } else {
      y[s + j + 4] = (ls & 15) | ((lm & 15) << 4);
      y[s + j - 4] = y[s + j - 4]! | ((ls >>> 4) << 6);
      y[s + j] = y[s + j]! | ((lm >>> 4) << 6);
    }
  }
  const dBits = DM_BITS[0]!;
  const mBits = DM_BITS[1]!;
  y[o] = dBits & 255;
  y[o + 1] = dBits >>> 8;
  y[o + 2] = mBits & 255;
  y[o + 3] = mBits >>> 8;
  const t = f16Table();
  const dF = t[dBits]!;
  const mF = t[mBits]!;
  for (let j = 0; j < 8; j++) {
    // LS/LM hold what get_scale_min_k4 reads back from the packed bytes.
    const d = fr(dF * LS[j]!);
    if (d === 0) continue;
    const dm = fr(mF * LM[j]!);
    const base = xo + 32 * j;
    for (let ii = 0; ii < 32; ii++) {
      // nearestInt always returns an int32 (NaN gives 0): clamp branch-free.
      let l = nearestInt(fr(fr(values[base + ii]! + dm) / d)) | 0;
      l &= ~(l >> 31); // max(l, 0)
      const over = l - nmax;
      l -= over & ~(over >> 31); // min(l, nmax)
      L[32 * j + ii] = l;
    }
  }
}

/** `quantize_row_q{4,5}_K_ref`'s scales: weights `rms + |x|` per sub-block, linear 6-bit scales. */
function fitReference(
  values: Float32Array,
  xo: number,
  search: ScaleSearch,
  L: Uint8Array,
): void {
  let maxScale = 0;
  let maxMin = 0;
  for (let j = 0; j < 8; j++) {
    const base = xo + 32 * j;
    let sumX2 = 0;
    for (let l = 0; l < 32; l++) {
      const v = values[base + l]!;
      sumX2 = fr(sumX2 + fr(v * v));
    }
    const avX = fr(Math.sqrt(fr(sumX2 / 32)));
    for (let l = 0; l < 32; l++) WEIGHTS[l] = fr(avX + Math.abs(values[base + l]!));
    const scale = makeQkx2Quants(
      32,
      search.nmax,
      values,
      base,
      WEIGHTS,
      L,
      32 * j,
      LAUX,
      search.rmin,
      search.rdelta,
      search.nstep,
      RES,
    );
    SCALES[j] = scale;
    MINS[j] = RES[0]!;
    if (SCALES[j]! > maxScale) maxScale = SCALES[j]!;
    if (MINS[j]! > maxMin) maxMin = MINS[j]!;
  }
  const invScale = maxScale > 0 ? fr(63 / maxScale) : 0;
  const invMin = maxMin > 0 ? fr(63 / maxMin) : 0;
  for (let j = 0; j < 8; j++) {
    // uint8_t truncation, then MIN(63, ·), as the C code does.
    const ls = nearestInt(fr(invScale * SCALES[j]!)) & 255;
    const lm = nearestInt(fr(invMin * MINS[j]!)) & 255;
    LS[j] = ls > 63 ? 63 : ls;
    LM[j] = lm > 63 ? 63 : lm;
  }
  DM_BITS[0] = f32ToF16(fr(maxScale / 63));
  DM_BITS[1] = f32ToF16(fr(maxMin / 63));
}

/**
 * `quantize_row_q{4,5}_K_impl`'s scales: weights `qw * sqrt(σ² + x²)` with σ²
 * twice the block's mean square, and the 6-bit scales and mins fitted by
 * `make_qp_quants` weighted by each sub-block's total weight.
 */
function fitWeighted(
  values: Float32Array,
  xo: number,
  nmax: number,
  qw: Float32Array,
  qo: number,
  L: Uint8Array,
): void {
  let sumX2 = 0;
  for (let l = 0; l < 256; l++) {
    const v = values[xo + l]!;
    sumX2 = fr(sumX2 + fr(v * v));
  }
  const sigma2 = fr(fr(2 * sumX2) / 256);
  for (let j = 0; j < 8; j++) {
    const base = xo + 32 * j;
    let sumW = 0;
    for (let l = 0; l < 32; l++) {
      const v = values[base + l]!;
      const w = fr(qw[qo + 32 * j + l]! * fr(Math.sqrt(fr(sigma2 + fr(v * v)))));
      WEIGHTS[l] = w;
      sumW = fr(sumW + w);
    }
    SW[j] = sumW;
    SCALES[j] = makeQkx2Quants(
      32,
      nmax,
      values,
      base,
      WEIGHTS,
      L,
      32 * j,
      LAUX,
      IMPL_RMIN,
      IMPL_RDELTA,
      IMPL_NSTEP,
      RES,
    );
    MINS[j] = RES[0]!;
  }
  DM_BITS[0] = f32ToF16(makeQpQuants(8, 63, SCALES, LS, SW));
  DM_BITS[1] = f32ToF16(makeQpQuants(8, 63, MINS, LM, SW));
  for (let j = 0; j < 8; j++) {
    if (LS[j]! > 63) LS[j] = 63;
    if (LM[j]! > 63) LM[j] = 63;
  }
}
