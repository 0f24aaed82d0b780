// This module is browser compatible.

/**
 * Encoders of ggml's ternary and sign types — TQ1_0, TQ2_0 (values in
 * {-1, 0, 1} times the block's absmax), Q1_0 (the sign of each value times
 * the mean absolute value) and Q2_0 ({-1, 0, 1, 2} times the absmax) — ports
 * of llama.cpp's `quantize_row_{tq1_0,tq2_0,q1_0,q2_0}_ref` (ggml-quants.c),
 * which llama-quantize runs with or without an importance matrix (all four
 * ignore it). The decoders are in `ternary.ts`.
 *
 * @module
 */

import { f32ToF16 } from "./f16.ts";
import { countBlocks } from "./_count_blocks.ts";

const fr = Math.fround;
/** Scratch: one TQ block's trits (0, 1, 2), in value order. */
const TRITS = new Int32Array(256);

/** C's `lroundf` (halves away from zero) of an f32. */
function lround(v: number): number {
  return v < 0 ? -Math.floor(-v + 0.5) : Math.floor(v + 0.5);
}

/** `MAX(amax, fabsf(v))` over 256 values, then the trits `lroundf(x / amax) + 1`; returns d. */
function trits(x: Float32Array, xo: number): number {
  let amax = 0;
  for (let j = 0; j < 256; j++) {
    const a = Math.abs(x[xo + j]!);
    amax = amax > a ? amax : a;
  }
  const id = amax !== 0 ? fr(1 / amax) : 0;
  for (let j = 0; j < 256; j++) TRITS[j] = lround(fr(x[xo + j]! * id)) + 1;
  return amax;
}

/** Five (or four, then a zero) trits as one byte: base 3, scaled to 256 / 243, rounded up. */
function packTrits(first: number, step: number, count: number): number {
  let q = 0;
  for (let n = 0; n < count; n++) q = (q * 3 + TRITS[first + n * step]!) & 255;
  if (count === 4) q = (q * 3) & 255;
  return Math.floor((q * 256 + 242) / 243) & 255;
}

/**
 * Quantize values to TQ1_0 blocks (54 bytes per 256 values).
 *
 * @param values A whole number of 256-value blocks.
 * @param out Destination of `values.length / 256 * 54` bytes.
 * @returns `out`, or a new array.
 * @throws {RangeError} When `values.length` is not a multiple of 256.
 *
 * @example Usage
 * ```ts
 * import { encodeTq1_0 } from "./ternary_encoders.ts";
 * import { decodeTq1_0 } from "./ternary.ts";
 * const values = new Float32Array(256).map((_, i) => (i % 3) - 1);
 * console.assert(decodeTq1_0(encodeTq1_0(values)).every((v, i) => v === values[i]));
 * ```
 */
export function encodeTq1_0(values: Float32Array, out?: Uint8Array): Uint8Array {
  const nb = countBlocks("TQ1_0", values, undefined);
  const y = out ?? new Uint8Array(nb * 54);
  for (let i = 0; i < nb; i++) {
    const o = i * 54;
    const d = trits(values, i * 256);
    // 32 bytes of five trits 32 apart, 16 bytes of five trits 16 apart, then
    // 4 bytes of four trits 4 apart.
    for (let m = 0; m < 32; m++) y[o + m] = packTrits(m, 32, 5);
    for (let m = 0; m < 16; m++) y[o + 32 + m] = packTrits(160 + m, 16, 5);
    for (let j = 0; j < 4; j++) y[o + 48 + j] = packTrits(240 + j, 4, 4);
    const bits = f32ToF16(d);
    y[o + 52] = bits & 255;
    y[o + 53] = bits >>> 8;
  }
  return y;
}

/**
 * Quantize values to TQ2_0 blocks (66 bytes per 256 values).
 *
 * @param values A whole number of 256-value blocks.
 * @param out Destination of `values.length / 256 * 66` bytes.
 * @returns `out`, or a new array.
 * @throws {RangeError} When `values.length` is not a multiple of 256.
 *
 * @example Usage
 * ```ts
 * import { encodeTq2_0 } from "./ternary_encoders.ts";
 * import { decodeTq2_0 } from "./ternary.ts";
 * const values = new Float32Array(256).map((_, i) => (i % 3) - 1);
 * console.assert(decodeTq2_0(encodeTq2_0(values)).every((v, i) => v === values[i]));
 * ```
 */
