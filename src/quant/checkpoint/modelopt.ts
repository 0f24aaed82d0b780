// This module is browser compatible.

/**
 * `quant_method: "modelopt"` (NVIDIA ModelOpt's unified Hugging Face export:
 * `nvidia/…-FP8`, `nvidia/…-FP4`; the method and `quant_algo` come from
 * `config.json`'s `quantization_config` or from `hf_quant_config.json`, see
 * `mod.ts`), as llama.cpp's converter reads it:
 *
 * - FP8 (`quant_algo` FP8, FP8_PER_CHANNEL_PER_TOKEN): an F8_E4M3 weight times
 *   its per-tensor or per-channel `weight_scale` (`dequant_simple`).
 * - NVFP4 (`quant_algo` NVFP4, W4A16_NVFP4): U8 E2M1 codes with a 2-D E4M3
 *   `weight_scale` and the per-tensor `weight_scale_2` (see `_nvfp4.ts`).
 * - MIXED_PRECISION: per layer, either of the above (`quantized_layers`).
 *
 * A tensor's `weight_scale` rank decides which (2-D: NVFP4), as the
 * converter's `_generate_nvfp4_tensors` does. For GGUF output the NVFP4
 * weights are kept (with their `weight_scale_2` and `input_scale`), as the
 * converter keeps them; the FP8 ones are dequantized. `input_scale`, `k_scale` and
 * `v_scale` (activation and KV-cache scales) are unused and dropped. Other
 * algorithms (block FP8, the AWQ variants with `pre_quant_scale`, INT4, MXFP8)
 * are refused.
 *
 * @module
 */

import type { TensorEntry } from "../../tensor.ts";
import { isNvfp4Scale, keptNvfp4, nvfp4Entry } from "./_nvfp4.ts";
import {
  anchoredWeights,
  checkpointError,
  type QuantContext,
  type QuantMethod,
  type ReplacedGroup,
  replaceGroups,
} from "./_method.ts";
import { scaledEntry } from "./_scaled.ts";

/** The `quant_algo` values dequantized here. */
const MODELOPT_ALGOS = ["FP8", "FP8_PER_CHANNEL_PER_TOKEN", "NVFP4", "W4A16_NVFP4"];
/** Tensors with no use once the weights are dequantized. */
const UNUSED = [".input_scale", ".k_scale", ".v_scale"];

/** Whether the config says the checkpoint holds NVFP4 weights (the converter's `_is_nvfp4`). */
function modeloptNvfp4(config: Readonly<Record<string, unknown>>): boolean {
  return algorithms(config).some((a) => a.endsWith("NVFP4"));
}

/** The checkpoint's algorithms: `quant_algo`, or each layer's under MIXED_PRECISION. */
function algorithms(config: Readonly<Record<string, unknown>>): string[] {
  const algo = config["quant_algo"];
  const layers = config["quantized_layers"];
  if (algo === "MIXED_PRECISION" && layers !== null && typeof layers === "object") {
    return Object.values(layers).map((l) =>
      String((l as Record<string, unknown> | null)?.["quant_algo"])
    );
  }
  return [String(algo)];
}

function checkAlgorithms(context: QuantContext): void {
  const bad = algorithms(context.config).find((a) => !MODELOPT_ALGOS.includes(a));
  if (bad !== undefined) {
    throw checkpointError(
      context,
      `quant_algo "${bad}" is not supported (supported: ${
        [...MODELOPT_ALGOS, "MIXED_PRECISION of these"].join(", ")
      })`,
    );
  }
}

/** The ModelOpt method. */
export const MODELOPT: QuantMethod = {
  name: "modelopt",
  reference: "llama.cpp conversion/base.py dequant_model (modelopt), _nvfp4_pack; NVIDIA ModelOpt",
  companions: [".weight_scale", ".weight_scale_2", ...UNUSED],
  keeps: "NVFP4",
  dequantize: (tensors, context) => modeloptTensors(tensors, context, false),
  packedForGguf: (tensors, context) =>
    modeloptNvfp4(context.config) ? modeloptTensors(tensors, context, true) : undefined,
};

/**
 * The checkpoint's tensors with every quantized group dequantized, or, with
 * `keep`, its NVFP4 groups kept for GGUF.
 */
async function modeloptTensors(
  tensors: readonly TensorEntry[],
  context: QuantContext,
  keep: boolean,
): Promise<TensorEntry[]> {
  checkAlgorithms(context);
  const groups: ReplacedGroup[] = [];
  const dropped = new Set(
    tensors.map((t) => t.info.name).filter((n) => UNUSED.some((s) => n.endsWith(s))),
  );
  for (const { name, base, part, optional } of anchoredWeights(tensors, ".weight_scale", context)) {
    const weightName = base + ".weight";
    const weight = part(".weight");
    const scale = part(".weight_scale");
    const factor = optional(".weight_scale_2");
    if (isNvfp4Scale(scale)) {
      if (!modeloptNvfp4(context.config)) {
        throw checkpointError(
          context,
          `"${name}" is a 2-D (NVFP4) scale, but quant_algo ${
            JSON.stringify(context.config["quant_algo"])
          } names no NVFP4 weights`,
        );
      }
      const f = factor === undefined ? { value: 1 } : { tensor: factor, inverted: false };
      const replaces = [weightName, name, ...(factor === undefined ? [] : [factor.info.name])];
      if (keep) {
        const input = optional(".input_scale");
        const [entry, ...extra] = await keptNvfp4(
          weightName,
          weight,
          scale,
          f,
          input === undefined ? undefined : { tensor: input, inverted: false },
          context,
        );
        groups.push({ entry: entry!, replaces, extra });
        continue;
      }
      groups.push({ entry: nvfp4Entry(weightName, weight, scale, f, context), replaces });
      continue;
    }
    if (factor !== undefined) {
      throw checkpointError(
        context,
        `"${factor.info.name}" belongs to an NVFP4 weight, but "${name}" ${
          JSON.stringify(scale.info.shape)
        } is a per-tensor or per-channel FP8 scale`,
      );
    }
    if (weight.info.dtype !== "F8_E4M3") {
      throw checkpointError(
        context,
        `weight "${weightName}" is ${weight.info.dtype}; a per-tensor or per-channel weight_scale applies to F8_E4M3`,
      );
    }
    groups.push({
      entry: scaledEntry(weightName, weight, scale, undefined, context),
      replaces: [weightName, name],
    });
  }
  return replaceGroups(tensors, groups, dropped, context);
}
