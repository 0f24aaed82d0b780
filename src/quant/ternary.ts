// This module is browser compatible.

/**
 * Dequantizers for ggml's ternary and sign types — TQ1_0, TQ2_0 (BitNet b1.58
 * style, values in {-1, 0, 1} times an f16 scale), Q1_0 (±d) and Q2_0
 * ({-1, 0, 1, 2} times d) — bit-exact ports of llama.cpp's
 * `dequantize_row_tq1_0`, `_tq2_0`, `_q1_0` and `_q2_0` (`ggml-quants.c`).
 * Each value is a small integer times an f16 scale, exact in f32.
 * The encoders are in `ternary_encoders.ts`.
 *
 * Each function decodes `floor(bytes.length / blockBytes)` whole blocks into
 * `out`; `bytes` may start at any offset.
 *
 * @module
 */

import { f16Table } from "./f16.ts";

const POW3 = [1, 3, 9, 27, 81, 243];

/** One base-3 digit of a TQ1_0 byte, as ggml extracts it: `((q * 3^n mod 256) * 3) >> 8`, minus 1. */
function trit(q: number, n: number): number {
  return ((((q * POW3[n]!) & 0xff) * 3) >>> 8) - 1;
}

/**
 * Dequantize TQ1_0 blocks (54 bytes: 48 bytes of five trits each, 4 bytes of
 * four trits each, f16 d at the end).
 *
 * @param bytes Whole blocks.
 * @param dest Destination of 256 values per block.
 * @returns `dest`, or a new array.
 */
export function decodeTq1_0(bytes: Uint8Array, dest?: Float32Array): Float32Array {
  const out = dest ?? new Float32Array(Math.floor(bytes.length / 54) * 256);
  const t = f16Table();
  const nb = Math.floor(bytes.length / 54);
  let y = 0;
  for (let i = 0; i < nb; i++) {
    const o = i * 54;
    const d = t[bytes[o + 52]! | (bytes[o + 53]! << 8)]!;
    // 32 bytes × 5 trits, then 16 bytes × 5 trits, then the 4 qh bytes × 4 trits.
    for (let n = 0; n < 5; n++) {
      for (let m = 0; m < 32; m++) out[y++] = trit(bytes[o + m]!, n) * d;
    }
    for (let n = 0; n < 5; n++) {
      for (let m = 0; m < 16; m++) out[y++] = trit(bytes[o + 32 + m]!, n) * d;
    }
    for (let n = 0; n < 4; n++) {
      for (let j = 0; j < 4; j++) out[y++] = trit(bytes[o + 48 + j]!, n) * d;
    }
  }
  return out;
}

/**
 * Dequantize TQ2_0 blocks (66 bytes: 64 bytes of 2-bit values, f16 d at the end): `(q - 1) * d`.
 *
 * @param bytes Whole blocks.
 * @param dest Destination of 256 values per block.
 * @returns `dest`, or a new array.
 */
export function decodeTq2_0(bytes: Uint8Array, dest?: Float32Array): Float32Array {
  const out = dest ?? new Float32Array(Math.floor(bytes.length / 66) * 256);
  const t = f16Table();
  const nb = Math.floor(bytes.length / 66);
  let y = 0;
  for (let i = 0; i < nb; i++) {
    const o = i * 66;
    const d = t[bytes[o + 64]! | (bytes[o + 65]! << 8)]!;
    for (let j = 0; j < 64; j += 32) {
      for (let l = 0; l < 4; l++) {
        for (let m = 0; m < 32; m++) out[y++] = (((bytes[o + j + m]! >>> (2 * l)) & 3) - 1) * d;
      }
    }
  }
  return out;
}

/**
 * Dequantize Q1_0 blocks (18 bytes: f16 d, 16 bytes of sign bits, least significant first): `bit ? d : -d`.
 *
 * @param bytes Whole blocks.
 * @param dest Destination of 128 values per block.
 * @returns `dest`, or a new array.
 */
export function decodeQ1_0(bytes: Uint8Array, dest?: Float32Array): Float32Array {
  const out = dest ?? new Float32Array(Math.floor(bytes.length / 18) * 128);
  const t = f16Table();
  const nb = Math.floor(bytes.length / 18);
  for (let i = 0; i < nb; i++) {
    const o = i * 18;
    const d = t[bytes[o]! | (bytes[o + 1]! << 8)]!;
    for (let j = 0; j < 128; j++) {
      out[i * 128 + j] = (bytes[o + 2 + (j >>> 3)]! >>> (j & 7)) & 1 ? d : -d;
    }
  }
  return out;
}

/**
 * Dequantize Q2_0 blocks (18 bytes: f16 d, 16 bytes of 2-bit values, least significant first): `(q - 1) * d`.
 *
 * @param bytes Whole blocks.
 * @param dest Destination of 64 values per block.
 * @returns `dest`, or a new array.
 */
export function decodeQ2_0(bytes: Uint8Array, dest?: Float32Array): Float32Array {
  const out = dest ?? new Float32Array(Math.floor(bytes.length / 18) * 64);
  const t = f16Table();
  const nb = Math.floor(bytes.length / 18);
  for (let i = 0; i < nb; i++) {
    const o = i * 18;
    const d = t[bytes[o]! | (bytes[o + 1]! << 8)]!;
    for (let j = 0; j < 64; j++) {
      out[i * 64 + j] = (((bytes[o + 2 + (j >>> 2)]! >>> (2 * (j & 3))) & 3) - 1) * d;
    }
  }
  return out;
}
