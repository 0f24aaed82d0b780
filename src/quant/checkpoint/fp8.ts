// This module is browser compatible.

/**
 * `quant_method: "fp8"` (transformers' finegrained FP8: DeepSeek-V3/R1,
 * Qwen3-…-FP8, Mistral's `qscale_weight` form): an F8_E4M3 weight times its
 * `weight_scale_inv`, one scale per `weight_block_size` block (unpadded at the
 * edges) or per tensor/channel. As llama.cpp's `ModelBase.dequant_model`
 * (`dequant_simple`); activation scales are unused and dropped. DeepSeek-V4
 * names the block scales `W.scale` (E8M0, `scale_fmt: "ue8m0"`), as its
 * converter class reads them (`DeepseekV4Model.dequant_model`: only beside
 * an FP8 `W.weight`; its MXFP4 experts' `.scale` belong to I8 codes and are
 * left for the family).
 *
 * @module
 */

import type { TensorEntry } from "../../tensor.ts";
import { blockSizes, companion, type QuantMethod, replaceGroups } from "./_method.ts";
import { scaledEntry } from "./_scaled.ts";

/** The weight dtypes a DeepSeek-V4 `.scale` dequantizes. */
const FP8_DTYPES: ReadonlySet<string> = new Set(["F8_E4M3", "F8_E5M2"]);

/** The fp8 method. */
export const FP8: QuantMethod = {
  name: "fp8",
  reference: "llama.cpp conversion/base.py dequant_simple; transformers finegrained_fp8",
  companions: ["_scale_inv", ".qscale_weight", ".activation_scale", ".qscale_act"],
  dequantize(tensors, context) {
    const blocks = blockSizes(
      context,
      context.config["weight_block_size"],
      "quantization_config.weight_block_size",
    );
    const byName = new Map(tensors.map((t) => [t.info.name, t]));
    const groups: { entry: TensorEntry; replaces: string[] }[] = [];
    const dropped = new Set<string>();
    for (const { info: { name } } of tensors) {
      let weightName: string | undefined;
      if (name.endsWith("_scale_inv")) weightName = name.slice(0, -"_scale_inv".length);
      else if (name.endsWith(".scale")) {
        const weight = byName.get(name.slice(0, -"scale".length) + "weight");
        if (weight !== undefined && FP8_DTYPES.has(weight.info.dtype)) {
          weightName = weight.info.name;
        }
      } else if (name.endsWith(".qscale_weight")) {
        weightName = name.slice(0, -"qscale_weight".length) + "weight";
      } else if (
        name.endsWith(".activation_scale") || name.endsWith("_activation_scale") ||
        name.endsWith(".qscale_act")
      ) {
        dropped.add(name);
      }
      if (weightName === undefined) continue;
      const weight = companion(byName, weightName, context, name);
      groups.push({
        entry: scaledEntry(weightName, weight, byName.get(name)!, blocks, context),
        replaces: [weightName, name],
      });
    }
    return replaceGroups(tensors, groups, dropped, context);
  },
};
