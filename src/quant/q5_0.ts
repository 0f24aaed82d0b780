// This module is browser compatible.

/**
 * Q5_0 and Q5_1 (FORMATS.md §3): blocks of 32 values — f16 `d` (Q5_1: and
 * f16 `m`), a little-endian u32 of fifth bits (bit j for value j), 16 bytes
 * of nibbles (value j low, value j + 16 high). Q5_0 is `d * (q - 16)`, Q5_1
 * `d * q + m`. GGUF only: `llama-quantize` falls back to them for rows that
 * are not whole 256-value super-blocks (Q4_K → Q5_0, Q5_K → Q5_1).
 *
 * The encoders are ports of llama.cpp's `quantize_row_q5_{0,1}_ref` and, with
 * an importance matrix, `quantize_row_q5_{0,1}_impl`, in f32 arithmetic, so
 * they produce the same bytes. The decoders are in `ggml_legacy.ts`.
 *
 * @module
 */

import { f32ToF16 } from "./f16.ts";
import { makeQkx2Quants, makeQxQuants } from "./_make_quants.ts";
import { countBlocks } from "./_count_blocks.ts";
import { importanceWeights, meanSquare } from "./_row_weights.ts";
import { toInt8, toUint8 } from "./_round.ts";

/** Bytes per Q5_0 block. */
export const Q5_0_BLOCK_BYTES = 22;
/** Bytes per Q5_1 block. */
export const Q5_1_BLOCK_BYTES = 24;

const fr = Math.fround;
const F32_MAX = 3.4028234663852886e38;
// Scratch for one block.
const L = new Uint8Array(32);
const WEIGHT = new Float32Array(32);
const WEIGHT64 = new Float64Array(32);
const LAUX = new Float64Array(32);
const RES = new Float32Array(1);

/**
 * Quantize values to Q5_0 blocks (llama.cpp's algorithm).
 *
 * @param values A whole number of 32-value blocks; with `importance`, a whole
 * number of rows of `importance.length` values.
 * @param out Destination of `values.length / 32 * 22` bytes.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values.length` is not a multiple of 32 (or of the row).
 *
 * @example Usage
 * ```ts
 * import { encodeQ5_0 } from "./q5_0.ts";
 * import { decodeQ5_0 } from "./ggml_legacy.ts";
 * const values = new Float32Array(64).map((_, i) => Math.sin(i));
 * const back = decodeQ5_0(encodeQ5_0(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.05));
 * ```
 */
export function encodeQ5_0(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const nb = countBlocks("Q5_0", values, importance);
  const y = out ?? new Uint8Array(nb * Q5_0_BLOCK_BYTES);
  const cols = importance?.length ?? 32;
  let sigma2 = 0;
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * Q5_0_BLOCK_BYTES;
    if (importance === undefined) {
      referenceQ5_0(values, xo, y, o);
      continue;
    }
    const col = xo % cols;
    if (col === 0) sigma2 = meanSquare(values, xo, cols);
    importanceWeights(values, xo, importance, col, sigma2, WEIGHT);
    const d = makeQxQuants(32, 16, values, xo, L, 0, WEIGHT, 0);
    const bits = f32ToF16(d);
    y[o] = bits & 255;
    y[o + 1] = bits >>> 8;
    packFiveBits(L, y, o + 2);
  }
  return y;
}

/**
 * Quantize values to Q5_1 blocks (llama.cpp's algorithm).
 *
 * @param values A whole number of 32-value blocks; with `importance`, a whole
 * number of rows of `importance.length` values.
 * @param out Destination of `values.length / 32 * 24` bytes.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values.length` is not a multiple of 32 (or of the row).
 *
 * @example Usage
 * ```ts
 * import { encodeQ5_1 } from "./q5_0.ts";
 * import { decodeQ5_1 } from "./ggml_legacy.ts";
 * const values = new Float32Array(64).map((_, i) => Math.sin(i));
 * const back = decodeQ5_1(encodeQ5_1(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.05));
 * ```
 */
