/**
 * Tensors in the order llama-quantize writes them (llama-model-loader's
 * `weight_name_comparer`: whole-model tensors first, then block by block,
 * each by name), so a preset's GGUF is llama-quantize's file, order
 * included. The entries (not their payloads) are held until the source's
 * last tensor, then emitted sorted; each payload is opened when the sink
 * reads it.
 *
 * @module
 */

import { compareWeights } from "../quant/llama_presets.ts";
import type { ModelChunk, TensorEntry } from "../tensor.ts";

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
  const held = new Map<string, TensorEntry>();
  let order: string[] = [];
  return new TransformStream<ModelChunk, ModelChunk>({
    transform(chunk, controller) {
      if (chunk.type === "header") {
        const tensors = [...chunk.header.tensors].sort((a, b) => compare(a.name, b.name));
        order = tensors.map((t) => t.name);
        controller.enqueue({ type: "header", header: { ...chunk.header, tensors } });
        return;
      }
      held.set(chunk.tensor.info.name, chunk.tensor);
    },
    flush(controller) {
      for (const name of order) {
        const entry = held.get(name);
        if (entry === undefined) {
          throw new TypeError(`Cannot reorder tensors: "${name}" never arrived`);
        }
        controller.enqueue({ type: "tensor", tensor: entry });
      }
    },
  });
}
