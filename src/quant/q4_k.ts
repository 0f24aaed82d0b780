// This module is browser compatible.

/**
 * Q4_K (APR_V2.md §5, FORMATS.md §3): super-blocks of 256 values in 144 bytes
 * — f16 `d`, f16 `dmin`, 12 bytes of packed 6-bit sub-block scales and mins,
 * 128 bytes of nibbles; eight sub-blocks of 32.
 *
 * The encoder is a port of llama.cpp's reference quantizer
 * (`quantize_row_q4_K_ref` with `make_qkx2_quants`, what `llama-quantize`
 * runs without an importance matrix), in f32 arithmetic with a rounding after
 * every operation, so it produces the same bytes. The decoder is bit-exact with
 * `dequantize_row_q4_K`.
 *
 * @module
 */

import { nearestInt } from "./_round.ts";
import { f16Table, f32ToF16 } from "./f16.ts";
import { scaleMinK4 } from "./_k_scales.ts";

/** Values per Q4_K super-block. */
export const Q4_K_BLOCK_ELEMENTS = 256;
/** Bytes per Q4_K super-block. */
export const Q4_K_BLOCK_BYTES = 144;

const fr = Math.fround;
const F_0_1 = fr(0.1);
/** Scratch: `x[i] - min`, rounded to f32, for the current min (f64 storage avoids conversions). */
const shifted = new Float64Array(32);
/** Scratch: the 6-bit scales and mins of the current super-block. */
const LS = new Uint8Array(8);
const LM = new Uint8Array(8);
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
 * llama.cpp's `make_qkx2_quants`: fit `x ≈ scale * L - min` over one sub-block
 * with weights, trying `nstep + 1` candidate scales. Writes L and returns the
 * scale; the (positive) min goes to `res[0]`.
 */
function makeQkx2Quants(
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
    diff = fr(diff * diff);
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
        diff = fr(diff * diff);
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

/**
 * Quantize values to Q4_K super-blocks (llama.cpp's reference algorithm).
 *
 * @param values A whole number of 256-value super-blocks (pad rows with zeros first).
 * @param out Destination of `values.length / 256 * 144` bytes.
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values.length` is not a multiple of 256.
 *
 * @example Usage
 * ```ts
 * import { decodeQ4K, encodeQ4K } from "./q4_k.ts";
 * const values = new Float32Array(256).map((_, i) => Math.sin(i));
 * const back = decodeQ4K(encodeQ4K(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.1));
 * ```
 */
export function encodeQ4K(values: Float32Array, out?: Uint8Array): Uint8Array {
  if (values.length % Q4_K_BLOCK_ELEMENTS !== 0) {
    throw new RangeError(
      `Cannot encode Q4_K: ${values.length} values are not a whole number of 256-value blocks`,
    );
  }
  const nb = values.length / Q4_K_BLOCK_ELEMENTS;
  const y = out ?? new Uint8Array(nb * Q4_K_BLOCK_BYTES);
  const t = f16Table();
  const L = new Uint8Array(256);
  const laux = new Float64Array(32);
  const weights = new Float64Array(32);
  const mins = new Float32Array(8);
  const scales = new Float32Array(8);
  const res = new Float32Array(1);
  for (let i = 0; i < nb; i++) {
    const xo = i * 256;
    const o = i * Q4_K_BLOCK_BYTES;
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
      for (let l = 0; l < 32; l++) weights[l] = fr(avX + Math.abs(values[base + l]!));
      const scale = makeQkx2Quants(
        32,
        15,
        values,
        base,
        weights,
        L,
        32 * j,
        laux,
        -1,
        F_0_1,
        20,
        res,
      );
      scales[j] = scale;
      mins[j] = res[0]!;
      if (scales[j]! > maxScale) maxScale = scales[j]!;
      if (mins[j]! > maxMin) maxMin = mins[j]!;
    }
    const invScale = maxScale > 0 ? fr(63 / maxScale) : 0;
    const invMin = maxMin > 0 ? fr(63 / maxMin) : 0;
    const s = o + 4;
    for (let j = 0; j < 8; j++) {
      // uint8_t truncation, then MIN(63, ·), as the C code does.
      let ls = nearestInt(fr(invScale * scales[j]!)) & 255;
      let lm = nearestInt(fr(invMin * mins[j]!)) & 255;
      if (ls > 63) ls = 63;
      if (lm > 63) lm = 63;
      // What get_scale_min_k4 reads back from the packed bytes below.
      LS[j] = ls;
      LM[j] = lm;
      if (j < 4) {
        y[s + j] = ls;
        y[s + j + 4] = lm;
      } else {
        y[s + j + 4] = (ls & 15) | ((lm & 15) << 4);
        y[s + j - 4] = y[s + j - 4]! | ((ls >>> 4) << 6);
        y[s + j] = y[s + j]! | ((lm >>> 4) << 6);
      }
    }
    const dBits = f32ToF16(fr(maxScale / 63));
    const mBits = f32ToF16(fr(maxMin / 63));
    y[o] = dBits & 255;
    y[o + 1] = dBits >>> 8;
    y[o + 2] = mBits & 255;
    y[o + 3] = mBits >>> 8;
    const dF = t[dBits]!;
    const mF = t[mBits]!;
    for (let j = 0; j < 8; j++) {
      const d = fr(dF * LS[j]!);
      if (d === 0) continue;
      const dm = fr(mF * LM[j]!);
      const base = xo + 32 * j;
      for (let ii = 0; ii < 32; ii++) {
        // nearestInt always returns an int32 (NaN gives 0): clamp branch-free.
        let l = nearestInt(fr(fr(values[base + ii]! + dm) / d)) | 0;
        l &= ~(l >> 31); // max(l, 0)
        const over = l - 15;
        l -= over & ~(over >> 31); // min(l, 15)
        L[32 * j + ii] = l;
      }
    }
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
