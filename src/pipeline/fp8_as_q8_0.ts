/**
 * A checkpoint's FP8 matrices under a family whose converter class writes
 * them as Q8_0 whatever its `--outtype` (DeepSeek-V4: `dequant_model`
 * multiplies each E4M3 weight by its E8M0 block scales, and
 * `tensor_force_quant` makes every such matrix Q8_0): the types forced, and
 * the refusal of the targets llama.cpp has no such file for.
 *
 * @module
 */

import type { DType } from "../dtype.ts";
import { UsageError } from "../errors.ts";
import { familyOf } from "../arch/registry.ts";
import { hfToGgufName } from "../formats/gguf/names.ts";
import { presetOf, type QuantizeTarget } from "../quant/plan_quantization.ts";
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

/**
 * Refuse a target llama-quantize has no file of for such a model before the
 * output exists: given the converter's file, it refuses to requantize the
 * Q8_0 matrices ("requantizing from type q8_0 is disabled") unless told to
 * (`--allow-requantize`) or their type stays Q8_0 (`q8_0`; `mxfp4_moe` makes
 * them Q8_0, checked tensor by tensor when planned). aprkit's single types
 * (`q4_k`) quantize without that rule, so they are refused too.
 *
 * @param model The open model.
 * @param forced What {@linkcode forcedQ8_0} returned.
 * @param options The target and llama-quantize's `--allow-requantize`.
 * @throws {UsageError} For a target llama-quantize refuses.
 */
export function refuseForcedUnder(
  model: Model,
  forced: ReadonlyMap<string, DType> | undefined,
  options: { readonly quantize: QuantizeTarget; readonly allowRequantize: boolean },
): void {
  const to = options.quantize;
  if (forced === undefined || to === "none" || to === "f16" || to === "bf16") return;
  const preset = presetOf(to, true);
  if (preset === "Q8_0" || preset === "MXFP4_MOE") return;
  if (preset !== undefined && options.allowRequantize) return;
  throw new UsageError(
    `Cannot convert "${model.location}" to gguf with quantize "${to}": llama.cpp's converter ` +
      `writes its ${forced.size} FP8 matrices as Q8_0 whatever the outtype, which llama-quantize ` +
      'refuses to requantize ("requantizing from type q8_0 is disabled")' +
      (preset === undefined
        ? ""
        : "; --allow-requantize quantizes them again, as llama-quantize --allow-requantize does"),
  );
}
