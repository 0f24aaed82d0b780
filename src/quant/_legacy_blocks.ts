// This module is browser compatible.

/**
 * Internal: the encoder loop Q4_0, Q4_1, Q5_0 and Q5_1 share — ggml's
 * `quantize_row_q{4,5}_{0,1}_ref` (a scale from the block's absmax, or a scale
 * and min from its range) and, with an importance matrix,
 * `quantize_row_q{4,5}_{0,1}_impl` (`make_qx_quants` for the symmetric types,
 * `make_qkx3_quants` for those with a min, weighted by `qw·sqrt(σ² + x²)`
 * with σ² over the whole row) — in f32 arithmetic, so the bytes are ggml's.
 * Each type says how its levels are packed after the f16 `d` (and `m`).
 *
 * @module
 */

import { f32ToF16 } from "./f16.ts";
import { makeQkx2Quants, makeQxQuants } from "./_make_quants.ts";
import { countBlocks } from "./_count_blocks.ts";
import { importanceWeights, meanSquare } from "./_row_weights.ts";
import { toInt8, toUint8 } from "./_round.ts";

/** One legacy block type. */
export interface LegacyBlockType {
  readonly dtype: "Q4_0" | "Q4_1" | "Q5_0" | "Q5_1";
  readonly blockBytes: number;
  /** Levels are `0..2·half-1` (symmetric, `d·(q − half)`) or `0..max` (with a min). */
  readonly half: number;
  /** Stores a min (`d·q + m`) besides the scale. */
  readonly withMin: boolean;
  /**
   * The reference quantizer's level conversion: Q5_1's is `(uint8_t)(v)`
   * unclamped, the others' `MIN(top, (int8_t)(v))`.
   */
  readonly clampedInt8: boolean;
  /** Write the 32 levels (each fitting the type's bits) at `y[o..)`. */
  readonly pack: (levels: Uint8Array, y: Uint8Array, o: number) => void;
}

const fr = Math.fround;
const F32_MAX = 3.4028234663852886e38;
// Scratch for one block.
const L = new Uint8Array(32);
const WEIGHT = new Float32Array(32);
const WEIGHT64 = new Float64Array(32);
const LAUX = new Float64Array(32);
const RES = new Float32Array(1);

/**
 * Encode `values` (whole blocks; with `importance`, whole rows of its length)
 * as `type`'s blocks.
 *
 * @throws {RangeError} When the values are not whole blocks (or rows).
 */
export function encodeLegacyBlocks(
  type: LegacyBlockType,
  values: Float32Array,
  out: Uint8Array | undefined,
  importance: Float32Array | undefined,
): Uint8Array {
  const nb = countBlocks(type.dtype, values, importance);
  const y = out ?? new Uint8Array(nb * type.blockBytes);
  const cols = importance?.length ?? 32;
  let sigma2 = 0;
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * type.blockBytes;
    let d: number;
    let m = 0;
    if (importance === undefined) {
      d = type.withMin ? referenceWithMin(type, values, xo) : referenceSymmetric(type, values, xo);
      m = RES[0]!;
    } else {
      const col = xo % cols;
      if (col === 0) sigma2 = meanSquare(values, xo, cols);
      importanceWeights(values, xo, importance, col, sigma2, WEIGHT);
      if (type.withMin) {
        for (let j = 0; j < 32; j++) WEIGHT64[j] = WEIGHT[j]!;
        // make_qkx3_quants(32, nmax, …, -0.9, 0.05, 36): qkx2's search with weights.
        const nmax = 2 * type.half - 1;
        d = makeQkx2Quants(32, nmax, values, xo, WEIGHT64, L, 0, LAUX, fr(-0.9), fr(0.05), 36, RES);
        m = -RES[0]!;
      } else {
        d = makeQxQuants(32, type.half, values, xo, L, 0, WEIGHT, 0);
      }
    }
    const dBits = f32ToF16(d);
    y[o] = dBits & 255;
    y[o + 1] = dBits >>> 8;
    if (type.withMin) {
      const mBits = f32ToF16(m);
      y[o + 2] = mBits & 255;
      y[o + 3] = mBits >>> 8;
    }
    type.pack(L, y, o + (type.withMin ? 4 : 2));
  }
  return y;
}

/** `quantize_row_q{4,5}_0_ref` for one block: levels to L, returns d. */
function referenceSymmetric(type: LegacyBlockType, x: Float32Array, xo: number): number {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < 32; j++) {
    const v = x[xo + j]!;
    if (amax < Math.abs(v)) {
      amax = Math.abs(v);
      max = v;
    }
  }
  const d = fr(max / -type.half);
  const id = d !== 0 ? fr(1 / d) : 0;
  const top = 2 * type.half - 1;
  for (let j = 0; j < 32; j++) {
    // (int8_t)(x*id + half + 0.5f) truncates toward zero, then MIN(top, ·) in a uint8_t.
    const q = toInt8(fr(fr(x[xo + j]! * id) + (type.half + 0.5)));
    L[j] = (q > top ? top : q) & 255;
  }
  return d;
}

/** `quantize_row_q{4,5}_1_ref` for one block: levels to L, the min to RES[0]; returns d. */
function referenceWithMin(type: LegacyBlockType, x: Float32Array, xo: number): number {
  let min = F32_MAX;
  let max = -F32_MAX;
  for (let j = 0; j < 32; j++) {
    const v = x[xo + j]!;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const top = 2 * type.half - 1;
  const d = fr(fr(max - min) / top);
  const id = d !== 0 ? fr(1 / d) : 0;
  for (let j = 0; j < 32; j++) {
    const v = fr(fr(fr(x[xo + j]! - min) * id) + 0.5);
    if (type.clampedInt8) {
      const q = toInt8(v);
      L[j] = (q > top ? top : q) & 255;
    } else {
      L[j] = toUint8(v);
    }
  }
  RES[0] = min;
  return d;
}
