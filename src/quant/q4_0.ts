// This module is browser compatible.

/**
 * Q4_0 and Q4_1 encoders (FORMATS.md §3): blocks of 32 values — f16 `d`
 * (Q4_1: and f16 `m`), 16 bytes of nibbles (value j low, value j + 16 high).
 * Q4_0 is `d * (q - 8)`, Q4_1 `d * q + m`. GGUF only: llama-quantize's
 * Q4_0/Q4_1 file types, and Q4_0 is its fallback for Q2_K/Q3_K/TQ* rows that
 * are not whole 256-value super-blocks.
 *
 * Ports of llama.cpp's `quantize_row_q4_{0,1}_ref` and, with an importance
 * matrix, `quantize_row_q4_{0,1}_impl` (ggml-quants.c), in f32 arithmetic, so
 * they produce the same bytes. The decoders are in `ggml_legacy.ts`.
 *
 * @module
 */

import { f32ToF16 } from "./f16.ts";
import { makeQkx2Quants, makeQxQuants } from "./_make_quants.ts";
import { countBlocks } from "./_count_blocks.ts";
import { importanceWeights, meanSquare } from "./_row_weights.ts";
import { toInt8 } from "./_round.ts";

/** Bytes per Q4_0 block. */
export const Q4_0_BLOCK_BYTES = 18;
/** Bytes per Q4_1 block. */
export const Q4_1_BLOCK_BYTES = 20;

const fr = Math.fround;
const F32_MAX = 3.4028234663852886e38;
// Scratch for one block.
const L = new Uint8Array(32);
const WEIGHT = new Float32Array(32);
const WEIGHT64 = new Float64Array(32);
const LAUX = new Float64Array(32);
const RES = new Float32Array(1);

/**
 * Quantize values to Q4_0 blocks (llama.cpp's algorithm).
 *
 * @param values A whole number of 32-value blocks; with `importance`, a whole
 * number of rows of `importance.length` values.
 * @param out Destination of `values.length / 32 * 18` bytes.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values.length` is not a multiple of 32 (or of the row).
 *
 * @example Usage
 * ```ts
 * import { encodeQ4_0 } from "./q4_0.ts";
 * import { decodeQ4_0 } from "./ggml_legacy.ts";
 * const values = new Float32Array(64).map((_, i) => Math.sin(i));
 * const back = decodeQ4_0(encodeQ4_0(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.1));
 * ```
 */
export function encodeQ4_0(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const nb = countBlocks("Q4_0", values, importance);
  const y = out ?? new Uint8Array(nb * Q4_0_BLOCK_BYTES);
  const cols = importance?.length ?? 32;
  let sigma2 = 0;
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * Q4_0_BLOCK_BYTES;
    let d: number;
    if (importance === undefined) {
      d = referenceQ4_0(values, xo);
    } else {
      const col = xo % cols;
      if (col === 0) sigma2 = meanSquare(values, xo, cols);
      importanceWeights(values, xo, importance, col, sigma2, WEIGHT);
      d = makeQxQuants(32, 8, values, xo, L, 0, WEIGHT, 0);
    }
    const bits = f32ToF16(d);
    y[o] = bits & 255;
    y[o + 1] = bits >>> 8;
    packNibbles(y, o + 2);
  }
  return y;
}

/**
 * Quantize values to Q4_1 blocks (llama.cpp's algorithm).
 *
 * @param values A whole number of 32-value blocks; with `importance`, a whole
 * number of rows of `importance.length` values.
 * @param out Destination of `values.length / 32 * 20` bytes.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values.length` is not a multiple of 32 (or of the row).
 *
 * @example Usage
 * ```ts
 * import { encodeQ4_1 } from "./q4_0.ts";
 * import { decodeQ4_1 } from "./ggml_legacy.ts";
 * const values = new Float32Array(64).map((_, i) => Math.sin(i));
 * const back = decodeQ4_1(encodeQ4_1(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.1));
 * ```
 */
export function encodeQ4_1(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const nb = countBlocks("Q4_1", values, importance);
  const y = out ?? new Uint8Array(nb * Q4_1_BLOCK_BYTES);
  const cols = importance?.length ?? 32;
  let sigma2 = 0;
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * Q4_1_BLOCK_BYTES;
    let d: number;
    let m: number;
    if (importance === undefined) {
      [d, m] = referenceQ4_1(values, xo);
    } else {
      const col = xo % cols;
      if (col === 0) sigma2 = meanSquare(values, xo, cols);
      importanceWeights(values, xo, importance, col, sigma2, WEIGHT);
      for (let j = 0; j < 32; j++) WEIGHT64[j] = WEIGHT[j]!;
      // make_qkx3_quants(32, 15, …, -0.9, 0.05, 36): the same search as qkx2 with weights.
      d = makeQkx2Quants(32, 15, values, xo, WEIGHT64, L, 0, LAUX, fr(-0.9), fr(0.05), 36, RES);
      m = -RES[0]!;
    }
    const dBits = f32ToF16(d);
    const mBits = f32ToF16(m);
    y[o] = dBits & 255;
    y[o + 1] = dBits >>> 8;
    y[o + 2] = mBits & 255;
    y[o + 3] = mBits >>> 8;
    packNibbles(y, o + 4);
  }
  return y;
}

/** `quantize_row_q4_0_ref` for one block: levels to L, returns d. */
function referenceQ4_0(x: Float32Array, xo: number): number {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < 32; j++) {
    const v = x[xo + j]!;
    if (amax < Math.abs(v)) {
      amax = Math.abs(v);
      max = v;
    }
  }
  const d = fr(max / -8);
  const id = d !== 0 ? fr(1 / d) : 0;
  for (let j = 0; j < 32; j++) {
    // MIN(15, (int8_t)(x*id + 8.5f)), stored in a uint8_t.
    const q = toInt8(fr(fr(x[xo + j]! * id) + 8.5));
    L[j] = (q > 15 ? 15 : q) & 255;
  }
  return d;
}

/** `quantize_row_q4_1_ref` for one block: levels to L, returns [d, min]. */
function referenceQ4_1(x: Float32Array, xo: number): [number, number] {
  let min = F32_MAX;
  let max = -F32_MAX;
  for (let j = 0; j < 32; j++) {
    const v = x[xo + j]!;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const d = fr(fr(max - min) / 15);
  const id = d !== 0 ? fr(1 / d) : 0;
  for (let j = 0; j < 32; j++) {
    const q = toInt8(fr(fr(fr(x[xo + j]! - min) * id) + 0.5));
    L[j] = (q > 15 ? 15 : q) & 255;
  }
  return [d, min];
}

/** Value j's level in the low nibble of byte j, value j + 16's in the high one. */
function packNibbles(y: Uint8Array, o: number): void {
  // As C: `qs = L[j] | L[j + 16] << 4` in a byte, unmasked (every level is 0..15).
  for (let j = 0; j < 16; j++) y[o + j] = (L[j]! | (L[j + 16]! << 4)) & 255;
}
