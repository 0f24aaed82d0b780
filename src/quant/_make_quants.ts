// This module is browser compatible.

/**
 * Internal: llama.cpp's scale searches shared by the block encoders
 * (`make_qkx2_quants`/`make_qkx3_quants`, `make_qx_quants`, `make_qp_quants`
 * of ggml-quants.c), in f32 arithmetic with a rounding after every operation,
 * so the encoders built on them produce llama.cpp's bytes.
 *
 * @module
 */

import { nearestInt } from "./_round.ts";

const fr = Math.fround;
const F_0_1 = fr(0.1);
/** Scratch: `x[i] - min`, rounded to f32, for the current min (f64 storage avoids conversions). */
const shifted = new Float64Array(32);
/** Scratch: the previous candidate's levels, as int32 (valid after a fast-path candidate). */
const LEVELS = new Int32Array(32);
/** Scratch: the sub-block's values (f64 storage of f32 values: no conversion per use). */
const XS = new Float64Array(32);
/**
 * While `|iscale| * max|shifted|` (computed in f64) stays below this, every
 * `fr(iscale * shifted[i])` is at most 4e6 in magnitude (f32 rounding is
 * monotone and 4e6 is an f32), inside `nearestInt`'s exact fast range
 * (|x| <= 2^22 - 1), so the range check can be made once per candidate.
 */
const FAST_PRODUCT_BOUND = 4e6;
/** 1.5·2^52: `(x + RNE) - RNE` rounds an f64 `x` with |x| < 2^51 half-to-even (see _round.ts). */
const RNE = 6755399441055744;

/**
 * llama.cpp's `make_qkx2_quants` (and `make_qkx3_quants`, which is the same
 * computation when weights are given, as every caller here does): fit
 * `x ≈ scale * L - min` over one group of at most 32 values with weights,
 * trying `nstep + 1` candidate scales. Writes L and returns the scale; the
 * (positive) min goes to `res[0]`. `useMad` weights absolute errors instead
 * of squared ones (Q2_K's reference quantizer).
 */
