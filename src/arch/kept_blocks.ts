// This module is browser compatible.

/**
 * NVFP4 weights a quantized checkpoint keeps for GGUF (ModelOpt's and
 * compressed-tensors' NVFP4, served as stored under ModelOpt's names by
 * `quant/checkpoint/`), made as llama.cpp's converter makes them in any
 * family (`ModelBase._generate_nvfp4_tensors`): each `….weight` (U8 codes)
 * with its `….weight_scale` repacked to one ggml NVFP4 tensor under the
 * weight's GGUF name, followed by its `.scale` (`weight_scale_2`) and
 * `.input_scale`, all before every other tensor. The same mechanism as a
 * family's own made tensors (gpt-oss's MXFP4 experts).
 *
 * @module
 */

import { tensorByteLength } from "../dtype.ts";
import type { TensorInfo } from "../tensor.ts";
import type { Family, MadeTensor } from "./family.ts";
import { hfToGgufName } from "./names.ts";
import { FAMILIES } from "./registry.ts";
import { repackNvfp4 } from "./transforms.ts";

/**
 * The NVFP4 tensors made from the kept weights among `tensors` (none for a
 * checkpoint without any).
 *
 * @param tensors The model's tensors.
 * @param family The model's family, for the GGUF names.
 * @returns The made tensors, in the model's order.
 * @throws {RangeError} For NVFP4 experts (the converter stacks them; aprkit does not yet)
 * or a weight without a GGUF name.
 */
export function keptNvfp4Tensors(
  tensors: readonly TensorInfo[],
  family: Family,
): MadeTensor[] {
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const made: MadeTensor[] = [];
  for (const weight of tensors) {
    const scale = byName.get(weight.name + "_scale");
    if (
      !weight.name.endsWith(".weight") || weight.dtype !== "U8" || scale === undefined ||
      scale.dtype !== "F8_E4M3" || scale.shape.length !== 2
    ) continue;
    const name = hfToGgufName(weight.name, family);
    const expert = /\.experts\.\d+\./.test(weight.name);
    if (family.gguf?.nvfp4Scales !== true) {
      throw new RangeError(
        `Cannot convert NVFP4 weight "${weight.name}" to GGUF: llama.cpp's ` +
          `${family.ggufArchitecture} graph does not multiply in NVFP4's per-tensor scale ` +
          `(.scale), so the converter's file of it computes wrong values; NVFP4 GGUF is ` +
          `supported for ${nvfp4Families()}; APR and SafeTensors outputs dequantize it`,
      );
    }
    if (expert || name === weight.name) {
      throw new RangeError(
        `Cannot convert NVFP4 weight "${weight.name}" to GGUF: ${
          expert
            ? "NVFP4 experts are not supported yet (llama.cpp's converter stacks them)"
            : `the ${family.name} family has no GGUF name for it`
        }`,
      );
    }
    const [rows, cols] = [weight.shape[0]!, weight.shape[1]! * 2];
    const shape = [rows, cols];
    made.push({
      info: { name, dtype: "NVFP4", shape, byteLength: tensorByteLength("NVFP4", shape) },
      needs: [weight.name, scale.name],
      first: true,
      open: ([codes, scales]) => repackNvfp4(codes!.open(), scales!.open(), { rows, cols }),
    });
    const base = weight.name.slice(0, -".weight".length);
    for (
      const [source, suffix] of [[`${weight.name}_scale_2`, ".scale"], [
        `${base}.input_scale`,
        ".input_scale",
      ]]
    ) {
      const info = byName.get(source!);
      if (info === undefined) continue;
      const out = { ...info, name: name.slice(0, -".weight".length) + suffix };
      made.push({ info: out, needs: [info.name], first: true, open: ([s]) => s!.open() });
    }
  }
  return made;
}

/** The families whose llama.cpp graph applies NVFP4's `.scale`, for the message. */
function nvfp4Families(): string {
  return [...FAMILIES.values()].filter((f) => f.gguf?.nvfp4Scales === true).map((f) => f.name)
    .join(", ");
}
