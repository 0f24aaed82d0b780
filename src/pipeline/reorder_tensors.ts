// This module is browser compatible.

/**
 * A model stream's tensors re-emitted in an order computed from its header
 * (llama.cpp's converter's reading order, llama-quantize's writing order):
 * what both orders share. The header goes out first with its tensors in the
 * new order; each tensor goes out as soon as every one before it in that
 * order has.
 *
 * What is held: the entries (name, shape, how to open the payload) that
 * arrive before their turn, from their arrival until their turn, never a
 * payload; a payload is opened when the sink reads it, after the entry has
 * gone out. So memory grows with the number of tensors the source serves
 * ahead of their turn (at most every tensor, when the first one in the new
 * order comes last), not with their bytes. A source already in that order
 * passes through without holding anything.
 *
 * @module
 */

import type { ModelChunk, TensorEntry, TensorInfo } from "../tensor.ts";

/**
 * The transform.
 *
 * @param orderOf The names of the header's tensors in the order to emit them
 * (each once), or `undefined` to pass the stream through as it comes.
 * @returns The transform. It errors when a tensor arrives twice, or one the
 * header does not list (at the end, as one that never arrived); cancelled
 * or aborted, it drops what it holds.
 */
export function reorderTensors(
  orderOf: (tensors: readonly TensorInfo[]) => readonly string[] | undefined,
): TransformStream<ModelChunk, ModelChunk> {
  /** The new order, or `undefined` when passing through. */
  let order: readonly string[] | undefined;
  // Nothing per tensor beyond `order` and what waits: a name the header does
  // not list, or one that went already, waits for ever and is named at the end.
  const held = new Map<string, TensorEntry>();
  /** The next position of `order` to emit. */
  let next = 0;
  return new TransformStream<ModelChunk, ModelChunk>({
    transform(chunk, controller) {
      if (chunk.type === "header") {
        order = orderOf(chunk.header.tensors);
        if (order === undefined) {
          controller.enqueue(chunk);
          return;
        }
        const byName = new Map(chunk.header.tensors.map((t) => [t.name, t]));
        const tensors = order.map((name) => byName.get(name)!);
        controller.enqueue({ type: "header", header: { ...chunk.header, tensors } });
        return;
      }
      if (order === undefined) {
        controller.enqueue(chunk);
        return;
      }
      const name = chunk.tensor.info.name;
      if (held.has(name)) throw new TypeError(`Cannot reorder tensors: "${name}" arrived twice`);
      held.set(name, chunk.tensor);
      for (
        let entry = held.get(order[next]!);
        entry !== undefined;
        entry = held.get(order[next]!)
      ) {
        held.delete(order[next]!);
        next++;
        controller.enqueue({ type: "tensor", tensor: entry });
      }
    },
    flush() {
      if (order === undefined) return;
      if (next < order.length) {
        throw new TypeError(`Cannot reorder tensors: "${order[next]}" never arrived`);
      }
      for (const name of held.keys()) {
        const why = order.includes(name) ? "arrived twice" : "is not in the header";
        throw new TypeError(`Cannot reorder tensors: "${name}" ${why}`);
      }
    },
    cancel() {
      held.clear();
    },
  });
}
