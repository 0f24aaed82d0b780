/**
 * A SafeTensors checkpoint's tensors in the order llama.cpp's converter
 * reads them: shard after shard, each shard's by name (gguf-py's
 * `SafetensorsLocal`, as the safetensors library lists them), where aprkit's
 * reader serves them by data offset. The two differ where a shard mixes
 * dtypes (safetensors stores the wider ones first): DeepSeek-V4's FP8
 * weights and their E8M0 scales after the F32/BF16 tensors of their layer.
 * Tensors are held until their turn (`reorder_tensors.ts`); a source
 * already in that order passes through as it comes.
 *
 * A weight the converter makes from a group of stored tensors under a name
 * no file holds (GPTQ's `qweight`/`qzeros`/`scales`/`g_idx`, compressed-tensors'
 * `weight_packed`…) it adds after every tensor it read (`dequant_model`'s
 * `new_tensors`), in the order it read the tensor marking each group
 * (`.qweight`, `.weight_packed`): by that tensor's shard and name, wherever
 * the rest of its group is stored. One whose name is stored (FP8's,
 * BitNet's) keeps its place.
 *
 * @module
 */

import type { ModelChunk, TensorInfo } from "../tensor.ts";
import { reorderTensors } from "./reorder_tensors.ts";

/**
 * The converter's reading order of `tensors`, or `undefined` when it is
 * theirs already. A tensor with no shard of its own (one a quantized
 * checkpoint's reader made) stays in the shard of the tensor before it.
 *
 * @param tensors The reader's tensors, in its order (shards in name order).
 * @param shardOf The shard of a tensor the files hold (paths or URLs of one
 * folder: they sort as the shards' names).
 * @param made The weights a quantized checkpoint's reader made under names no
 * file holds, each with the stored tensor marking its group when known:
 * after every other tensor, by that tensor's shard then name (else by the
 * shard of the tensor before it and its own name).
 * @returns The names in the converter's order, or `undefined`.
 */
export function converterReadOrder(
  tensors: readonly TensorInfo[],
  shardOf: (name: string) => string | undefined,
  made: ReadonlyMap<string, string | undefined> = new Map(),
): string[] | undefined {
  // Shards by name, as the converter reads them (the reader's order too),
  // counting those whose every tensor went into a made one (its marks').
  const shards = new Set<string>();
  for (const name of [...tensors.map((t) => t.name), ...made.values()]) {
    const of = name === undefined ? undefined : shardOf(name);
    if (of !== undefined) shards.add(of);
  }
  const rank = new Map([...shards].sort().map((s, i) => [s, i]));
  let shard = 0;
  const keyed = tensors.map((t) => {
    const of = shardOf(t.name);
    if (of !== undefined) {
      shard = rank.get(of)!;
      return { name: t.name, key: t.name, shard, last: 0 };
    }
    if (!made.has(t.name)) return { name: t.name, key: t.name, shard, last: 0 };
    const mark = made.get(t.name);
    const markShard = mark === undefined ? undefined : shardOf(mark);
    return markShard === undefined
      ? { name: t.name, key: t.name, shard, last: 1 }
      : { name: t.name, key: mark!, shard: rank.get(markShard)!, last: 1 };
  });
  const sorted = [...keyed].sort((a, b) =>
    a.last - b.last || a.shard - b.shard || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
  );
  return sorted.every((t, i) => t === keyed[i]) ? undefined : sorted.map((t) => t.name);
}

/**
 * The transform (held as {@linkcode reorderTensors} says: every made weight
 * until the source's last tensor, a mixed-dtype shard's entries until their
 * turn by name).
 *
 * @param shardOf The shard of a tensor the files hold.
 * @param made The weights a quantized checkpoint's reader made (see {@linkcode converterReadOrder}).
 * @returns The transform.
 */
export function inConverterReadOrder(
  shardOf: (name: string) => string | undefined,
  made: ReadonlyMap<string, string | undefined> = new Map(),
): TransformStream<ModelChunk, ModelChunk> {
  return reorderTensors((tensors) => converterReadOrder(tensors, shardOf, made));
}
