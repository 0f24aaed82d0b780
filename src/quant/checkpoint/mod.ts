// This module is browser compatible.

/**
 * Quantized Hugging Face checkpoints (DESIGN.md §2.5a, "quantized
 * checkpoint"): the one map from `quantization_config.quant_method` to the
 * module that knows its companion tensors and formula. A checkpoint of a
 * listed method reads as its dequantized F32 tensors (streamed in row bands,
 * the scale/zero/index tensors consumed); any other method is refused before
 * anything is written. A new method is one new file plus one line here.
 *
 * @module
 */

import { ModelFormatError } from "../../errors.ts";
import type { TensorEntry } from "../../tensor.ts";
import { markedBy, type QuantContext, type QuantMethod } from "./_method.ts";
import { AWQ } from "./awq.ts";
import { BITNET } from "./bitnet.ts";
import { COMPRESSED_TENSORS } from "./compressed_tensors.ts";
import { FP8 } from "./fp8.ts";
import { GPTQ } from "./gptq.ts";
import { MODELOPT } from "./modelopt.ts";
import { MXFP4 } from "./mxfp4.ts";

export type { QuantMethod };

/** Every method aprkit dequantizes, by `quant_method`. */
export const QUANT_METHODS: ReadonlyMap<string, QuantMethod> = new Map(
  [AWQ, BITNET, COMPRESSED_TENSORS, FP8, GPTQ, MODELOPT, MXFP4].map((m) => [m.name, m]),
);

/**
 * Tensor name endings only a quantized checkpoint has: seen without a
 * `quantization_config`, they would be written raw.
 */
const QUANTIZED_SUFFIXES = [
  ".qweight",
  ".qzeros",
  "_scale_inv",
  ".weight_packed",
  ".weight_shape",
  ".weight_scale_2",
  ".weight_global_scale",
];

/**
 * Endings of the tensors that carry a quantized weight (its codes, scales,
 * zero points or group index), as opposed to activation and KV-cache
 * scales that a method may drop: one of these left after the config's
 * method has dequantized its groups belongs to another method, and would be
 * written raw in place of the weight it encodes.
 */
const WEIGHT_SUFFIXES = [
  ...QUANTIZED_SUFFIXES,
  ".scales",
  ".g_idx",
  "_blocks",
  "_scales",
  ".weight_scale",
  ".weight_zero_point",
  ".weight_g_idx",
  ".qscale_weight",
];

/**
 * Refuse a checkpoint whose tensors are not its config's method: a tensor
 * another method stores a weight in, left after the config's method took
 * its own (a GPTQ checkpoint whose config says `fp8` kept its `qweight`,
 * `qzeros`, `scales` and `g_idx`, written raw, and had no `q_proj.weight`),
 * or no tensor of the config's method at all.
 *
 * @param method The config's method.
 * @param before The checkpoint's tensors.
 * @param after What the method made of them.
 * @param location The model, for the message.
 */
function checkMethodTensors(
  method: QuantMethod,
  before: readonly TensorEntry[],
  after: readonly TensorEntry[],
  location: string,
): void {
  const said = `quantization_config.quant_method is "${method.name}"`;
  const own = method.companions.filter((s) => WEIGHT_SUFFIXES.includes(s));
  // Only what the method passed through as read: what it made (kept blocks
  // with their scales, for GGUF) is its own.
  const read = new Set(before);
  for (const t of after) {
    if (!read.has(t)) continue;
    const suffix = WEIGHT_SUFFIXES.find((s) => t.info.name.endsWith(s));
    if (suffix === undefined || own.some((s) => t.info.name.endsWith(s))) continue;
    const owners = [...QUANT_METHODS.values()].filter((m) => m.companions.includes(suffix));
    const whose = owners.length === 0
      ? "a quantized checkpoint's"
      : owners.map((m) => m.name).join(" or ") + "'s";
    throw new ModelFormatError(
      "model",
      location,
      `${said}, but tensor "${t.info.name}" is ${whose}: its weight would be written raw`,
    );
  }
  // What the method made (DeepSeek-V4's fp8 `.scale` pairs) was stored as it.
  if (
    !before.some((t) => own.some((s) => t.info.name.endsWith(s))) && after.every((t) => read.has(t))
  ) {
    throw new ModelFormatError(
      "model",
      location,
      `${said}, but no tensor is stored as ${method.name} (no name ends in ${own.join(", ")})`,
    );
  }
}