export function makeQkx2Quants(
  n: number,
  nmax: number,
  x: Float32Array,
  xo: number,
  w: Float64Array,
  L: Uint8Array,
  lo: number,
  laux: Float64Array,
  rmin: number,
  rdelta: number,
  nstep: number,
  res: Float32Array,
  useMad = false,
): number {
  let min = x[xo]!;
  let max = min;
  let sumW = w[0]!;
  let sumX = fr(sumW * min);
  XS[0] = min;
  for (let i = 1; i < n; i++) {
    const xi = x[xo + i]!;
    XS[i] = xi;
    if (xi < min) min = xi;
    if (xi > max) max = xi;
    const wi = w[i]!;
    sumW = fr(sumW + wi);
    sumX = fr(sumX + fr(wi * xi));
  }
  if (min > 0) min = 0;
  if (max === min) {
    L.fill(0, lo, lo + n);
    res[0] = -min;
    return 0;
  }
  let iscale = fr(nmax / fr(max - min));
  let scale = fr(1 / iscale);
  let bestError = 0;
  for (let i = 0; i < n; i++) {
    const xi = XS[i]!;
    let l = nearestInt(fr(iscale * fr(xi - min)));
    l = l < 0 ? 0 : l > nmax ? nmax : l;
    L[lo + i] = l;
    let diff = fr(fr(fr(scale * l) + min) - xi);
    diff = useMad ? Math.abs(diff) : fr(diff * diff);
    bestError = fr(bestError + fr(w[i]! * diff));
  }
  if (nstep < 1) {
    res[0] = -min;
    return scale;
  }
  let prevMin = NaN;
  // True when LEVELS holds the previous candidate's levels.
  let levelsInt = false;
  let shiftedMin = NaN;
  let maxShifted = 0;
  for (let is = 0; is <= nstep; is++) {
    // `min` may have moved to a better fit: C re-reads it here, and so must we.
    iscale = fr(fr(fr(rmin + fr(rdelta * is)) + nmax) / fr(max - min));
    let same = min === prevMin;
    if (min !== shiftedMin) {
      maxShifted = 0;
      for (let i = 0; i < n; i++) {
        const v = fr(XS[i]! - min);
        shifted[i] = v;
        const a = Math.abs(v);
        // NaN (never from finite inputs) must also disable the fast path.
        if (!(a <= maxShifted)) maxShifted = a !== a ? Infinity : a;
      }
      shiftedMin = min;
    }
    // Levels and C's three sums in one pass (the sums are wasted only when the
    // levels turn out unchanged, which is rarer than not).
    let sumL = 0;
    let sumL2 = 0;
    let sumXL = 0;
    if (Math.abs(iscale) * maxShifted < FAST_PRODUCT_BOUND) {
      // Branch-free: whether a level changes, or clamps, is data-dependent and
      // mispredicted branches cost more than the arithmetic here. |l| <= 4e6,
      // so int32 bit tricks clamp exactly.
      let changed = 0;
      for (let i = 0; i < n; i++) {
        let l = ((fr(iscale * shifted[i]!) + RNE) - RNE) | 0;
        l &= ~(l >> 31); // max(l, 0)
        const over = l - nmax;
        l -= over & ~(over >> 31); // min(l, nmax)
        changed |= LEVELS[i]! ^ l;
        LEVELS[i] = l;
        laux[i] = l;
        const wl = fr(w[i]! * l);
        sumL = fr(sumL + wl);
        sumL2 = fr(sumL2 + fr(wl * l));
        sumXL = fr(sumXL + fr(wl * XS[i]!));
      }
      if (changed !== 0 || !levelsInt) same = false;
      levelsInt = true;
    } else {
      // Levels may be NaN here (garbage in), which LEVELS cannot hold: compare
      // against laux, and make the next fast-path candidate do the same.
      levelsInt = false;
      for (let i = 0; i < n; i++) {
        let l = nearestInt(fr(iscale * shifted[i]!));
        l = l < 0 ? 0 : l > nmax ? nmax : l;
        if (laux[i] !== l) {
          laux[i] = l;
          same = false;
        }
        const wl = fr(w[i]! * l);
        sumL = fr(sumL + wl);
        sumL2 = fr(sumL2 + fr(wl * l));
        sumXL = fr(sumXL + fr(wl * XS[i]!));
      }
    }
    // A candidate whose levels equal the previous candidate's (with the same
    // min) yields the same sums and error, so C's choice cannot change: skip it.
    if (same) continue;
    prevMin = min;
    const D = fr(fr(sumW * sumL2) - fr(sumL * sumL));
    if (D > 0) {
      let thisScale = fr(fr(fr(sumW * sumXL) - fr(sumX * sumL)) / D);
      let thisMin = fr(fr(fr(sumL2 * sumX) - fr(sumL * sumXL)) / D);
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = fr(sumXL / sumL2);
      }
      let curError = 0;
      for (let i = 0; i < n; i++) {
        let diff = fr(fr(fr(thisScale * laux[i]!) + thisMin) - XS[i]!);
        diff = useMad ? Math.abs(diff) : fr(diff * diff);
        curError = fr(curError + fr(w[i]! * diff));
        // The terms are >= 0 and f32 addition is monotone, so once the running
        // sum reaches bestError the candidate can no longer win.
        if (curError >= bestError) break;
      }
      if (curError < bestError) {
        for (let i = 0; i < n; i++) L[lo + i] = laux[i]!;
        bestError = curError;
        scale = thisScale;
        min = thisMin;
      }
    }
  }
  res[0] = -min;
  return scale;
}

