// This module is browser compatible.

/**
 * Dequantizers for the ggml K-quant super-blocks that APR cannot store (Q2_K,
 * Q3_K, Q5_K, Q8_K), bit-exact with llama.cpp's `dequantize_row_*`. Q4_K and
 * Q6_K live in `q4_k.ts` and `q6_k.ts` with their encoders. Each function
 * decodes `floor(bytes.length / blockBytes)` whole blocks of 256 values.
 *
 * @module
 */

import { f16Table } from "./f16.ts";
import { scaleMinK4 } from "./_k_scales.ts";

const QK_K = 256;

function alloc(bytes: Uint8Array, blockBytes: number, out?: Float32Array): Float32Array {
  return out ?? new Float32Array(Math.floor(bytes.length / blockBytes) * QK_K);
}

/**
 * Dequantize Q2_K blocks (84 bytes: 16 scale/min bytes, 64 bytes of 2-bit
 * quants, f16 d, f16 dmin).
 *
 * @param bytes Whole blocks.
 * @param out Destination of `256 * blocks` values.
 * @returns `out`, or a new array.
 */
export function decodeQ2K(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const y = alloc(bytes, 84, out);
  const t = f16Table();
  const nb = Math.floor(bytes.length / 84);
  for (let i = 0; i < nb; i++) {
    const o = i * 84;
    const d = t[bytes[o + 80]! | (bytes[o + 81]! << 8)]!;
    const min = t[bytes[o + 82]! | (bytes[o + 83]! << 8)]!;
    let yi = i * QK_K;
    let is = 0;
    for (let n = 0; n < 2; n++) {
      const q = o + 16 + 32 * n;
      for (let shift = 0; shift < 8; shift += 2) {
        let sc = bytes[o + is++]!;
        let dl = Math.fround(d * (sc & 15));
        let ml = Math.fround(min * (sc >>> 4));
        for (let l = 0; l < 16; l++) y[yi++] = dl * ((bytes[q + l]! >>> shift) & 3) - ml;
        sc = bytes[o + is++]!;
        dl = Math.fround(d * (sc & 15));
        ml = Math.fround(min * (sc >>> 4));
        for (let l = 0; l < 16; l++) y[yi++] = dl * ((bytes[q + l + 16]! >>> shift) & 3) - ml;
      }
    }
  }
  return y;
}

/**
 * Dequantize Q3_K blocks (110 bytes: 32 bytes of high-bit mask, 64 bytes of
 * 2-bit quants, 12 bytes of packed 6-bit scales, f16 d).
 *
 * @param bytes Whole blocks.
 * @param out Destination of `256 * blocks` values.
 * @returns `out`, or a new array.
 */
export function decodeQ3K(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const y = alloc(bytes, 110, out);
  const t = f16Table();
  const nb = Math.floor(bytes.length / 110);
  const scales = new Int8Array(16);
  for (let i = 0; i < nb; i++) {
    const o = i * 110;
    const dAll = t[bytes[o + 108]! | (bytes[o + 109]! << 8)]!;
    // Unpack the 16 6-bit scales exactly as llama.cpp's u32 mask shuffle does.
    const s = o + 96;
    for (let j = 0; j < 16; j++) {
      const low = j < 8 ? bytes[s + j]! & 15 : bytes[s + j - 8]! >>> 4;
      const high = (bytes[s + 8 + (j & 3)]! >>> (2 * (j >>> 2))) & 3;
      scales[j] = (low | (high << 4)) - 32;
    }
    let yi = i * QK_K;
    let is = 0;
    let m = 1;
    for (let n = 0; n < 2; n++) {
      const q = o + 32 + 32 * n;
      for (let shift = 0; shift < 8; shift += 2) {
        let dl = Math.fround(dAll * scales[is++]!);
        for (let l = 0; l < 16; l++) {
          const v = ((bytes[q + l]! >>> shift) & 3) - ((bytes[o + l]! & m) ? 0 : 4);
          y[yi++] = dl * v;
        }
        dl = Math.fround(dAll * scales[is++]!);
        for (let l = 0; l < 16; l++) {
          const v = ((bytes[q + l + 16]! >>> shift) & 3) - ((bytes[o + l + 16]! & m) ? 0 : 4);
          y[yi++] = dl * v;
        }
        m <<= 1;
      }
    }
  }
  return y;
}

/**
 * Dequantize Q5_K blocks (176 bytes: f16 d, f16 dmin, 12 bytes of packed 6-bit
 * scales and mins, 32 bytes of high bits, 128 bytes of nibbles).
 *
 * @param bytes Whole blocks.
 * @param out Destination of `256 * blocks` values.
 * @returns `out`, or a new array.
 */
export function decodeQ5K(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const y = alloc(bytes, 176, out);
  const t = f16Table();
  const nb = Math.floor(bytes.length / 176);
  const sm = new Uint8Array(2);
  for (let i = 0; i < nb; i++) {
    const o = i * 176;
    const d = t[bytes[o]! | (bytes[o + 1]! << 8)]!;
    const min = t[bytes[o + 2]! | (bytes[o + 3]! << 8)]!;
    const qh = o + 16;
    let ql = o + 48;
    let yi = i * QK_K;
    let u1 = 1;
    let u2 = 2;
    for (let is = 0; is < 8; is += 2) {
      scaleMinK4(is, bytes, o + 4, sm);
      const d1 = Math.fround(d * sm[0]!);
      const m1 = Math.fround(min * sm[1]!);
      scaleMinK4(is + 1, bytes, o + 4, sm);
      const d2 = Math.fround(d * sm[0]!);
      const m2 = Math.fround(min * sm[1]!);
      for (let l = 0; l < 32; l++) {
        y[yi++] = d1 * ((bytes[ql + l]! & 15) + (bytes[qh + l]! & u1 ? 16 : 0)) - m1;
      }
      for (let l = 0; l < 32; l++) {
        y[yi++] = d2 * ((bytes[ql + l]! >>> 4) + (bytes[qh + l]! & u2 ? 16 : 0)) - m2;
      }
      ql += 32;
      u1 <<= 2;
      u2 <<= 2;
    }
  }
  return y;
}

/**
 * Dequantize Q8_K blocks (292 bytes: f32 d, 256 × i8, 16 × i16 sums): `d * q`.
 *
 * @param bytes Whole blocks.
 * @param out Destination of `256 * blocks` values.
 * @returns `out`, or a new array.
 */
export function decodeQ8K(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const y = alloc(bytes, 292, out);
  const nb = Math.floor(bytes.length / 292);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < nb; i++) {
    const o = i * 292;
    const d = dv.getFloat32(o, true);
    const b = i * QK_K;
    for (let j = 0; j < QK_K; j++) y[b + j] = d * ((bytes[o + 4 + j]! << 24) >> 24);
  }
  return y;
}
