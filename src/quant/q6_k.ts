// This module is browser compatible.

/**
 * Q6_K (APR_V2.md §5, FORMATS.md §3): super-blocks of 256 values in 210 bytes
 * — `ql[128]` low nibbles, `qh[64]` high 2-bit pairs, 16 i8 sub-block scales,
 * f16 `d`.
 *
 * The encoder is a port of llama.cpp's reference quantizer
 * (`quantize_row_q6_K_ref` with `make_qx_quants`, what `llama-quantize` runs
 * without an importance matrix) in f32 arithmetic, so it produces the same
 * bytes. The decoder is bit-exact with `dequantize_row_q6_K`.
 *
 * @module
 */

import { nearestInt } from "./_round.ts";
import { f16Table, f32ToF16 } from "./f16.ts";

/** Values per Q6_K super-block. */
export const Q6_K_BLOCK_ELEMENTS = 256;
/** Bytes per Q6_K super-block. */
export const Q6_K_BLOCK_BYTES = 210;

const fr = Math.fround;
const F_0_1 = fr(0.1);
/** ggml's GROUP_MAX_EPS: below it a group counts as all zero. */
const GROUP_MAX_EPS = fr(1e-15);
// Scratch for one 16-value group (f64 storage of f32-rounded values avoids conversions).
const W = new Float64Array(16);
const WX = new Float64Array(16);
const CAND = new Float64Array(16);
const X = new Float64Array(16);
/** The previous candidate's levels as int32 (valid while `levelsInt`). */
const LEVELS = new Int32Array(16);
/**
 * While `|iscale| * amax` (f64) is below this, every `fr(iscale * x[i])` is at
 * most 4e6 in magnitude (f32 rounding is monotone, 4e6 is an f32): inside
 * `nearestInt`'s exact fast range (|x| <= 2^22 - 1).
 */
const FAST_PRODUCT_BOUND = 4e6;
/** 1.5·2^52: `(x + RNE) - RNE` rounds an f64 `x` with |x| < 2^51 half-to-even (see _round.ts). */
const RNE = 6755399441055744;

/**
 * llama.cpp's `make_qx_quants` with `rmse_type = 1` and no importance weights
 * (weights `x²`): a symmetric scale for one group, searched over 19 candidates.
 * Writes `L[i] = l + nmax` and returns the scale.
 */