/** ggml's GROUP_MAX_EPS: below it a group counts as all zero. */
const GROUP_MAX_EPS = fr(1e-15);
// Scratch for one group of at most 32 values (f64 storage of f32-rounded values avoids conversions).
const W = new Float64Array(32);
const WX = new Float64Array(32);
const CAND = new Float64Array(32);
const X = new Float64Array(32);
/** The previous candidate's levels as int32 (valid while `levelsInt`). */
const QX_LEVELS = new Int32Array(32);
/**
 * llama.cpp's `make_qx_quants` with `rmse_type = 1`: a symmetric scale for one
 * group of at most 32 values, searched over 19 candidates, weighting each
 * value's error by `qw[qo + i]` (an importance matrix) or, without `qw`, by
 * `x²`. Writes `L[lo + i] = l + nmax` and returns the scale.
 */
export function makeQxQuants(
  n: number,
  nmax: number,
  x: Float32Array,
  xo: number,
  L: Uint8Array,
  lo: number,
  qw?: Float32Array,
  qo = 0,
): number {
  let max = 0;
  let amax = 0;
  for (let i = 0; i < n; i++) {
    const v = x[xo + i]!;
    const ax = Math.abs(v);
    if (ax > amax) {
      amax = ax;
      max = v;
    }
  }
  if (amax < GROUP_MAX_EPS) {
    L.fill(0, lo, lo + n);
    return 0;
  }
  // Weights and weights·x are the same for every candidate: compute them once.
  let finite = true; // NaN is not in amax (comparisons skip it), so check for it
  for (let i = 0; i < n; i++) {
    const v = x[xo + i]!;
    X[i] = v;
    if (v !== v) finite = false;
    const w = qw === undefined ? fr(v * v) : qw[qo + i]!;
    W[i] = w;
    WX[i] = fr(w * v);
  }
  let iscale = fr(-nmax / max);
  // LEVELS does not hold the initial levels: the first candidate is not skipped
  // (re-evaluating an unchanged candidate cannot change C's result either).
  let levelsInt = false;
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    let l = nearestInt(fr(iscale * x[xo + i]!));
    l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
    L[lo + i] = l + nmax;
    CAND[i] = l;
    sumlx = fr(sumlx + fr(WX[i]! * l));
    suml2 = fr(suml2 + fr(fr(W[i]! * l) * l));
  }
  let scale = suml2 !== 0 ? fr(sumlx / suml2) : 0;
  let best = fr(scale * sumlx);
  for (let is = -9; is <= 9; is++) {
    if (is === 0) continue;
    iscale = fr(-fr(nmax + fr(F_0_1 * is)) / max);
    // Levels equal to the previous candidate's give the same sums, and C's
    // outcome on them (accept again with the same state, or reject) changes
    // nothing: skip the sums.
    let same = true;
    sumlx = 0;
    suml2 = 0;
    if (finite && Math.abs(iscale) * amax < FAST_PRODUCT_BOUND) {
      // Every |fr(iscale * x)| <= 4e6: nearestInt's fast range, int32 levels.
      // Branch-free (clamps and changes are data-dependent, so mispredicted),
      // and the sums in the same pass (wasted only when the levels repeat).
      let changed = 0;
      const top = 2 * nmax - 1;
      for (let i = 0; i < n; i++) {
        let t = (((fr(iscale * X[i]!) + RNE) - RNE) | 0) + nmax;
        t &= ~(t >> 31); // max(l, -nmax)
        const over = t - top;
        t -= over & ~(over >> 31); // min(l, nmax - 1)
        const l = t - nmax;
        changed |= QX_LEVELS[i]! ^ l;
        QX_LEVELS[i] = l;
        CAND[i] = l;
        sumlx = fr(sumlx + fr(WX[i]! * l));
        suml2 = fr(suml2 + fr(fr(W[i]! * l) * l));
      }
      same = levelsInt && changed === 0;
      levelsInt = true;
    } else {
      // NaN levels are possible here (garbage in), which LEVELS cannot hold.
      levelsInt = false;
      for (let i = 0; i < n; i++) {
        let l = nearestInt(fr(iscale * X[i]!));
        l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
        if (CAND[i] !== l) {
          CAND[i] = l;
          same = false;
        }
        sumlx = fr(sumlx + fr(WX[i]! * l));
        suml2 = fr(suml2 + fr(fr(W[i]! * l) * l));
      }
    }
    if (same) continue;
    if (suml2 > 0 && fr(sumlx * sumlx) > fr(best * suml2)) {
      for (let i = 0; i < n; i++) L[lo + i] = nmax + CAND[i]!;
      scale = fr(sumlx / suml2);
      best = fr(scale * sumlx);
    }
  }
  return scale;
}