/**
 * Refuse a lone SafeTensors file holding a quantized checkpoint's tensors:
 * without its folder's `config.json` nothing says how to dequantize them,
 * and writing them raw would make a wrong model.
 *
 * @param tensors The file's tensors (their header entries).
 * @param location The file, for the message.
 * @throws {ModelFormatError} When a tensor name is one only quantized checkpoints have.
 */
export function refuseLoneQuantized(
  tensors: readonly { readonly name: string }[],
  location: string,
): void {
  const raw = tensors.find((t) => QUANTIZED_SUFFIXES.some((s) => t.name.endsWith(s)));
  if (raw !== undefined) {
    throw new ModelFormatError(
      "SafeTensors",
      location,
      `tensor "${raw.name}" is part of a quantized checkpoint; open the model's folder (with its config.json) to read it dequantized`,
    );
  }
}

/** What {@linkcode dequantizeCheckpoint} did. */
export interface DequantizedCheckpoint {
  /** The tensors to read: the dequantized ones in place of their groups. */
  readonly tensors: readonly TensorEntry[];
  /** The `quant_method` dequantized, or `undefined` for a plain checkpoint. */
  readonly method: string | undefined;
  /** The ggml type of the blocks kept as stored, for GGUF output (see {@linkcode QuantMethod.packedForGguf}). */
  readonly kept?: "MXFP4" | "NVFP4";
  /**
   * When dequantized: each tensor the method made (not one passed through
   * as read), by name → the stored tensor that marks its group
   * (`.qweight`…), by which llama.cpp's converter orders the weights it
   * makes under new names.
   */
  readonly made?: ReadonlyMap<string, string>;
}

/**
 * The quantization config of a checkpoint: `config.json`'s
 * `quantization_config` (or the older `compression_config` of
 * compressed-tensors checkpoints), completed from NVIDIA ModelOpt's
 * `hf_quant_config.json` as llama.cpp's converter does (`prepare_tensors`):
 * its `quantization` fields over the config's, and the producer's name
 * (`modelopt`) as the method when the config names none.
 *
 * @param config The parsed `config.json` (any value).
 * @param hfQuantConfig The parsed `hf_quant_config.json`, when the folder has one.
 * @returns The config object, or `undefined` when the model is not quantized.
 */
export function quantizationConfig(
  config: unknown,
  hfQuantConfig?: unknown,
): Record<string, unknown> | undefined {
  let found: Record<string, unknown> | undefined;
  const root = isObject(config) ? config : {};
  for (const key of ["quantization_config", "compression_config"]) {
    const value = root[key];
    if (value !== undefined && value !== null) {
      found = isObject(value) ? value : { quant_method: value };
      break;
    }
  }
  if (!isObject(hfQuantConfig) || (found?.["quant_algo"] && found?.["quantized_layers"])) {
    return found;
  }
  const quantization = isObject(hfQuantConfig["quantization"]) ? hfQuantConfig["quantization"] : {};
  const producer = isObject(hfQuantConfig["producer"]) ? hfQuantConfig["producer"]["name"] : "";
  const out: Record<string, unknown> = { ...found };
  out["quant_method"] ??= typeof producer === "string" ? producer.toLowerCase() : producer;
  for (const key of ["quant_algo", "quant_method", "format", "config_groups", "quantized_layers"]) {
    if (quantization[key] !== undefined) out[key] = quantization[key];
  }
  return out;
}

