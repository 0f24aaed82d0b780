// This module is browser compatible.

/**
 * `general.file_type` of a GGUF file: llama.cpp's `LLAMA_FTYPE_*`, which
 * names the quantization mix. An export derives it from its tensors as
 * llama.cpp's loader guesses it for files without the key: the ggml type
 * most tensors have (so F32 norms do not count against a BF16 model).
 * A writer that knows the mix it made (a llama-quantize preset such as
 * Q4_K_S) passes that instead.
 *
 * @module
 */

import type { DType } from "../../dtype.ts";
import type { TensorInfo } from "../../tensor.ts";
import { LLAMA_FTYPES } from "../../quant/llama_presets.ts";

/**
 * llama.cpp's ftype for a model whose tensors are mostly of one ggml type: a
 * quantized type's is its preset's (the K-quants' `_M` mix), from
 * {@linkcode LLAMA_FTYPES}.
 */
const FILE_TYPE_OF: Partial<Record<DType, number>> = {
  F32: 0,
  F16: 1,
  Q4_0: LLAMA_FTYPES.Q4_0,
  Q4_1: LLAMA_FTYPES.Q4_1,
  Q8_0: LLAMA_FTYPES.Q8_0,
  Q5_0: LLAMA_FTYPES.Q5_0,
  Q5_1: LLAMA_FTYPES.Q5_1,
  Q2_K: LLAMA_FTYPES.Q2_K,
  Q3_K: LLAMA_FTYPES.Q3_K_M,
  Q4_K: LLAMA_FTYPES.Q4_K_M,
  Q5_K: LLAMA_FTYPES.Q5_K_M,
  Q6_K: LLAMA_FTYPES.Q6_K,
  BF16: 32,
};

/**
 * The `general.file_type` llama.cpp's loader would guess for these tensors.
 *
 * @example Usage
 * ```ts
 * import { guessFileType } from "./file_type.ts";
 * const t = (dtype: "F32" | "BF16") => ({ name: "w", dtype, shape: [2], byteLength: 8 });
 * console.assert(guessFileType([t("BF16"), t("BF16"), t("F32")]) === 32);
 * ```
 *
 * @param tensors The tensors written.
 * @returns The ftype, or `undefined` when the most common type has none (or there are no tensors).
 */
export function guessFileType(tensors: readonly TensorInfo[]): number | undefined {
  const counts = new Map<DType, number>();
  let best: DType | undefined;
  for (const t of tensors) {
    const n = (counts.get(t.dtype) ?? 0) + 1;
    counts.set(t.dtype, n);
    if (best === undefined || n > counts.get(best)!) best = t.dtype;
  }
  return best === undefined ? undefined : FILE_TYPE_OF[best];
}
