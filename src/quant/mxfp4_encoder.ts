// This module is browser compatible.

/**
 * The MXFP4 encoder (32 E2M1 values and one E8M0 exponent per block, 17
 * bytes): a port of llama.cpp's `quantize_row_mxfp4_ref` (ggml-quants.c),
 * which llama-quantize runs for the expert tensors of its MXFP4_MOE file type
 * (importance weights are ignored). The decoder is in `fp4_blocks.ts`.
 *
 * @module
 */

import { KVALUES_FP4 } from "./_ggml_grids.ts";
import { countBlocks } from "./_count_blocks.ts";

const fr = Math.fround;

/** `best_index_mxfp4`: the first of the 16 doubled E2M1 values nearest `x / e`. */
function bestIndex(x: number, e: number): number {
  let best = 0;
  let bestErr = Math.abs(fr(fr(KVALUES_FP4[0]! * e) - x));
  for (let i = 1; i < 16; i++) {
    const err = Math.abs(fr(fr(KVALUES_FP4[i]! * e) - x));
    if (err < bestErr) {
      best = i;
      bestErr = err;
    }
  }
  return best;
}

/**
 * Quantize values to MXFP4 blocks.
 *
 * @param values A whole number of 32-value blocks.
 * @param out Destination of `values.length / 32 * 17` bytes.
 * @returns `out`, or a new array.
 * @throws {RangeError} When `values.length` is not a multiple of 32.
 *
 * @example Usage
 * ```ts
 * import { encodeMxfp4 } from "./mxfp4_encoder.ts";
 * import { decodeMxfp4 } from "./fp4_blocks.ts";
 * const values = new Float32Array(32).map((_, i) => [0, 0.5, 1, 1.5, 2, 3, 4, 6][i % 8]!);
 * console.assert(decodeMxfp4(encodeMxfp4(values)).every((v, i) => v === values[i]));
 * ```
 */
export function encodeMxfp4(values: Float32Array, out?: Uint8Array): Uint8Array {
  const nb = countBlocks("MXFP4", values, undefined);
  const y = out ?? new Uint8Array(nb * 17);
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * 17;
    let amax = 0;
    for (let j = 0; j < 32; j++) {
      const a = Math.abs(values[xo + j]!);
      if (amax < a) amax = a;
    }
    // (uint8_t)(floorf(log2f(amax)) - 2 + 127); log2f rounds to f32 first.
    const e = amax > 0 ? Math.trunc(Math.floor(fr(Math.log2(amax))) + 125) & 255 : 0;
    // ggml_e8m0_to_fp32_half: 2^(e - 128).
    const d = 2 ** (e - 128);
    y[o] = e;
    for (let j = 0; j < 16; j++) {
      y[o + 1 + j] = bestIndex(values[xo + j]!, d) | (bestIndex(values[xo + 16 + j]!, d) << 4);
    }
  }
  return y;
}
