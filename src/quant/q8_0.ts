// This module is browser compatible.

/**
 * Q8_0 (FORMATS.md §3): blocks of 32 values in 34 bytes — f16 `d`, then 32
 * signed bytes, value `d * q`. GGUF only (Q8_0 for APR is not supported).
 *
 * The encoder is a port of llama.cpp's `quantize_row_q8_0_ref` (which
 * `llama-quantize` runs with or without an importance matrix: Q8_0 ignores
 * it), in f32 arithmetic, so it produces the same bytes. The decoder is
 * `decodeQ8_0` in `ggml_legacy.ts`.
 *
 * @module
 */

import { f32ToF16 } from "./f16.ts";
import { countBlocks } from "./_count_blocks.ts";

/** Bytes per Q8_0 block. */
export const Q8_0_BLOCK_BYTES = 34;

const fr = Math.fround;

/**
 * Quantize values to Q8_0 blocks (llama.cpp's reference algorithm).
 *
 * @param values A whole number of 32-value blocks.
 * @param out Destination of `values.length / 32 * 34` bytes.
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values.length` is not a multiple of 32.
 *
 * @example Usage
 * ```ts
 * import { encodeQ8_0 } from "./q8_0.ts";
 * import { decodeQ8_0 } from "./ggml_legacy.ts";
 * const values = new Float32Array(64).map((_, i) => Math.sin(i));
 * const back = decodeQ8_0(encodeQ8_0(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.01));
 * ```
 */
export function encodeQ8_0(values: Float32Array, out?: Uint8Array): Uint8Array {
  const nb = countBlocks("Q8_0", values, undefined);
  const y = out ?? new Uint8Array(nb * Q8_0_BLOCK_BYTES);
  for (let i = 0; i < nb; i++) {
    const xo = i * 32;
    const o = i * Q8_0_BLOCK_BYTES;
    let amax = 0;
    for (let j = 0; j < 32; j++) {
      // C's MAX(amax, fabsf(v)) macro, NaN handling included.
      const a = Math.abs(values[xo + j]!);
      amax = amax > a ? amax : a;
    }
    const d = fr(amax / 127);
    const id = d !== 0 ? fr(1 / d) : 0;
    const bits = f32ToF16(d);
    y[o] = bits & 255;
    y[o + 1] = bits >>> 8;
    for (let j = 0; j < 32; j++) {
      y[o + 2 + j] = roundAwayToInt8(fr(values[xo + j]! * id));
    }
  }
  return y;
}

/**
 * C's `roundf` (halves away from zero) stored to an `int8_t`, as two's
 * complement bits. |x| <= 127.5 for finite input; NaN stores 0, as x86's
 * conversion of NaN (0x80000000) truncated to a byte does.
 */
function roundAwayToInt8(x: number): number {
  if (x !== x) return 0;
  const r = x < 0 ? -Math.floor(-x + 0.5) : Math.floor(x + 0.5);
  return r & 255;
}