/**
 * Refuse a checkpoint with quantized tensors whose config says nothing
 * about them (what {@linkcode dequantizeCheckpoint} does for a model without
 * a quantization config), from the tensors' infos alone.
 *
 * @param infos The checkpoint's tensors.
 * @param location The model's path or URL, for messages.
 * @throws {ModelFormatError} When a tensor has a quantized method's suffix.
 */
export function refuseUnlabelledQuantized(
  infos: readonly { readonly name: string }[],
  location: string,
): void {
  const raw = infos.find((t) => QUANTIZED_SUFFIXES.some((s) => t.name.endsWith(s)));
  if (raw !== undefined) {
    throw new ModelFormatError(
      "model",
      location,
      `tensor "${raw.name}" is part of a quantized checkpoint, but config.json has no quantization_config saying how to dequantize it`,
    );
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Replace a checkpoint's quantized tensor groups by their dequantized F32
 * tensors, as its `quantization_config` says.
 *
 * @example Usage
 * ```ts ignore
 * const { tensors } = await dequantizeCheckpoint(reader.tensors, config, "./Qwen3-8B-FP8");
 * ```
 *
 * @param tensors The checkpoint's tensors, in order.
 * @param config The parsed `config.json` (or `undefined` when there is none).
 * @param location The model's path or URL, for messages.
 * @param options `tileBytes`: packed source bytes kept per tile (default 16 MiB);
 * `packedForGguf`: keep the blocks of a method llama.cpp's converter keeps
 * (see {@linkcode QuantMethod.packedForGguf}); `hfQuantConfig`: the folder's
 * `hf_quant_config.json` (ModelOpt), parsed.
 * @returns The tensors to read and the method.
 * @throws {ModelFormatError} For a method not in {@linkcode QUANT_METHODS} (naming
 * it and the supported list), a config or tensor shape the method cannot
 * use, a companion tensor without its weight, or quantized tensors in a
 * checkpoint whose config says nothing about them.
 */
export async function dequantizeCheckpoint(
  tensors: readonly TensorEntry[],
  config: unknown,
  location: string,
  options: {
    readonly tileBytes?: number;
    readonly packedForGguf?: boolean;
    readonly hfQuantConfig?: unknown;
  } = {},
): Promise<DequantizedCheckpoint> {
  const quant = quantizationConfig(config, options.hfQuantConfig);
  if (quant === undefined) {
    refuseUnlabelledQuantized(tensors.map((t) => t.info), location);
    return { tensors, method: undefined };
  }
  const name = quant["quant_method"];
  const method = typeof name === "string" ? QUANT_METHODS.get(name.toLowerCase()) : undefined;
  if (method === undefined) {
    throw new ModelFormatError(
      "model",
      location,
      `quantization_config.quant_method ${
        JSON.stringify(name) ?? "(missing)"
      } is not supported (supported: ${[...QUANT_METHODS.keys()].join(", ")})`,
    );
  }
  const context: QuantContext = {
    config: quant,
    location,
    ...(options.tileBytes !== undefined ? { tileBytes: options.tileBytes } : {}),
  };
  if (options.packedForGguf === true && method.packedForGguf !== undefined) {
    const kept = await method.packedForGguf(tensors, context);
    if (kept !== undefined) {
      checkMethodTensors(method, tensors, kept, location);
      return { tensors: kept, method: method.name, kept: method.keeps! };
    }
  }
  const out = await method.dequantize(tensors, context);
  // What the method left of its companions could only be written raw.
  const left = out.find((t) => method.companions.some((s) => t.info.name.endsWith(s)));
  if (left !== undefined) {
    throw new ModelFormatError(
      "model",
      location,
      `${method.name} checkpoint: tensor "${left.info.name}" belongs to no quantized weight`,
    );
  }
  checkMethodTensors(method, tensors, out, location);
  const read = new Set(tensors);
  const made = new Map<string, string>();
  for (const t of out) {
    const mark = read.has(t) ? undefined : markedBy(t);
    if (mark !== undefined) made.set(t.info.name, mark);
  }
  return { tensors: out, method: method.name, made };
}