/** Scratch: make_qp_quants' levels (8 or 16 sub-block scales per super-block; IQ2_XXS's 32 values). */
const QP_L = new Int32Array(32);

/**
 * llama.cpp's `make_qp_quants`: quantize `n` non-negative values (sub-block
 * scales or mins) to levels `0..nmax` of one positive scale, weighting errors
 * by `qw`, trying 9 candidate scales and then 5 rounds of per-level moves.
 * Writes the levels to `L` and returns the scale.
 */
export function makeQpQuants(
  n: number,
  nmax: number,
  x: Float32Array,
  L: Uint8Array,
  qw: Float32Array,
): number {
  let max = 0;
  for (let i = 0; i < n; i++) max = max > x[i]! ? max : x[i]!;
  if (max < GROUP_MAX_EPS) {
    L.fill(0, 0, n);
    return 0;
  }
  let iscale = fr(nmax / max);
  // The first levels go through C's uint8_t store unclamped (wrapping).
  for (let i = 0; i < n; i++) QP_L[i] = nearestInt(fr(iscale * x[i]!)) & 255;
  const scale = fr(1 / iscale);
  let bestMse = 0;
  for (let i = 0; i < n; i++) {
    const diff = fr(x[i]! - fr(scale * QP_L[i]!));
    bestMse = fr(bestMse + fr(fr(qw[i]! * diff) * diff));
  }
  for (let is = -4; is <= 4; is++) {
    if (is === 0) continue;
    const iscaleIs = fr(fr(fr(F_0_1 * is) + nmax) / max);
    const scaleIs = fr(1 / iscaleIs);
    let mse = 0;
    for (let i = 0; i < n; i++) {
      let l = nearestInt(fr(iscaleIs * x[i]!));
      if (l > nmax) l = nmax;
      const diff = fr(x[i]! - fr(scaleIs * l));
      mse = fr(mse + fr(fr(qw[i]! * diff) * diff));
    }
    if (mse < bestMse) {
      bestMse = mse;
      iscale = iscaleIs;
    }
  }
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    let l = nearestInt(fr(iscale * x[i]!));
    if (l > nmax) l = nmax;
    QP_L[i] = l & 255;
    const w = qw[i]!;
    // The sums take the int level, the stored one wraps (a negative x, as
    // IQ2_XXS's parity flip makes).
    sumlx = fr(sumlx + fr(fr(w * x[i]!) * l));
    suml2 = fr(suml2 + fr(fr(w * l) * l));
  }
  for (let itry = 0; itry < 5; itry++) {
    let changed = 0;
    for (let i = 0; i < n; i++) {
      const w = qw[i]!;
      const li = QP_L[i]!;
      let slx = fr(sumlx - fr(fr(w * x[i]!) * li));
      let sl2 = fr(suml2 - fr(fr(w * li) * li));
      if (slx > 0 && sl2 > 0) {
        let newL = nearestInt(fr(fr(x[i]! * sl2) / slx));
        if (newL > nmax) newL = nmax;
        if (newL !== li) {
          slx = fr(slx + fr(fr(w * x[i]!) * newL));
          sl2 = fr(sl2 + fr(fr(w * newL) * newL));
          if (fr(fr(slx * slx) * suml2) > fr(fr(sumlx * sumlx) * sl2)) {
            // C stores the new level in a uint8_t.
            QP_L[i] = newL & 255;
            sumlx = slx;
            suml2 = sl2;
            changed++;
          }
        }
      }
    }
    if (changed === 0) break;
  }
  for (let i = 0; i < n; i++) L[i] = QP_L[i]!;
  // All weights zero: C returns 0, not 0/0.
  return suml2 > 0 ? fr(sumlx / suml2) : 0;
}