function makeQxQuants(
  n: number,
  nmax: number,
  x: Float32Array,
  xo: number,
  L: Uint8Array,
  lo: number,
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
  // Weights x² and x³ are the same for every candidate: compute them once.
  let finite = true; // NaN is not in amax (comparisons skip it), so check for it
  for (let i = 0; i < n; i++) {
    const v = x[xo + i]!;
    X[i] = v;
    if (v !== v) finite = false;
    const w = fr(v * v);
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
        changed |= LEVELS[i]! ^ l;
        LEVELS[i] = l;
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

/**
 * Quantize values to Q6_K super-blocks (llama.cpp's reference algorithm).
 *
 * @param values A whole number of 256-value super-blocks (pad rows with zeros first).
 * @param out Destination of `values.length / 256 * 210` bytes.
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values.length` is not a multiple of 256.
 *
 * @example Usage
 * ```ts
 * import { decodeQ6K, encodeQ6K } from "./q6_k.ts";
 * const values = new Float32Array(256).map((_, i) => Math.sin(i));
 * const back = decodeQ6K(encodeQ6K(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.03));
 * ```
 */
export function encodeQ6K(values: Float32Array, out?: Uint8Array): Uint8Array {
  if (values.length % Q6_K_BLOCK_ELEMENTS !== 0) {
    throw new RangeError(
      `Cannot encode Q6_K: ${values.length} values are not a whole number of 256-value blocks`,
    );
  }
  const nb = values.length / Q6_K_BLOCK_ELEMENTS;
  const y = out ?? new Uint8Array(nb * Q6_K_BLOCK_BYTES);
  const t = f16Table();
  const L = new Uint8Array(256);
  const scales = new Float32Array(16);
  for (let i = 0; i < nb; i++) {
    const xo = i * 256;
    const o = i * Q6_K_BLOCK_BYTES;
    let maxScale = 0;
    let maxAbsScale = 0;
    for (let ib = 0; ib < 16; ib++) {
      const scale = makeQxQuants(16, 32, values, xo + 16 * ib, L, 16 * ib);
      scales[ib] = scale;
      const abs = Math.abs(scale);
      if (abs > maxAbsScale) {
        maxAbsScale = abs;
        maxScale = scale;
      }
    }
    if (maxAbsScale < GROUP_MAX_EPS) {
      y.fill(0, o, o + Q6_K_BLOCK_BYTES);
      continue;
    }
    const iscale = fr(-128 / maxScale);
    const dBits = f32ToF16(fr(1 / iscale));
    y[o + 208] = dBits & 255;
    y[o + 209] = dBits >>> 8;
    const dF = t[dBits]!;
    for (let ib = 0; ib < 16; ib++) {
      const q = nearestInt(fr(iscale * scales[ib]!));
      y[o + 192 + ib] = (q > 127 ? 127 : q) & 255;
    }
    for (let j = 0; j < 16; j++) {
      const sc = (y[o + 192 + j]! << 24) >> 24;
      const d = fr(dF * sc);
      if (d === 0) continue;
      const base = xo + 16 * j;
      for (let ii = 0; ii < 16; ii++) {
        let l = nearestInt(fr(values[base + ii]! / d));
        l = l < -32 ? -32 : l > 31 ? 31 : l;
        L[16 * j + ii] = l + 32;
      }
    }
    let ql = o;
    let qh = o + 128;
    for (let j = 0; j < 256; j += 128) {
      for (let l = 0; l < 32; l++) {
        const a = L[j + l]!;
        const b = L[j + l + 32]!;
        const c = L[j + l + 64]!;
        const e = L[j + l + 96]!;
        y[ql + l] = (a & 15) | ((c & 15) << 4);
        y[ql + l + 32] = (b & 15) | ((e & 15) << 4);
        y[qh + l] = (a >>> 4) | ((b >>> 4) << 2) | ((c >>> 4) << 4) | ((e >>> 4) << 6);
      }
      ql += 64;
      qh += 32;
    }
  }
  return y;
}

/**
 * Dequantize Q6_K super-blocks, bit-exact with llama.cpp's `dequantize_row_q6_K`.
 *
 * @param bytes Whole blocks of 210 bytes, at any offset.
 * @param out Destination of `256 * blocks` values.
 * @returns `out`, or a new array when `out` is not given.
 */
export function decodeQ6K(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const nb = Math.floor(bytes.length / Q6_K_BLOCK_BYTES);
  const y = out ?? new Float32Array(nb * 256);
  const t = f16Table();
  for (let i = 0; i < nb; i++) {
    const o = i * Q6_K_BLOCK_BYTES;
    const d = t[bytes[o + 208]! | (bytes[o + 209]! << 8)]!;
    for (let h = 0; h < 2; h++) {
      const ql = o + 64 * h;
      const qh = o + 128 + 32 * h;
      const sc = o + 192 + 8 * h;
      const yi = i * 256 + 128 * h;
      for (let l = 0; l < 32; l++) {
        const is = l >>> 4;
        const a = bytes[ql + l]!;
        const b = bytes[ql + l + 32]!;
        const hb = bytes[qh + l]!;
        // d * sc is exact in f32 (11 + 8 bits); (d * sc) * q is then one rounding,
        // which the double product followed by the f32 store reproduces.
        const s1 = d * ((bytes[sc + is]! << 24) >> 24);
        const s2 = d * ((bytes[sc + is + 2]! << 24) >> 24);
        const s3 = d * ((bytes[sc + is + 4]! << 24) >> 24);
        const s4 = d * ((bytes[sc + is + 6]! << 24) >> 24);
        y[yi + l] = s1 * (((a & 15) | ((hb & 3) << 4)) - 32);
        y[yi + l + 32] = s2 * (((b & 15) | (((hb >>> 2) & 3) << 4)) - 32);
        y[yi + l + 64] = s3 * (((a >>> 4) | (((hb >>> 4) & 3) << 4)) - 32);
        y[yi + l + 96] = s4 * (((b >>> 4) | (((hb >>> 6) & 3) << 4)) - 32);
      }
    }
  }
  return y;
}
