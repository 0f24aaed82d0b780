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

import { encodeLegacyBlocks, type LegacyBlockType } from "./_legacy_blocks.ts";

/** Bytes per Q5_0 block. */
export const Q5_0_BLOCK_BYTES = 22;
/** Bytes per Q5_1 block. */
export const Q5_1_BLOCK_BYTES = 24;

const Q5_0: LegacyBlockType = {
  dtype: "Q5_0",
  blockBytes: Q5_0_BLOCK_BYTES,
  half: 16,
  withMin: false,
  clampedInt8: true,
  pack: (l, y, o) => packFiveBits(l, y, o),
};
// Q5_1's reference stores (uint8_t)(v) unclamped.
const Q5_1: LegacyBlockType = {
  ...Q5_0,
  dtype: "Q5_1",
  blockBytes: Q5_1_BLOCK_BYTES,
  withMin: true,
  clampedInt8: false,
};

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
  return encodeLegacyBlocks(Q5_0, values, out, importance);
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
  return encodeLegacyBlocks(Q5_1, values, out, importance);
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
