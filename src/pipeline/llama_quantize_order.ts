/**
 * Tensors in the order llama-quantize writes them (llama-model-loader's
 * `weight_name_comparer`: whole-model tensors first, then block by block,
 * each by name), so a preset's GGUF is llama-quantize's file, order
 * included. Tensors are held until their turn (`reorder_tensors.ts`): from
 * a converter's order, whose whole-model `output_norm` comes after the
 * blocks, every entry until the source's last tensor.
 *
 * @module
 */

import { compareWeights } from "../quant/llama_presets.ts";
import type { ModelChunk } from "../tensor.ts";
import { reorderTensors } from "./reorder_tensors.ts";

/**
 * The transform. Tensor names are GGUF ones by then (after the family's
 * GGUF layout).
 *
 * @param compare The order of names: llama-quantize's by default; its
 * `--keep-split` keeps the source's.
 * @returns The transform.
 */
export function inLlamaQuantizeOrder(
  compare: (a: string, b: string) => number = compareWeights,
): TransformStream<ModelChunk, ModelChunk> {
  return reorderTensors((tensors) => tensors.map((t) => t.name).sort(compare));
}
