// This module is browser compatible.

/**
 * Q6_K (APR_V2.md §5, FORMATS.md §3): super-blocks of 256 values in 210 bytes
 * — `ql[128]` low nibbles, `qh[64]` high 2-bit pairs, 16 i8 sub-block scales,
 * f16 `d`.
 *
 * The encoder is a port of llama.cpp's quantizers (`quantize_row_q6_K_ref`
 * with `make_qx_quants`, what `llama-quantize` runs without an importance
 * matrix, and `quantize_row_q6_K_impl` with one) in f32 arithmetic, so it
 * produces the same bytes. The decoder is bit-exact with `dequantize_row_q6_K`.
 *
 * @module
 */

import { nearestInt } from "./_round.ts";
import { f16Table, f32ToF16 } from "./f16.ts";
import { makeQxQuants } from "./_make_quants.ts";
import { countBlocks } from "./_count_blocks.ts";

/** Values per Q6_K super-block. */
export const Q6_K_BLOCK_ELEMENTS = 256;
/** Bytes per Q6_K super-block. */
export const Q6_K_BLOCK_BYTES = 210;

const fr = Math.fround;
/** ggml's GROUP_MAX_EPS: below it a super-block counts as all zero. */
const GROUP_MAX_EPS = fr(1e-15);

/**
 * Quantize values to Q6_K super-blocks (llama.cpp's algorithm): the reference
 * quantizer `quantize_row_q6_K_ref`, or with an importance matrix
 * `quantize_row_q6_K_impl` (the importance weights replace `x²`).
 *
 * @param values A whole number of 256-value super-blocks (pad rows with zeros
 * first); with `importance`, a whole number of rows of `importance.length` values.
 * @param out Destination of `values.length / 256 * 210` bytes.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values.length` is not a multiple of 256 (or of the row).
 *
 * @example Usage
 * ```ts
 * import { decodeQ6K, encodeQ6K } from "./q6_k.ts";
 * const values = new Float32Array(256).map((_, i) => Math.sin(i));
 * const back = decodeQ6K(encodeQ6K(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.03));
 * ```
 */
export function encodeQ6K(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const nb = countBlocks("Q6_K", values, importance);
  const cols = importance?.length ?? 256;
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
      const scale = makeQxQuants(
        16,
        32,
        values,
        xo + 16 * ib,
        L,
        16 * ib,
        importance,
        (xo % cols) + 16 * ib,
      );
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
