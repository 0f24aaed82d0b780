// This module is browser compatible.

/**
 * Dequantizers for ggml's 32-element block types, bit-exact with llama.cpp's
 * `dequantize_row_q4_0` … `dequantize_row_q8_0` (FORMATS.md §3). Every product
 * of a quant and an f16 scale is exact in f32, so one rounding on store
 * reproduces the C result whatever the compiler contracts.
 *
 * Each function decodes `floor(bytes.length / blockBytes)` whole blocks of 32
 * values; `bytes` may start at any offset.
 *
 * @module
 */

import { f16Table } from "./f16.ts";

function alloc(bytes: Uint8Array, blockBytes: number, out?: Float32Array): Float32Array {
  return out ?? new Float32Array(Math.floor(bytes.length / blockBytes) * 32);
}

/**
 * Dequantize Q4_0 blocks (18 bytes: f16 d, 16 bytes of nibbles): `(q - 8) * d`,
 * low nibbles are values 0–15, high nibbles 16–31.
 *
 * @param bytes Whole blocks.
 * @param out Destination of `32 * blocks` values.
 * @returns `out`, or a new array.
 */
export function decodeQ4_0(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const y = alloc(bytes, 18, out);
  const t = f16Table();
  const nb = Math.floor(bytes.length / 18);
  for (let i = 0; i < nb; i++) {
    const o = i * 18;
    const d = t[bytes[o]! | (bytes[o + 1]! << 8)]!;
    const b = i * 32;
    for (let j = 0; j < 16; j++) {
      const q = bytes[o + 2 + j]!;
      y[b + j] = ((q & 15) - 8) * d;
      y[b + j + 16] = ((q >>> 4) - 8) * d;
    }
  }
  return y;
}

/**
 * Dequantize Q4_1 blocks (20 bytes: f16 d, f16 m, 16 bytes of nibbles): `q * d + m`.
 *
 * @param bytes Whole blocks.
 * @param out Destination of `32 * blocks` values.
 * @returns `out`, or a new array.
 */
export function decodeQ4_1(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const y = alloc(bytes, 20, out);
  const t = f16Table();
  const nb = Math.floor(bytes.length / 20);
  for (let i = 0; i < nb; i++) {
    const o = i * 20;
    const d = t[bytes[o]! | (bytes[o + 1]! << 8)]!;
    const m = t[bytes[o + 2]! | (bytes[o + 3]! << 8)]!;
    const b = i * 32;
    for (let j = 0; j < 16; j++) {
      const q = bytes[o + 4 + j]!;
      y[b + j] = (q & 15) * d + m;
      y[b + j + 16] = (q >>> 4) * d + m;
    }
  }
  return y;
}

/**
 * Dequantize Q5_0 blocks (22 bytes: f16 d, u32 high bits, 16 bytes of nibbles):
 * `(q - 16) * d`.
 *
 * @param bytes Whole blocks.
 * @param out Destination of `32 * blocks` values.
 * @returns `out`, or a new array.
 */
export function decodeQ5_0(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const y = alloc(bytes, 22, out);
  const t = f16Table();
  const nb = Math.floor(bytes.length / 22);
  for (let i = 0; i < nb; i++) {
    const o = i * 22;
    const d = t[bytes[o]! | (bytes[o + 1]! << 8)]!;
    const qh = (bytes[o + 2]! | (bytes[o + 3]! << 8) | (bytes[o + 4]! << 16) |
      (bytes[o + 5]! << 24)) >>> 0;
    const b = i * 32;
    for (let j = 0; j < 16; j++) {
      const q = bytes[o + 6 + j]!;
      const h0 = ((qh >>> j) << 4) & 0x10;
      const h1 = (qh >>> (j + 12)) & 0x10;
      y[b + j] = (((q & 15) | h0) - 16) * d;
      y[b + j + 16] = (((q >>> 4) | h1) - 16) * d;
    }
  }
  return y;
}

/**
 * Dequantize Q5_1 blocks (24 bytes: f16 d, f16 m, u32 high bits, 16 bytes of
 * nibbles): `q * d + m`.
 *
 * @param bytes Whole blocks.
 * @param out Destination of `32 * blocks` values.
 * @returns `out`, or a new array.
 */
export function decodeQ5_1(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const y = alloc(bytes, 24, out);
  const t = f16Table();
  const nb = Math.floor(bytes.length / 24);
  for (let i = 0; i < nb; i++) {
    const o = i * 24;
    const d = t[bytes[o]! | (bytes[o + 1]! << 8)]!;
    const m = t[bytes[o + 2]! | (bytes[o + 3]! << 8)]!;
    const qh = (bytes[o + 4]! | (bytes[o + 5]! << 8) | (bytes[o + 6]! << 16) |
      (bytes[o + 7]! << 24)) >>> 0;
    const b = i * 32;
    for (let j = 0; j < 16; j++) {
      const q = bytes[o + 8 + j]!;
      const h0 = ((qh >>> j) << 4) & 0x10;
      const h1 = (qh >>> (j + 12)) & 0x10;
      y[b + j] = ((q & 15) | h0) * d + m;
      y[b + j + 16] = ((q >>> 4) | h1) * d + m;
    }
  }
  return y;
}

/**
 * Dequantize Q8_0 blocks (34 bytes: f16 d, 32 × i8): `q * d`.
 *
 * @param bytes Whole blocks.
 * @param out Destination of `32 * blocks` values.
 * @returns `out`, or a new array.
 */
export function decodeQ8_0(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const y = alloc(bytes, 34, out);
  const t = f16Table();
  const nb = Math.floor(bytes.length / 34);
  for (let i = 0; i < nb; i++) {
    const o = i * 34;
    const d = t[bytes[o]! | (bytes[o + 1]! << 8)]!;
    const b = i * 32;
    for (let j = 0; j < 32; j++) y[b + j] = ((bytes[o + 2 + j]! << 24) >> 24) * d;
  }
  return y;
}

/**
 * Dequantize Q8_1 blocks (36 bytes: f16 d, f16 sum, 32 × i8): `q * d`. llama.cpp
 * has no reference dequantizer for this activation-only type; this is the same
 * rule as Q8_0.
 *
 * @param bytes Whole blocks.
 * @param out Destination of `32 * blocks` values.
 * @returns `out`, or a new array.
 */
export function decodeQ8_1(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const y = alloc(bytes, 36, out);
  const t = f16Table();
  const nb = Math.floor(bytes.length / 36);
  for (let i = 0; i < nb; i++) {
    const o = i * 36;
    const d = t[bytes[o]! | (bytes[o + 1]! << 8)]!;
    const b = i * 32;
    for (let j = 0; j < 32; j++) y[b + j] = ((bytes[o + 4 + j]! << 24) >> 24) * d;
  }
  return y;
}
