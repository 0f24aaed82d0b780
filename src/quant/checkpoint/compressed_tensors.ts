// This module is browser compatible.

/**
 * `quant_method: "compressed-tensors"` (llm-compressor / vLLM checkpoints,
 * e.g. RedHatAI's `…-FP8-dynamic`, `…-quantized.w8a8`): formats
 * `float-quantized`, `int-quantized` and `naive-quantized` store the weight
 * (F8_E4M3 or I8) and a symmetric `weight_scale` per tensor, channel or
 * `block_structure` block, dequantized as llama.cpp's `dequant_simple`.
 * Activation, KV-cache and input scales are unused and dropped. Other
 * formats (`pack-quantized`, `nvfp4-pack-quantized`…), several config groups,
 * `group` strategy and asymmetric zero points are refused.
 *
 * @module
 */

import type { TensorEntry } from "../../tensor.ts";
import {
  blockSizes,
  checkpointError,
  companion,
  type QuantContext,
  type QuantMethod,
  replaceGroups,
} from "./_method.ts";
import { scaledEntry } from "./_scaled.ts";

/** The formats dequantized here. */
const FORMATS = ["float-quantized", "int-quantized", "naive-quantized"];
/** The weight strategies dequantized here. */
const STRATEGIES = ["tensor", "channel", "block"];

function weightScheme(context: QuantContext): Record<string, unknown> {
  const format = context.config["format"];
  if (typeof format !== "string" || !FORMATS.includes(format)) {
    throw checkpointError(
      context,
      `format ${JSON.stringify(format) ?? "none"} is not supported (supported: ${
        FORMATS.join(", ")
      })`,
    );
  }
  const groups = context.config["config_groups"];
  const list = groups !== null && typeof groups === "object" ? Object.values(groups) : [];
  if (list.length !== 1) {
    throw checkpointError(
      context,
      `quantization_config.config_groups must hold exactly one group (found ${list.length})`,
    );
  }
  const weights = (list[0] as Record<string, unknown> | null)?.["weights"];
  if (weights === null || typeof weights !== "object") {
    throw checkpointError(context, "quantization_config.config_groups has no weights scheme");
  }
  const scheme = weights as Record<string, unknown>;
  if (typeof scheme["strategy"] !== "string" || !STRATEGIES.includes(scheme["strategy"])) {
    throw checkpointError(
      context,
      `weight strategy ${JSON.stringify(scheme["strategy"])} is not supported (supported: ${
        STRATEGIES.join(", ")
      })`,
    );
  }
  if (scheme["symmetric"] === false) {
    throw checkpointError(context, "asymmetric weights (a zero point) are not supported");
  }
  return scheme;
}

/** The compressed-tensors method. */
export const COMPRESSED_TENSORS: QuantMethod = {
  name: "compressed-tensors",
  reference: "llama.cpp conversion/base.py dequant_simple; neuralmagic/compressed-tensors",
  companions: [".weight_scale", ".weight_zero_point", ".input_scale", ".k_scale", ".v_scale"],
  dequantize(tensors, context) {
    const scheme = weightScheme(context);
    const blocks = blockSizes(
      context,
      scheme["strategy"] === "block" ? scheme["block_structure"] : undefined,
      "the weights' block_structure",
    );
    if (scheme["strategy"] === "block" && blocks === undefined) {
      throw checkpointError(context, "block strategy without a block_structure");
    }
    const byName = new Map(tensors.map((t) => [t.info.name, t]));
    const groups: { entry: TensorEntry; replaces: string[] }[] = [];
    const dropped = new Set<string>();
    for (const { info: { name } } of tensors) {
      if (name.endsWith(".weight_zero_point")) {
        throw checkpointError(
          context,
          `tensor "${name}": asymmetric weights (a zero point) are not supported`,
        );
      }
      if ([".input_scale", ".k_scale", ".v_scale"].some((s) => name.endsWith(s))) {
        dropped.add(name);
      }
      if (!name.endsWith(".weight_scale")) continue;
      const weightName = name.slice(0, -"_scale".length);
      const weight = companion(byName, weightName, context, name);
      groups.push({
        entry: scaledEntry(weightName, weight, byName.get(name)!, blocks, context),
        replaces: [weightName, name],
      });
    }
    return replaceGroups(tensors, groups, dropped, context);
  },
};
