// This module is browser compatible.

/**
 * A dequantized tensor as a {@linkcode TensorEntry}: F32 values computed band
 * of rows after band of rows from its companion tensors, so a payload of any
 * size streams in bounded memory and restarts at any row boundary.
 *
 * @module
 */

import { DEFAULT_CHUNK_SIZE, markReleasable, takeBuffer } from "../../io/byte_source.ts";
import type { TensorEntry } from "../../tensor.ts";

/**
 * Values produced per band: one default chunk (1 MiB of f32), so the sink can
 * hand each band's memory back for the next (`releaseChunk`).
 */
const BAND_VALUES = DEFAULT_CHUNK_SIZE / 4;

/** Writes the f32 values of rows `[start, end)` into `out`, in row-major order. */
export type RowProducer = (start: number, end: number, out: Float32Array) => Promise<void>;

/**
 * An F32 entry whose rows (the last dimension) are computed on demand.
 *
 * @param name Tensor name.
 * @param shape Output shape, outermost first.
 * @param producer Makes one band producer per opened stream (so its caches
 *   are per stream); the producer is called with consecutive bands, from row 0
 *   or from a restart row.
 * @returns The entry.
 */
export function f32Entry(
  name: string,
  shape: readonly number[],
  producer: () => RowProducer,
): TensorEntry {
  const rowLength = shape.length === 0 ? 1 : shape[shape.length - 1]!;
  const rows = rowLength === 0 ? 0 : shape.reduce((a, b) => a * b, 1) / rowLength;
  const rowBytes = rowLength * 4;
  const band = Math.max(1, Math.floor(BAND_VALUES / Math.max(1, rowLength)));
  const from = (first: number): ReadableStream<Uint8Array> => {
    const produce = producer();
    let next = first;
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (next >= rows) {
          controller.close();
          return;
        }
        const end = Math.min(rows, next + band);
        const values = new Float32Array(takeBuffer((end - next) * rowBytes));
        await produce(next, end, values);
        next = end;
        controller.enqueue(markReleasable(new Uint8Array(values.buffer)));
      },
    }, { highWaterMark: 0 });
  };
  const inside = (offset: number) =>
    Number.isSafeInteger(offset) && offset > 0 && offset < rows * rowBytes &&
    offset % rowBytes === 0;
  return {
    info: { name, dtype: "F32", shape: [...shape], byteLength: rows * rowBytes },
    open: () => from(0),
    restartPoint: (offset) => inside(offset) ? {} : undefined,
    openAt: (offset, state) =>
      inside(offset) && state === undefined ? from(offset / rowBytes) : undefined,
  };
}
