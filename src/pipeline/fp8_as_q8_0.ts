/**
 * A checkpoint's FP8 matrices under a family whose converter class writes
 * them as Q8_0 whatever its `--outtype` (DeepSeek-V4: `dequant_model`
 * multiplies each E4M3 weight by its E8M0 block scales, and
 * `tensor_force_quant` makes every such matrix Q8_0): the types forced
 * (what becomes of them under each target: kept_block_targets.ts).
 *
 * @module
 */

import type { DType } from "../dtype.ts";
import { familyOf } from "../arch/registry.ts";
import { hfToGgufName } from "../formats/gguf/names.ts";
import type { Model } from "./model.ts";

/**
 * The GGUF names of the matrices the converter forces to Q8_0, or
 * `undefined` when there are none. Never throws.
 *
 * @param model The open model.
 * @param ggufNames Whether the output is a GGUF under llama.cpp's names.
 * @returns GGUF name → `"Q8_0"`.
 */
export function forcedQ8_0(model: Model, ggufNames: boolean): Map<string, DType> | undefined {
  const family = familyOf(model.header.metadata.architecture);
  const reader = model.reader as { quantMethod?: unknown; quantDequantized?: unknown };
  if (
    !ggufNames || family?.gguf?.fp8AsQ8_0 !== true || reader.quantMethod !== "fp8" ||
    !Array.isArray(reader.quantDequantized)
  ) {
    return undefined;
  }
  const made = new Set(reader.quantDequantized as string[]);
  const forced = new Map<string, DType>();
  for (const info of model.header.tensors) {
    if (made.has(info.name) && info.shape.length >= 2) {
      forced.set(hfToGgufName(info.name, family), "Q8_0");
    }
  }
  return forced.size === 0 ? undefined : forced;
}
