// This module is browser compatible.

/**
 * Which type each tensor takes in a GGUF export, as llama.cpp needs it:
 *
 * - 1-D tensors (norms, biases) and `*_norm.weight` are F32, as llama.cpp's
 *   converter writes them: ggml-cpu's norm and add kernels assert an F32
 *   operand, so a BF16 norm aborts llama.cpp. So are the float tensors the
 *   converter writes F32 under every `--outtype` (Mamba's and LFM2's
 *   convolutions, whose `ggml_ssm_conv` asserts F32 too; MoE routers, …)
 *   when a model is kept as stored, so a BF16 checkpoint never gives a file
 *   llama.cpp aborts on (a type asked for is planned as the converter plans
 *   it, DBRX's BF16 router included).
 * - ggml block types whose rows are not whole blocks (a Q4_K matrix with
 *   rows of 128 values, padded per row as realizar decodes it) cannot exist
 *   in GGUF (ggml requires `ne[0]` to be a multiple of the block size): they
 *   get llama-quantize's fallback type (Q4_K → Q5_0, Q5_K → Q5_1, Q6_K →
 *   Q8_0; F16 when the rows are not whole 32-value blocks either).
 * - Types GGUF has no id for (APR_Q8, APR_Q4) become F32, their exact values.
 * - Everything else keeps its type and bytes.
 *
 * @module
 */

import { DTYPES } from "../../dtype.ts";
import type { TensorInfo } from "../../tensor.ts";
import { keptInFloat32ByConverter, rowFallbackType } from "../../quant/llama_presets.ts";

/** What a tensor becomes in GGUF: its own type, or decoded and written as another. */
export type GgufStorage = "keep" | "F32" | "F16" | "Q5_0" | "Q5_1" | "Q8_0";

/**
 * Whether a tensor of a ggml block type has rows that are not whole blocks.
 *
 * @param info The tensor.
 * @returns `true` for a row-padded block tensor.
 */
export function hasPaddedRows(info: TensorInfo): boolean {
  const spec = DTYPES[info.dtype];
  if (spec.layout !== "row_blocks") return false;
  const cols = info.shape.length === 0 ? 1 : info.shape[info.shape.length - 1]!;
  return cols % spec.blockElements !== 0;
}

/**
 * The type a tensor takes in a GGUF export (see the module doc).
 *
 * @example Usage
 * ```ts
 * import { ggufStorage } from "./tensor_storage.ts";
 * const norm = { name: "model.norm.weight", dtype: "BF16" as const, shape: [64], byteLength: 128 };
 * console.assert(ggufStorage(norm) === "F32");
 * ```
 *
 * @param info The tensor as it reaches the GGUF writer.
 * @param options `asStored`: no type was asked for (`--quantize` absent or `none`).
 * @returns `"keep"`, or the float type to decode it to.
 */
export function ggufStorage(info: TensorInfo, options: { asStored?: boolean } = {}): GgufStorage {
  const spec = DTYPES[info.dtype];
  if (spec.ggufType === undefined) return "F32";
  if (hasPaddedRows(info)) {
    const cols = info.shape.length === 0 ? 1 : info.shape[info.shape.length - 1]!;
    return rowFallbackType(info.dtype, cols) as GgufStorage;
  }
  const isNorm = /(_norm|layernorm)\.weight$/.test(info.name);
  if (spec.isFloat && info.dtype !== "F32" && (info.shape.length <= 1 || isNorm)) return "F32";
  // Kept as stored (no type asked for, which plans these itself): half-precision
  // tensors the converter's list writes F32 whatever the outtype, and names
  // without a .weight (or LoRA) suffix (Mamba-2's ssm_d), its own test too.
  // Block types (a GGUF's own choice, copied verbatim GGUF to GGUF) are left alone.
  const unsuffixed = !/\.(weight|lora_a|lora_b)$/.test(info.name);
  if (
    options.asStored === true && spec.layout === "elements" && spec.isFloat &&
    info.dtype !== "F32" && (unsuffixed || keptInFloat32ByConverter(info.name))
  ) return "F32";
  return "keep";
}
