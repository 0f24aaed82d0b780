// This module is browser compatible.

/**
 * Q2_K encoder (FORMATS.md §3): super-blocks of 256 values in 84 bytes — 16
 * bytes of 4-bit sub-block scales (low nibble) and mins (high nibble), 64
 * bytes of 2-bit levels, f16 `d`, f16 `dmin`; sixteen sub-blocks of 16,
 * value `d·scale·q − dmin·min`. GGUF only (llama-quantize's Q2_K, Q2_K_S and
 * the i-quant mixes' low-bit tensors).
 *
 * A port of llama.cpp's `quantize_row_q2_K_ref` and, with an importance
 * matrix, `quantize_row_q2_K_impl` (ggml-quants.c), in f32 arithmetic with a
 * rounding after every operation, so it produces the same bytes. The decoder
 * is `decodeQ2K` in `k_quants.ts`.
 *
 * @module
 */

import { f16Table, f32ToF16 } from "./f16.ts";
import { makeQkx2Quants, makeQpQuants } from "./_make_quants.ts";
import { encodeSuperBlocks, type SuperBlockEncoder } from "./_super_blocks.ts";
import { importanceWeights, meanSquare } from "./_row_weights.ts";
import { nearestInt } from "./_round.ts";
import { packTwoBits } from "./_k_pack.ts";

/** Bytes per Q2_K super-block. */
export const Q2_K_BLOCK_BYTES = 84;

const fr = Math.fround;
// Scratch for one super-block.
const L = new Uint8Array(256);
const LAUX = new Float64Array(16);
const W64 = new Float64Array(16);
const WEIGHT = new Float32Array(16);
const SCALES = new Float32Array(16);
const MINS = new Float32Array(16);
const SW = new Float32Array(16);
const LS = new Uint8Array(16);
const LM = new Uint8Array(16);
const RES = new Float32Array(1);

/**
 * Quantize values to Q2_K super-blocks (llama.cpp's algorithm).
 *
 * @param values Whole 256-value super-blocks (with `importance`, whole rows).
 * @param out Destination of 84 bytes per super-block.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array.
 * @throws {RangeError} When `values` is not whole super-blocks (or rows).
 *
 * @example Usage
 * ```ts
 * import { encodeQ2K } from "./q2_k.ts";
 * import { decodeQ2K } from "./k_quants.ts";
 * const values = new Float32Array(256).map((_, i) => Math.sin(i));
 * const back = decodeQ2K(encodeQ2K(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.5));
 * ```
 */
export function encodeQ2K(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  return encodeSuperBlocks("Q2_K", Q2_K_BLOCK_BYTES, values, out, importance, encodeBlock);
}

/** One super-block. */
const encodeBlock: SuperBlockEncoder = (x, xo, y, o, qw, qo) => {
  const [dBits, mBits] = qw === undefined
    ? referenceScales(x, xo, y, o)
    : weightedScales(x, xo, qw, qo, y, o);
  y[o + 80] = dBits & 255;
  y[o + 81] = dBits >>> 8;
  y[o + 82] = mBits & 255;
  y[o + 83] = mBits >>> 8;
  // Both quantizers requantize every value with the stored scales.
  const t = f16Table();
  const dm = t[dBits]!;
  const mm = t[mBits]!;
  for (let j = 0; j < 16; j++) {
    const sc = y[o + j]!;
    const d = fr(dm * (sc & 15));
    if (d === 0) continue;
    const m = fr(mm * (sc >>> 4));
    for (let ii = 0; ii < 16; ii++) {
      const l = nearestInt(fr(fr(x[xo + 16 * j + ii]! + m) / d));
      L[16 * j + ii] = l < 0 ? 0 : l > 3 ? 3 : l;
    }
  }
  packTwoBits(L, y, o + 16);
};

/**
 * `quantize_row_q2_K_ref`'s scales: each sub-block fit by
 * `make_qkx2_quants(16, 3, |x| weights, -0.5, 0.1, 15, use_mad)`, then the
 * scales and mins as 4-bit fractions of their maxima. Writes the 16 scale
 * bytes and L; returns the f16 bits of d and dmin.
 */
function referenceScales(x: Float32Array, xo: number, y: Uint8Array, o: number): [number, number] {
  let maxScale = 0;
  let maxMin = 0;
  for (let j = 0; j < 16; j++) {
    for (let l = 0; l < 16; l++) W64[l] = Math.abs(x[xo + 16 * j + l]!);
    const scale = makeQkx2Quants(
      16,
      3,
      x,
      xo + 16 * j,
      W64,
      L,
      16 * j,
      LAUX,
      -0.5,
      fr(0.1),
      15,
      RES,
      true,
    );
    SCALES[j] = scale;
    MINS[j] = RES[0]!;
    if (scale > maxScale) maxScale = scale;
    if (RES[0]! > maxMin) maxMin = RES[0]!;
  }
  let dBits = 0;
  let mBits = 0;
  if (maxScale > 0) {
    const iscale = fr(15 / maxScale);
    for (let j = 0; j < 16; j++) y[o + j] = nearestInt(fr(iscale * SCALES[j]!)) & 255;
    dBits = f32ToF16(fr(maxScale / 15));
  } else {
    y.fill(0, o, o + 16);
  }
  if (maxMin > 0) {
    const iscale = fr(15 / maxMin);
    for (let j = 0; j < 16; j++) y[o + j] = y[o + j]! | (nearestInt(fr(iscale * MINS[j]!)) << 4);
    mBits = f32ToF16(fr(maxMin / 15));
  }
  return [dBits, mBits];
}

/**
 * `quantize_row_q2_K_impl`'s scales: each sub-block fit with importance
 * weights (`make_qkx3_quants(16, 3, …, -0.9, 0.05, 36)`), then the scales and
 * mins by `make_qp_quants` weighted by each sub-block's total weight.
 */
function weightedScales(
  x: Float32Array,
  xo: number,
  qw: Float32Array,
  qo: number,
  y: Uint8Array,
  o: number,
): [number, number] {
  const sigma2 = meanSquare(x, xo, 256);
  for (let j = 0; j < 16; j++) {
    importanceWeights(x, xo + 16 * j, qw, qo + 16 * j, sigma2, WEIGHT, 16);
    let sw = 0;
    for (let l = 0; l < 16; l++) {
      sw = fr(sw + WEIGHT[l]!);
      W64[l] = WEIGHT[l]!;
    }
    SW[j] = sw;
    SCALES[j] = makeQkx2Quants(
      16,
      3,
      x,
      xo + 16 * j,
      W64,
      L,
      16 * j,
      LAUX,
      fr(-0.9),
      fr(0.05),
      36,
      RES,
    );
    MINS[j] = RES[0]!;
  }
  const dm = makeQpQuants(16, 15, SCALES, LS, SW);
  const mm = makeQpQuants(16, 15, MINS, LM, SW);
  for (let j = 0; j < 16; j++) y[o + j] = (LS[j]! | (LM[j]! << 4)) & 255;
  return [f32ToF16(dm), f32ToF16(mm)];
}
