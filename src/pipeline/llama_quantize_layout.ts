// This module is browser compatible.

/**
 * llama-quantize's layout of a GGUF file, for the presets it makes: tensors
 * in llama.cpp's model-loader order (`weight_name_comparer`: tensors outside
 * the blocks first, then block by block, each group sorted by GGUF name),
 * and `general.quantization_version`, `general.file_type` moved after every
 * other key (it copies the source's keys, then sets those two: the GGUF
 * sink's `llamaQuantizeLayout` option). With both, an
 * HF folder converted with a preset gives the bytes of the converter's F32
 * file run through llama-quantize.
 *
 * Tensor entries are descriptors that read their data when opened, so
 * holding all of them until the last has arrived costs no tensor memory.
 *
 * @module
 */

import type { ModelChunk, ModelHeader, TensorEntry } from "../tensor.ts";
import { hfToGgufName } from "../formats/gguf/names.ts";

/** llama.cpp's `weight_name_comparer` on GGUF names. */
function compareLoaderOrder(a: string, b: string): number {
  const layer = (name: string): number => {
    const m = /^blk\.(\d+)\./.exec(name);
    return m === null ? -1 : Number(m[1]);
  };
  const la = layer(a);
  const lb = layer(b);
  if (la !== lb) return la - lb;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Reorder a model stream's tensors as llama-quantize writes them.
 *
 * @param keepNames Whether the stream carries GGUF names already (else HF names, mapped).
 * @returns The transform.
 */
export function llamaQuantizeOrder(keepNames: boolean): TransformStream<ModelChunk, ModelChunk> {
  let header: ModelHeader | undefined;
  const entries = new Map<string, TensorEntry>();
  const ggufName = (name: string) => keepNames ? name : hfToGgufName(name);
  return new TransformStream<ModelChunk, ModelChunk>({
    transform(chunk) {
      if (chunk.type === "header") header = chunk.header;
      else entries.set(chunk.tensor.info.name, chunk.tensor);
    },
    flush(controller) {
      if (header === undefined) return;
      const tensors = [...header.tensors].sort((a, b) =>
        compareLoaderOrder(ggufName(a.name), ggufName(b.name))
      );
      controller.enqueue({ type: "header", header: { ...header, tensors } });
      for (const info of tensors) {
        const entry = entries.get(info.name);
        if (entry !== undefined) controller.enqueue({ type: "tensor", tensor: entry });
      }
    },
  });
}
