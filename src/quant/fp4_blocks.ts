// This module is browser compatible.

/**
 * Dequantizers for ggml's FP4 block types: MXFP4 (OCP microscaling, gpt-oss:
 * 32 E2M1 values and one E8M0 exponent) and NVFP4 (64 E2M1 values, one
 * unsigned E4M3 scale per 16) — bit-exact ports of llama.cpp's
 * `dequantize_row_mxfp4` and `dequantize_row_nvfp4` (`ggml-quants.c`), which
 * use doubled E2M1 values (`kvalues_fp4`) and halve the scale to match.
 * The MXFP4 encoder is in `mxfp4_encoder.ts` (NVFP4 has none).
 *
 * Each function decodes `floor(bytes.length / blockBytes)` whole blocks into
 * `out`; `bytes` may start at any offset.
 *
 * @module
 */

import { KVALUES_FP4 } from "./_ggml_grids.ts";

/** ggml's `ggml_e8m0_to_fp32_half`: 2^(e − 128), subnormal for e < 2 (exact in f32). */
function e8m0Half(e: number): number {
  return 2 ** (e - 128);
}

/**
 * ggml's `ggml_ue4m3_to_fp32`: the sign bit is ignored, 0x7F reads as 0, the
 * value is halved (to pair with the doubled {@linkcode KVALUES_FP4}).
 *
 * @param x The scale byte.
 * @returns Half its value.
 */
export function ue4m3Half(x: number): number {
  if (x === 0 || x === 0x7f) return 0;
  const exp = (x >>> 3) & 0xf;
  const man = x & 7;
  const raw = exp === 0 ? man * 2 ** -9 : (1 + man / 8) * 2 ** (exp - 7);
  return raw * 0.5;
}

/**
 * Dequantize MXFP4 blocks (17 bytes: E8M0 exponent, 16 bytes of E2M1
 * nibbles; low nibbles are values 0–15, high nibbles 16–31).
 *
 * @param bytes Whole blocks.
 * @param dest Destination of 32 values per block.
 * @returns `dest`, or a new array.
 */
export function decodeMxfp4(bytes: Uint8Array, dest?: Float32Array): Float32Array {
  const out = dest ?? new Float32Array(Math.floor(bytes.length / 17) * 32);
  const nb = Math.floor(bytes.length / 17);
  for (let i = 0; i < nb; i++) {
    const o = i * 17;
    const d = e8m0Half(bytes[o]!);
    for (let j = 0; j < 16; j++) {
      const q = bytes[o + 1 + j]!;
      out[i * 32 + j] = KVALUES_FP4[q & 0xf]! * d;
      out[i * 32 + j + 16] = KVALUES_FP4[q >>> 4]! * d;
    }
  }
  return out;
}

/**
 * Dequantize NVFP4 blocks (36 bytes: four UE4M3 scales, then 4 × 8 bytes of
 * E2M1 nibbles, each 16-value sub-block low nibbles first).
 *
 * @param bytes Whole blocks.
 * @param dest Destination of 64 values per block.
 * @returns `dest`, or a new array.
 */
export function decodeNvfp4(bytes: Uint8Array, dest?: Float32Array): Float32Array {
  const out = dest ?? new Float32Array(Math.floor(bytes.length / 36) * 64);
  const nb = Math.floor(bytes.length / 36);
  for (let i = 0; i < nb; i++) {
    const o = i * 36;
    for (let s = 0; s < 4; s++) {
      const d = ue4m3Half(bytes[o + s]!);
      const at = i * 64 + s * 16;
      for (let j = 0; j < 8; j++) {
        const q = bytes[o + 4 + s * 8 + j]!;
        out[at + j] = KVALUES_FP4[q & 0xf]! * d;
        out[at + j + 8] = KVALUES_FP4[q >>> 4]! * d;
      }
    }
  }
  return out;
}
