/**
 * `--prune-layers L0,L1,…` as llama-quantize has it (`remap_layer` in
 * llama-quant.cpp): the blocks listed are left out, the blocks after them
 * renumbered down so the GGUF's blocks stay consecutive, and the importance
 * matrix read under each block's old number.
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import type { ModelChunk, TensorEntry, TensorInfo } from "../tensor.ts";

/** A block tensor's GGUF name: `blk.N.` and the rest. */
const BLOCK = /^blk\.(\d+)\./;

/**
 * The layers of `--prune-layers`, as llama-quantize's `parse_layer_prune`
 * reads them: comma-separated whole numbers, sorted, duplicates dropped.
 *
 * @example Usage
 * ```ts
 * import { parsePruneLayers } from "./prune_layers.ts";
 * console.assert(parsePruneLayers("7,3,3").join() === "3,7");
 * ```
 *
 * @param text The flag's value.
 * @returns The layers, ascending.
 * @throws {UsageError} For an entry that is not a whole number from 0.
 */
export function parsePruneLayers(text: string): number[] {
  const layers = text.split(",").map((part) => {
    if (!/^\s*\d+\s*$/.test(part) || !Number.isSafeInteger(Number(part))) {
      throw new UsageError(
        `pruneLayers: "${part}" is not a layer number (give whole numbers from 0, e.g. 3,7)`,
      );
    }
    return Number(part);
  });
  return [...new Set(layers)].sort((a, b) => a - b);
}

/**
 * Each kept block's new number. llama-quantize walks the blocks in order and
 * numbers the kept ones from 0; a listed layer the model does not have is
 * refused (llama-quantize ignores it, which hides a typo).
 *
 * @param prune The layers to leave out.
 * @param tensors The model's tensors (GGUF names).
 * @returns Old block number → new one, for kept blocks only.
 * @throws {UsageError} For a layer the model has not.
 */
export function pruneMap(
  prune: readonly number[],
  tensors: readonly TensorInfo[],
): Map<number, number> {
  const blocks = new Set<number>();
  for (const t of tensors) {
    const m = BLOCK.exec(t.name);
    if (m !== null) blocks.add(Number(m[1]));
  }
  const missing = prune.filter((l) => !blocks.has(l));
  if (missing.length > 0) {
    throw new UsageError(
      `pruneLayers: the model has no layer ${missing.join(", ")} (its layers are 0 to ${
        Math.max(-1, ...blocks)
      })`,
    );
  }
  const map = new Map<number, number>();
  for (const b of [...blocks].sort((a, c) => a - c)) {
    if (!prune.includes(b)) map.set(b, map.size);
  }
  return map;
}

/**
 * A tensor's name after pruning, or undefined when its block is left out.
 *
 * @param name A GGUF tensor name.
 * @param map {@linkcode pruneMap}'s map.
 * @returns The new name (the same for tensors outside blocks), or undefined.
 */
export function prunedName(name: string, map: ReadonlyMap<number, number>): string | undefined {
  const m = BLOCK.exec(name);
  if (m === null) return name;
  const to = map.get(Number(m[1]));
  return to === undefined ? undefined : `blk.${to}.${name.slice(m[0].length)}`;
}

/**
 * The importance matrix under the pruned names: each kept block's entries
 * under its new number, as llama-quantize's `remap_imatrix` looks them up.
 *
 * @param entries The matrix's entries by GGUF name.
 * @param map {@linkcode pruneMap}'s map.
 * @returns The entries by pruned name.
 */
export function prunedImportance(
  entries: ReadonlyMap<string, Float32Array>,
  map: ReadonlyMap<number, number>,
): Map<string, Float32Array> {
  const out = new Map<string, Float32Array>();
  for (const [name, values] of entries) {
    const to = prunedName(name, map);
    if (to !== undefined) out.set(to, values);
  }
  return out;
}

/**
 * The transform: tensors of pruned blocks dropped (never read), the others
 * renamed. Names are GGUF ones by then; the header's metadata is kept as the
 * source's, since llama-quantize chooses types from the source's block count
 * (the output's `block_count` is set apart, as it sets it last).
 *
 * @param prune The layers to leave out (checked against the model's).
 * @param onMap Told the map once the header is seen.
 * @returns The transform.
 */
export function pruneLayers(
  prune: readonly number[],
  onMap?: (map: ReadonlyMap<number, number>) => void,
): TransformStream<ModelChunk, ModelChunk> {
  let map: Map<number, number> = new Map();
  const rename = (info: TensorInfo, name: string): TensorInfo => ({ ...info, name });
  return new TransformStream<ModelChunk, ModelChunk>({
    transform(chunk, controller) {
      if (chunk.type === "header") {
        map = pruneMap(prune, chunk.header.tensors);
        onMap?.(map);
        const tensors = chunk.header.tensors.flatMap((t) => {
          const name = prunedName(t.name, map);
          return name === undefined ? [] : [rename(t, name)];
        });
        controller.enqueue({ type: "header", header: { ...chunk.header, tensors } });
        return;
      }
      const name = prunedName(chunk.tensor.info.name, map);
      if (name === undefined) return;
      if (name === chunk.tensor.info.name) {
        controller.enqueue(chunk);
        return;
      }
      const tensor: TensorEntry = { ...chunk.tensor, info: rename(chunk.tensor.info, name) };
      controller.enqueue({ type: "tensor", tensor });
    },
  });
}
