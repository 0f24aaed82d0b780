// This module is browser compatible.

/**
 * Q4_0 and Q4_1 encoders (FORMATS.md §3): blocks of 32 values — f16 `d`
 * (Q4_1: and f16 `m`), 16 bytes of nibbles (value j low, value j + 16 high).
 * Q4_0 is `d * (q - 8)`, Q4_1 `d * q + m`. GGUF only: llama-quantize's
 * Q4_0/Q4_1 file types, and Q4_0 is its fallback for Q2_K/Q3_K/TQ* rows that
 * are not whole 256-value super-blocks.
 *
 * Ports of llama.cpp's `quantize_row_q4_{0,1}_ref` and, with an importance
 * matrix, `quantize_row_q4_{0,1}_impl` (ggml-quants.c), in f32 arithmetic, so
 * they produce the same bytes. The decoders are in `ggml_legacy.ts`.
 *
 * @module
 */

import { encodeLegacyBlocks, type LegacyBlockType } from "./_legacy_blocks.ts";

/** Bytes per Q4_0 block. */
export const Q4_0_BLOCK_BYTES = 18;
/** Bytes per Q4_1 block. */
export const Q4_1_BLOCK_BYTES = 20;

const Q4_0: LegacyBlockType = {
  dtype: "Q4_0",
  blockBytes: Q4_0_BLOCK_BYTES,
  half: 8,
  withMin: false,
  clampedInt8: true,
  pack: (l, y, o) => packNibbles(l, y, o),
};
const Q4_1: LegacyBlockType = {
  ...Q4_0,
  dtype: "Q4_1",
  blockBytes: Q4_1_BLOCK_BYTES,
  withMin: true,
};

/**
 * Quantize values to Q4_0 blocks (llama.cpp's algorithm).
 *
 * @param values A whole number of 32-value blocks; with `importance`, a whole
 * number of rows of `importance.length` values.
 * @param out Destination of `values.length / 32 * 18` bytes.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values.length` is not a multiple of 32 (or of the row).
 *
 * @example Usage
 * ```ts
 * import { encodeQ4_0 } from "./q4_0.ts";
 * import { decodeQ4_0 } from "./ggml_legacy.ts";
 * const values = new Float32Array(64).map((_, i) => Math.sin(i));
 * const back = decodeQ4_0(encodeQ4_0(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.1));
 * ```
 */
export function encodeQ4_0(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  return encodeLegacyBlocks(Q4_0, values, out, importance);
}

/**
 * Quantize values to Q4_1 blocks (llama.cpp's algorithm).
 *
 * @param values A whole number of 32-value blocks; with `importance`, a whole
 * number of rows of `importance.length` values.
 * @param out Destination of `values.length / 32 * 20` bytes.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values.length` is not a multiple of 32 (or of the row).
 *
 * @example Usage
 * ```ts
 * import { encodeQ4_1 } from "./q4_0.ts";
 * import { decodeQ4_1 } from "./ggml_legacy.ts";
 * const values = new Float32Array(64).map((_, i) => Math.sin(i));
 * const back = decodeQ4_1(encodeQ4_1(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.1));
 * ```
 */
export function encodeQ4_1(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  return encodeLegacyBlocks(Q4_1, values, out, importance);
}

/** Value j's level in the low nibble of byte j, value j + 16's in the high one (unmasked, as C). */
function packNibbles(levels: Uint8Array, y: Uint8Array, o: number): void {
  for (let j = 0; j < 16; j++) y[o + j] = (levels[j]! | (levels[j + 16]! << 4)) & 255;
}
