// This module is browser compatible.

/**
 * Q3_K encoder (FORMATS.md §3): super-blocks of 256 values in 110 bytes — 32
 * bytes of high bits, 64 bytes of 2-bit low bits, 12 bytes of packed 6-bit
 * signed sub-block scales, f16 `d`; sixteen sub-blocks of 16, value
 * `d·(scale − 32)·(q − 4)`. GGUF only (llama-quantize's Q3_K_S/M/L and the
 * Q2_K and i-quant mixes' bumped tensors).
 *
 * A port of llama.cpp's `quantize_row_q3_K_ref` (with `make_q3_quants`) and,
 * with an importance matrix, `quantize_row_q3_K_impl` (ggml-quants.c), in f32
 * arithmetic with a rounding after every operation, so it produces the same
 * bytes. The decoder is `decodeQ3K` in `k_quants.ts`.
 *
 * @module
 */

import { f16Table, f32ToF16 } from "./f16.ts";
import { makeQxQuants } from "./_make_quants.ts";
import { encodeSuperBlocks, type SuperBlockEncoder } from "./_super_blocks.ts";
import { importanceWeights } from "./_row_weights.ts";
import { nearestInt } from "./_round.ts";
import { packTwoBits } from "./_k_pack.ts";

/** Bytes per Q3_K super-block. */
export const Q3_K_BLOCK_BYTES = 110;

const fr = Math.fround;
/** ggml's GROUP_MAX_EPS: below it a group counts as all zero. */
const GROUP_MAX_EPS = fr(1e-15);
// Scratch for one super-block.
const L = new Uint8Array(256);
const Q3L = new Int32Array(16);
const SCALES = new Float32Array(16);
const WEIGHT = new Float32Array(16);
const SW = new Float32Array(16);
const LS = new Uint8Array(16);

/**
 * Quantize values to Q3_K super-blocks (ggml's reference quantizer, or its
 * importance-weighted form when `importance` is given).
 *
 * @param values 256-value super-blocks; with `importance`, rows of its length.
 * @param out Destination: 110 bytes a super-block.
 * @param importance An importance matrix entry (one weight per column).
 * @returns `out` or a new array.
 * @throws {RangeError} For a partial super-block or row.
 *
 * @example Usage
 * ```ts
 * import { encodeQ3K } from "./q3_k.ts";
 * import { decodeQ3K } from "./k_quants.ts";
 * const values = new Float32Array(256).map((_, i) => Math.sin(i));
 * const back = decodeQ3K(encodeQ3K(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.3));
 * ```
 */
export function encodeQ3K(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  return encodeSuperBlocks("Q3_K", Q3_K_BLOCK_BYTES, values, out, importance, encodeBlock);
}

/** One super-block. */
const encodeBlock: SuperBlockEncoder = (x, xo, y, o, qw, qo) => {
  const s = o + 96;
  y.fill(0, s, s + 12);
  const dBits = qw === undefined
    ? referenceScales(x, xo, y, s)
    : weightedScales(x, xo, qw, qo, y, s);
  y[o + 108] = dBits & 255;
  y[o + 109] = dBits >>> 8;
  // Requantize every value with the stored scales.
  const dAll = f16Table()[dBits]!;
  for (let j = 0; j < 16; j++) {
    const lo = j < 8 ? y[s + j]! & 15 : y[s + j - 8]! >>> 4;
    const sc = (lo | (((y[s + 8 + (j % 4)]! >>> (2 * (j >> 2))) & 3) << 4)) - 32;
    const d = fr(dAll * sc);
    if (d === 0) continue;
    for (let ii = 0; ii < 16; ii++) {
      const l = nearestInt(fr(x[xo + 16 * j + ii]! / d));
      L[16 * j + ii] = (l < -4 ? -4 : l > 3 ? 3 : l) + 4;
    }
  }
  // High bits: value j's in bit j / 32 of byte j % 32.
  y.fill(0, o, o + 32);
  for (let j = 0; j < 256; j++) {
    if (L[j]! > 3) {
      y[o + (j & 31)] = y[o + (j & 31)]! | (1 << (j >> 5));
      L[j] = L[j]! - 4;
    }
  }
  packTwoBits(L, y, o + 32);
};

/** Store sub-block j's 6-bit scale `l` (0..63) in the 12 scale bytes at `s`. */
function putScale(y: Uint8Array, s: number, j: number, l: number): void {
  if (j < 8) y[s + j] = l & 15;
  else y[s + j - 8] = y[s + j - 8]! | ((l & 15) << 4);
  y[s + 8 + (j % 4)] = y[s + 8 + (j % 4)]! | ((l >> 4) << (2 * (j >> 2)));
}