export function encodeTq2_0(values: Float32Array, out?: Uint8Array): Uint8Array {
  const nb = countBlocks("TQ2_0", values, undefined);
  const y = out ?? new Uint8Array(nb * 66);
  for (let i = 0; i < nb; i++) {
    const o = i * 66;
    const d = trits(values, i * 256);
    // Byte m of each 32-byte half holds values m, m + 32, m + 64, m + 96 of its 128.
    for (let j = 0; j < 64; j += 32) {
      for (let m = 0; m < 32; m++) {
        let q = 0;
        for (let n = 0; n < 4; n++) q += (TRITS[4 * j + m + 32 * n]! & 3) << (2 * n);
        y[o + j + m] = q & 255;
      }
    }
    const bits = f32ToF16(d);
    y[o + 64] = bits & 255;
    y[o + 65] = bits >>> 8;
  }
  return y;
}

/**
 * Quantize values to Q1_0 blocks (18 bytes per 128 values: f16 mean |x|,
 * then one bit per value, set when the value is >= 0).
 *
 * @param values A whole number of 128-value blocks.
 * @param out Destination of `values.length / 128 * 18` bytes.
 * @returns `out`, or a new array.
 * @throws {RangeError} When `values.length` is not a multiple of 128.
 *
 * @example Usage
 * ```ts
 * import { encodeQ1_0 } from "./ternary_encoders.ts";
 * import { decodeQ1_0 } from "./ternary.ts";
 * const values = new Float32Array(128).map((_, i) => (i % 2 ? 0.5 : -0.5));
 * console.assert(decodeQ1_0(encodeQ1_0(values)).every((v, i) => v === values[i]));
 * ```
 */
export function encodeQ1_0(values: Float32Array, out?: Uint8Array): Uint8Array {
  const nb = countBlocks("Q1_0", values, undefined);
  const y = out ?? new Uint8Array(nb * 18);
  for (let i = 0; i < nb; i++) {
    const xo = i * 128;
    const o = i * 18;
    let sumAbs = 0;
    for (let j = 0; j < 128; j++) sumAbs = fr(sumAbs + Math.abs(values[xo + j]!));
    const bits = f32ToF16(fr(sumAbs / 128));
    y[o] = bits & 255;
    y[o + 1] = bits >>> 8;
    for (let b = 0; b < 16; b++) {
      let q = 0;
      for (let k = 0; k < 8; k++) if (values[xo + 8 * b + k]! >= 0) q |= 1 << k;
      y[o + 2 + b] = q;
    }
  }
  return y;
}

/**
 * Quantize values to Q2_0 blocks (18 bytes per 64 values: f16 absmax d, then
 * 2 bits per value, `round(x / d) + 1` clamped to 0..3).
 *
 * @param values A whole number of 64-value blocks.
 * @param out Destination of `values.length / 64 * 18` bytes.
 * @returns `out`, or a new array.
 * @throws {RangeError} When `values.length` is not a multiple of 64.
 *
 * @example Usage
 * ```ts
 * import { encodeQ2_0 } from "./ternary_encoders.ts";
 * import { decodeQ2_0 } from "./ternary.ts";
 * const values = new Float32Array(64).map((_, i) => (i % 4) - 1);
 * console.assert(decodeQ2_0(encodeQ2_0(values)).every((v, i) => v === values[i]));
 * ```
 */
export function encodeQ2_0(values: Float32Array, out?: Uint8Array): Uint8Array {
  const nb = countBlocks("Q2_0", values, undefined);
  const y = out ?? new Uint8Array(nb * 18);
  for (let i = 0; i < nb; i++) {
    const xo = i * 64;
    const o = i * 18;
    let amax = 0;
    for (let j = 0; j < 64; j++) {
      const a = Math.abs(values[xo + j]!);
      if (a > amax) amax = a;
    }
    const id = amax > 0 ? fr(1 / amax) : 0;
    const bits = f32ToF16(amax);
    y[o] = bits & 255;
    y[o + 1] = bits >>> 8;
    for (let b = 0; b < 16; b++) {
      let q = 0;
      for (let k = 0; k < 4; k++) {
        // (int)roundf(w * id) + 1, clamped to 0..3. Out of int's range (an
        // infinite product: 1 / amax overflows for a subnormal amax) or NaN,
        // x86's conversion gives INT_MIN, so 0.
        const r = lround(fr(values[xo + 4 * b + k]! * id));
        let l = r >= -2147483648 && r < 2147483648 ? r + 1 : 0;
        l = l < 0 ? 0 : l > 3 ? 3 : l;
        q |= l << (2 * k);
      }
      y[o + 2 + b] = q;
    }
  }
  return y;
}