export function encodeQ5_1(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const nb = countBlocks("Q5_1", values, importance);
  const y = out ?? new Uint8Array(nb * Q5_1_BLOCK_BYTES);
  const cols = importance?.length ?? 32;
  let sigma2 = 0;
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * Q5_1_BLOCK_BYTES;
    if (importance === undefined) {
      referenceQ5_1(values, xo, y, o);
      continue;
    }
    const col = xo % cols;
    if (col === 0) sigma2 = meanSquare(values, xo, cols);
    importanceWeights(values, xo, importance, col, sigma2, WEIGHT);
    for (let j = 0; j < 32; j++) WEIGHT64[j] = WEIGHT[j]!;
    // make_qkx3_quants(32, 31, …, -0.9, 0.05, 36): the same search as qkx2 with weights.
    const d = makeQkx2Quants(32, 31, values, xo, WEIGHT64, L, 0, LAUX, fr(-0.9), fr(0.05), 36, RES);
    const dBits = f32ToF16(d);
    const mBits = f32ToF16(-RES[0]!);
    y[o] = dBits & 255;
    y[o + 1] = dBits >>> 8;
    y[o + 2] = mBits & 255;
    y[o + 3] = mBits >>> 8;
    packFiveBits(L, y, o + 4);
  }
  return y;
}

/** `quantize_row_q5_0_ref` for one block. */
function referenceQ5_0(x: Float32Array, xo: number, y: Uint8Array, o: number): void {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < 32; j++) {
    const v = x[xo + j]!;
    if (amax < Math.abs(v)) {
      amax = Math.abs(v);
      max = v;
    }
  }
  const d = fr(max / -16);
  const id = d !== 0 ? fr(1 / d) : 0;
  const bits = f32ToF16(d);
  y[o] = bits & 255;
  y[o + 1] = bits >>> 8;
  for (let j = 0; j < 32; j++) {
    // (int8_t)(x*id + 16.5f) truncates toward zero, then MIN(31, ·).
    const q = toInt8(fr(fr(x[xo + j]! * id) + 16.5));
    L[j] = (q > 31 ? 31 : q) & 255;
  }
  packFiveBits(L, y, o + 2);
}

/** `quantize_row_q5_1_ref` for one block. */
function referenceQ5_1(x: Float32Array, xo: number, y: Uint8Array, o: number): void {
  let min = F32_MAX;
  let max = -F32_MAX;
  for (let j = 0; j < 32; j++) {
    const v = x[xo + j]!;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const d = fr(fr(max - min) / 31);
  const id = d !== 0 ? fr(1 / d) : 0;
  const dBits = f32ToF16(d);
  const mBits = f32ToF16(min);
  y[o] = dBits & 255;
  y[o + 1] = dBits >>> 8;
  y[o + 2] = mBits & 255;
  y[o + 3] = mBits >>> 8;
  for (let j = 0; j < 32; j++) {
    // (uint8_t)((x - min)*id + 0.5f): truncation toward zero, no clamp.
    L[j] = toUint8(fr(fr(fr(x[xo + j]! - min) * id) + 0.5));
  }
  packFiveBits(L, y, o + 4);
}

/** The low nibbles (value j and j + 16 share a byte) at `o + 4`, the fifth bits as a u32 at `o`. */
function packFiveBits(levels: Uint8Array, y: Uint8Array, o: number): void {
  let qh = 0;
  for (let j = 0; j < 16; j++) {
    const a = levels[j]!;
    const b = levels[j + 16]!;
    y[o + 4 + j] = (a & 15) | ((b & 15) << 4);
    qh |= ((a & 16) >>> 4) << j;
    qh |= ((b & 16) >>> 4) << (j + 16);
  }
  y[o] = qh & 255;
  y[o + 1] = (qh >>> 8) & 255;
  y[o + 2] = (qh >>> 16) & 255;
  y[o + 3] = qh >>> 24;
}