/**
 * `quantize_row_q3_K_ref`'s scales: each sub-block by `make_q3_quants(16, 4,
 * rmse)`, then as 6-bit fractions of the largest in magnitude. Returns d's
 * f16 bits.
 */
function referenceScales(x: Float32Array, xo: number, y: Uint8Array, s: number): number {
  let maxScale = 0;
  let amax = 0;
  for (let j = 0; j < 16; j++) {
    const scale = makeQ3Quants(x, xo + 16 * j, 16 * j);
    SCALES[j] = scale;
    if (Math.abs(scale) > amax) {
      amax = Math.abs(scale);
      maxScale = scale;
    }
  }
  if (maxScale === 0) return f32ToF16(0);
  const iscale = fr(-32 / maxScale);
  for (let j = 0; j < 16; j++) {
    // int8_t l = nearest_int(…); MAX(-32, MIN(31, l)) + 32.
    let l = nearestInt(fr(iscale * SCALES[j]!)) << 24 >> 24;
    l = (l < -32 ? -32 : l > 31 ? 31 : l) + 32;
    putScale(y, s, j, l);
  }
  return f32ToF16(fr(1 / iscale));
}

/**
 * `quantize_row_q3_K_impl`'s scales: each sub-block by `make_qx_quants(16, 4)`
 * weighted by `qw·sqrt(σ² + x²)` (σ² twice the block's mean square), then
 * the sixteen scales by `make_qx_quants(16, 32)` weighted by each
 * sub-block's total weight. Returns d's f16 bits.
 */
function weightedScales(
  x: Float32Array,
  xo: number,
  qw: Float32Array,
  qo: number,
  y: Uint8Array,
  s: number,
): number {
  let sumX2 = 0;
  for (let j = 0; j < 256; j++) {
    const v = x[xo + j]!;
    sumX2 = fr(sumX2 + fr(v * v));
  }
  const sigma2 = fr(fr(2 * sumX2) / 256);
  for (let j = 0; j < 16; j++) {
    importanceWeights(x, xo + 16 * j, qw, qo + 16 * j, sigma2, WEIGHT, 16);
    let sumw = 0;
    for (let l = 0; l < 16; l++) sumw = fr(sumw + WEIGHT[l]!);
    SW[j] = sumw;
    SCALES[j] = makeQxQuants(16, 4, x, xo + 16 * j, L, 16 * j, WEIGHT, 0);
  }
  const dBlock = makeQxQuants(16, 32, SCALES, 0, LS, 0, SW, 0);
  for (let j = 0; j < 16; j++) putScale(y, s, j, LS[j]!);
  return f32ToF16(dBlock);
}

/**
 * ggml's `make_q3_quants(16, 4, x, L, do_rmse = true)`: levels −4..3 at the
 * scale `-4 / max`, refined by five rounds of per-value moves that improve the
 * `x²`-weighted fit. Writes `L[lo + i] = l + 4`; returns the scale.
 */
function makeQ3Quants(x: Float32Array, xo: number, lo: number): number {
  const n = 16;
  const nmax = 4;
  let max = 0;
  let amax = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[xo + i]!);
    if (ax > amax) {
      amax = ax;
      max = x[xo + i]!;
    }
  }
  if (amax < GROUP_MAX_EPS) {
    L.fill(0, lo, lo + n);
    return 0;
  }
  const iscale = fr(-nmax / max);
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[xo + i]!;
    let l = nearestInt(fr(iscale * xi));
    l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
    Q3L[i] = l;
    const w = fr(xi * xi);
    sumlx = fr(sumlx + fr(fr(w * xi) * l));
    suml2 = fr(suml2 + fr(fr(w * l) * l));
  }
  for (let itry = 0; itry < 5; itry++) {
    let changed = 0;
    for (let i = 0; i < n; i++) {
      const xi = x[xo + i]!;
      const w = fr(xi * xi);
      const li = Q3L[i]!;
      let slx = fr(sumlx - fr(fr(w * xi) * li));
      if (slx > 0) {
        let sl2 = fr(suml2 - fr(fr(w * li) * li));
        let newL = nearestInt(fr(fr(xi * sl2) / slx));
        newL = newL < -nmax ? -nmax : newL > nmax - 1 ? nmax - 1 : newL;
        if (newL !== li) {
          slx = fr(slx + fr(fr(w * xi) * newL));
          sl2 = fr(sl2 + fr(fr(w * newL) * newL));
          if (sl2 > 0 && fr(fr(slx * slx) * suml2) > fr(fr(sumlx * sumlx) * sl2)) {
            Q3L[i] = newL;
            sumlx = slx;
            suml2 = sl2;
            changed++;
          }
        }
      }
    }
    if (changed === 0) break;
  }
  for (let i = 0; i < n; i++) L[lo + i] = Q3L[i]! + nmax;
  return suml2 > 0 ? fr(sumlx / suml2) : 0;
}
