// This module is browser compatible.

/**
 * `quant_method: "compressed-tensors"` (llm-compressor / vLLM checkpoints,
 * e.g. RedHatAI's `…-FP8-dynamic`, `…-quantized.w8a8`, `…-quantized.w4a16`),
 * as llama.cpp's `ModelBase.dequant_model` reads them:
 *
 * - `float-quantized`, `int-quantized`, `naive-quantized`: the weight (F8_E4M3
 *   or I8) times a symmetric `weight_scale` per tensor, channel or
 *   `block_structure` block (`dequant_simple`).
 * - `pack-quantized`: `weight_packed` + `weight_scale` (+ `weight_zero_point`)
 *   per `group_size` inputs, `weight_shape` the unpadded shape (`dequant_packed`,
 *   see `_int_packed.ts`).
 *
 * - `nvfp4-pack-quantized` (and `mixed-precision` whose every group is it):
 *   `weight_packed` E2M1 codes, an E4M3 `weight_scale` per 16 values and
 *   `weight_global_scale`, whose reciprocal is the per-tensor factor, as the
 *   converter renames them to ModelOpt's (see `_nvfp4.ts`); kept so for
 *   GGUF output, as the converter keeps them.
 *
 * Activation, KV-cache and input scales are unused and dropped. Several
 * config groups other than NVFP4's (llama.cpp refuses them too) and other
 * formats are refused.
 *
 * @module
 */

import type { TensorEntry } from "../../tensor.ts";
import { packedEntry } from "./_int_packed.ts";
import { keptNvfp4, nvfp4Entry } from "./_nvfp4.ts";
import {
  anchoredWeights,
  blockSizes,
  checkpointError,
  count,
  type QuantContext,
  type QuantMethod,
  type ReplacedGroup,
  replaceGroups,
  shapeText,
} from "./_method.ts";
import { readRange } from "./_read.ts";
import { scaledEntry } from "./_scaled.ts";

/** The formats of a weight times its scale. */
const SCALED = ["float-quantized", "int-quantized", "naive-quantized"];
/** NVFP4's format. */
const NVFP4 = "nvfp4-pack-quantized";
/** Every format dequantized here. */
const FORMATS = [...SCALED, "pack-quantized", NVFP4, "mixed-precision"];
/** The weight strategies of the scaled formats. */
const STRATEGIES = ["tensor", "channel", "block"];
/** Tensors with no use once the weights are dequantized. */
const UNUSED = [
  ".input_scale",
  ".input_zero_point",
  ".input_global_scale",
  ".k_scale",
  ".v_scale",
  ".output_scale",
];

/**
 * Whether the checkpoint's weights are NVFP4, as the converter decides
 * (`nvfp4-pack-quantized`, or `mixed-precision` with every group so).
 *
 * @param config The `quantization_config`.
 * @returns Whether they are.
 */
function compressedNvfp4(config: Readonly<Record<string, unknown>>): boolean {
  const format = config["format"];
  if (format === NVFP4) return true;
  const groups = config["config_groups"];
  const list = groups !== null && typeof groups === "object" ? Object.values(groups) : [];
  return format === "mixed-precision" && list.length > 0 &&
    list.every((g) =>
      g === null || typeof g !== "object" || (g as Record<string, unknown>)["format"] === NVFP4
    );
}

function weightScheme(context: QuantContext, format: string): Record<string, unknown> {
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
  const strategy = scheme["strategy"];
  const supported = format === "pack-quantized" ? ["group"] : STRATEGIES;
  if (typeof strategy !== "string" || !supported.includes(strategy)) {
    throw checkpointError(
      context,
      `${format} weight strategy ${JSON.stringify(strategy)} is not supported (supported: ${
        supported.join(", ")
      })`,
    );
  }
  if (format !== "pack-quantized" && scheme["symmetric"] === false) {
    throw checkpointError(
      context,
      `${format}: asymmetric weights (a zero point) are not supported`,
    );
  }
  return scheme;
}

/** The compressed-tensors method. */
export const COMPRESSED_TENSORS: QuantMethod = {
  name: "compressed-tensors",
  reference:
    "llama.cpp conversion/base.py dequant_simple, dequant_packed; neuralmagic/compressed-tensors",
  keeps: "NVFP4",
  async packedForGguf(tensors, context) {
    if (!compressedNvfp4(context.config)) return undefined;
    const dropped = new Set(
      tensors.map((t) => t.info.name).filter((n) => UNUSED.some((s) => n.endsWith(s))),
    );
    return replaceGroups(tensors, await nvfp4Groups(tensors, context, true), dropped, context);
  },
  companions: [
    ".weight_scale",
    ".weight_zero_point",
    ".weight_packed",
    ".weight_shape",
    ".weight_g_idx",
    ".weight_global_scale",
    ...UNUSED,
  ],
  async dequantize(tensors, context) {
    const format = context.config["format"];
    if (typeof format !== "string" || !FORMATS.includes(format)) {
      throw checkpointError(
        context,
        `format ${JSON.stringify(format) ?? "none"} is not supported (supported: ${
          FORMATS.join(", ")
        })`,
      );
    }
    const dropped = new Set(
      tensors.map((t) => t.info.name).filter((n) => UNUSED.some((s) => n.endsWith(s))),
    );
    if (compressedNvfp4(context.config)) {
      return replaceGroups(tensors, await nvfp4Groups(tensors, context, false), dropped, context);
    }
    if (format === "mixed-precision") {
      throw checkpointError(
        context,
        `format "mixed-precision" is supported only when every config group is "${NVFP4}"`,
      );
    }
    const scheme = weightScheme(context, format);
    const groups = format === "pack-quantized"
      ? await packedGroups(tensors, scheme, context)
      : scaledGroups(tensors, scheme, context);
    return replaceGroups(tensors, groups, dropped, context);
  },
};

