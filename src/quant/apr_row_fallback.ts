// This module is browser compatible.

/**
 * What an APR file gets for a Q4_K or Q6_K tensor whose rows are not whole
 * 256-value super-blocks (rows of 128, 192, 320 values…).
 *
 * There is no K-quant layout every APR reader decodes the same way for such
 * rows: realizar's transformer loader decodes each row as its own padded
 * super-blocks, while aprender's `get_tensor_as_f32` and realizar's
 * `get_tensor_f32` decode the payload as one flat run of super-blocks
 * (docs/INTEROP.md). So, as llama-quantize gives such rows another type
 * (Q5_0, Q8_0, F16), aprkit gives them one that every APR reader decodes
 * alike: APR_Q8 by default (8 bits a value, error below the K-quant's on the
 * measured models, docs/QUANTIZATION.md), F16 on request, or the row-padded
 * K-quant on request (realizar's transformer loader only).
 *
 * @module
 */

import type { DType } from "../dtype.ts";

/**
 * The type of K-quant tensors whose rows are not whole super-blocks, in APR
 * output: `"q8"` (APR_Q8), `"f16"` (F16), or `"padded"` (the K-quant with
 * each row padded to whole super-blocks, which only realizar's transformer
 * loader decodes right).
 */
export type RowFallback = "q8" | "f16" | "padded";

/** Every {@linkcode RowFallback}, for argument parsing and help. */
export const ROW_FALLBACKS: readonly RowFallback[] = ["q8", "f16", "padded"];

/** Values per K-quant super-block. */
const SUPER_BLOCK = 256;

const FALLBACK_TYPE: Readonly<Record<RowFallback, DType | undefined>> = {
  q8: "APR_Q8",
  f16: "F16",
  padded: undefined,
};

/**
 * The APR type of a tensor meant to be `type` whose rows hold `cols` values.
 * Never throws.
 *
 * @example Usage
 * ```ts
 * import { aprRowType } from "./apr_row_fallback.ts";
 * console.assert(aprRowType("Q4_K", 512) === "Q4_K");
 * console.assert(aprRowType("Q4_K", 128) === "APR_Q8");
 * console.assert(aprRowType("Q6_K", 128, "f16") === "F16");
 * console.assert(aprRowType("Q6_K", 128, "padded") === "Q6_K");
 * ```
 *
 * @param type The type the quantizer chose.
 * @param cols Values per row (the last dimension).
 * @param mode What rows that are not whole super-blocks get.
 * @returns `type` itself unless it is Q4_K/Q6_K with rows that are not
 * whole super-blocks; then the fallback.
 */
export function aprRowType(type: DType, cols: number, mode: RowFallback = "q8"): DType {
  if ((type !== "Q4_K" && type !== "Q6_K") || cols % SUPER_BLOCK === 0) return type;
  return FALLBACK_TYPE[mode] ?? type;
}