/**
 * NVFP4 weights: `weight_packed`, `weight_scale`, `weight_global_scale`;
 * dequantized, or with `keep` kept under ModelOpt's names for GGUF (the
 * global scales inverted, `input_global_scale` as `input_scale`).
 */
async function nvfp4Groups(
  tensors: readonly TensorEntry[],
  context: QuantContext,
  keep: boolean,
): Promise<ReplacedGroup[]> {
  const groups: ReplacedGroup[] = [];
  for (const { base, part, optional } of anchoredWeights(tensors, ".weight_packed", context)) {
    const weight = base + ".weight";
    const factor = { tensor: part(".weight_global_scale"), inverted: true };
    const replaces = ["_packed", "_scale", "_global_scale"].map((s) => weight + s);
    if (keep) {
      const input = optional(".input_global_scale");
      const [entry, ...extra] = await keptNvfp4(
        weight,
        part(".weight_packed"),
        part(".weight_scale"),
        factor,
        input === undefined ? undefined : { tensor: input, inverted: true },
        context,
      );
      groups.push({ entry: entry!, replaces, extra });
      continue;
    }
    groups.push({
      entry: nvfp4Entry(weight, part(".weight_packed"), part(".weight_scale"), factor, context),
      replaces,
    });
  }
  return groups;
}

function scaledGroups(
  tensors: readonly TensorEntry[],
  scheme: Record<string, unknown>,
  context: QuantContext,
): ReplacedGroup[] {
  const blocks = blockSizes(
    context,
    scheme["strategy"] === "block" ? scheme["block_structure"] : undefined,
    "the weights' block_structure",
  );
  if (scheme["strategy"] === "block" && blocks === undefined) {
    throw checkpointError(context, "block strategy without a block_structure");
  }
  const zeroPoint = tensors.find((t) => t.info.name.endsWith(".weight_zero_point"));
  if (zeroPoint !== undefined) {
    throw checkpointError(
      context,
      `tensor "${zeroPoint.info.name}": asymmetric weights (a zero point) are not supported`,
    );
  }
  return anchoredWeights(tensors, ".weight_scale", context).map(({ base, part }) => ({
    entry: scaledEntry(base + ".weight", part(".weight"), part(".weight_scale"), blocks, context),
    replaces: [base + ".weight", base + ".weight_scale"],
  }));
}

async function packedGroups(
  tensors: readonly TensorEntry[],
  scheme: Record<string, unknown>,
  context: QuantContext,
): Promise<ReplacedGroup[]> {
  const bits = scheme["num_bits"];
  const groupSize = scheme["group_size"];
  if (bits !== 2 && bits !== 4 && bits !== 8) {
    throw checkpointError(
      context,
      `pack-quantized num_bits ${JSON.stringify(bits)} is not supported (supported: 2, 4, 8)`,
    );
  }
  if (typeof groupSize !== "number" || !Number.isSafeInteger(groupSize) || groupSize <= 0) {
    throw checkpointError(
      context,
      `pack-quantized group_size must be a positive integer (found ${JSON.stringify(groupSize)})`,
    );
  }
  if ((scheme["type"] ?? "int") !== "int") {
    throw checkpointError(
      context,
      `pack-quantized type ${JSON.stringify(scheme["type"])} is not int`,
    );
  }
  const groups: ReplacedGroup[] = [];
  for (const { base, part, optional } of anchoredWeights(tensors, ".weight_packed", context)) {
    const weight = base + ".weight";
    const shapeTensor = part(".weight_shape");
    const zeroPoint = optional(".weight_zero_point");
    groups.push({
      entry: packedEntry(
        weight,
        {
          packed: part(".weight_packed"),
          scale: part(".weight_scale"),
          zeroPoint,
          shape: await weightShape(shapeTensor, context),
        },
        bits,
        groupSize,
        context,
      ),
      replaces: ["_packed", "_scale", "_shape", ...(zeroPoint ? ["_zero_point"] : [])].map((s) =>
        weight + s
      ),
    });
  }
  return groups;
}

/** `W.weight_shape`: two non-negative integers, read when the model is opened. */
async function weightShape(
  entry: TensorEntry,
  context: QuantContext,
): Promise<[number, number]> {
  const { dtype, shape } = entry.info;
  if ((dtype !== "I64" && dtype !== "I32") || count(shape) !== 2 || shape.length !== 1) {
    throw checkpointError(
      context,
      `"${entry.info.name}" is ${dtype} ${shapeText(shape)}, expected two I64 or I32 values`,
    );
  }
  const bytes = await readRange(entry, 0, entry.info.byteLength);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const dims = [0, 1].map((i) =>
    dtype === "I64" ? Number(view.getBigInt64(i * 8, true)) : view.getInt32(i * 4, true)
  );
  if (!dims.every((d) => Number.isSafeInteger(d) && d >= 0 && d <= 2 ** 31)) {
    throw checkpointError(context, `"${entry.info.name}" holds ${shapeText(dims)}, not a shape`);
  }
  return [dims[0]!, dims[1]!];
}
