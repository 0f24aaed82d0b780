// This module is browser compatible.

/**
 * Stacked experts stored transposed (Llama 4's `gate_up_proj`
 * `[experts, hidden, 2 × ff]`, `down_proj` `[experts, ff, hidden]`): a
 * window of each expert's columns, written as rows, which is what llama.cpp's
 * converter makes of them (`transpose(-1, -2)`, then the split).
 *
 * One output row is a column of the expert's matrix, so it needs a little of
 * every stored row. The payload is read once, in order, and one expert at a
 * time: the expert's columns in the window are held until its last row has
 * arrived, then written transposed. Memory is one expert's part of the
 * tensor (Llama 4 Scout's gate: 5120 × 8192 BF16, 80 MiB), never the tensor.
 * Tiles of columns read row by row from a random-access source would hold
 * less, but cost one read per row and tile (measured 15× slower on a local
 * file), or read every byte many times.
 *
 * @module
 */

import type { TensorEntry } from "../tensor.ts";

/** Most bytes of one output chunk. */
const BAND_BYTES = 4 * 1024 * 1024;

/** The part of a transposed expert stack to write. */
export interface TransposedPart {
  /** The source's shape, `[experts, rows, cols]`. */
  readonly shape: readonly [number, number, number];
  /** Bytes per element (the source's type has separate elements). */
  readonly elementBytes: number;
  /** First source column of the part. */
  readonly from: number;
  /** Source columns in the part (output rows per expert). */
  readonly count: number;
}

/**
 * The part's payload: for each expert, for each column in the window, that
 * column of the expert's matrix (`[experts, count, rows]`, row-major).
 *
 * @param source The stacked tensor.
 * @param part Which columns, and the shape.
 * @returns The payload, one expert at a time.
 * @throws {RangeError} (from the stream) When the payload ends early.
 */
export function transposedExperts(
  source: TensorEntry,
  part: TransposedPart,
): ReadableStream<Uint8Array> {
  return ReadableStream.from(expertsInOrder(source.open(), part));
}

async function* expertsInOrder(
  input: ReadableStream<Uint8Array>,
  part: TransposedPart,
): AsyncGenerator<Uint8Array> {
  const [experts, rows, cols] = part.shape;
  const eb = part.elementBytes;
  const rowBytes = cols * eb;
  const expertBytes = rows * rowBytes;
  const from = part.from * eb;
  const to = from + part.count * eb;
  const held = new Uint8Array(rows * part.count * eb);
  // Output rows per chunk, so that no chunk is larger than BAND_BYTES.
  const band = Math.max(1, Math.floor(BAND_BYTES / (rows * eb)));
  let at = 0; // bytes of the source read so far
  for await (const chunk of input) {
    if (at + chunk.length > experts * expertBytes) {
      throw new RangeError(
        `Cannot transpose the experts: the payload is longer than ${experts * expertBytes} bytes`,
      );
    }
    let offset = 0;
    while (offset < chunk.length) {
      const inExpert = at % expertBytes;
      const row = Math.floor(inExpert / rowBytes);
      const inRow = inExpert - row * rowBytes;
      const take = Math.min(chunk.length - offset, rowBytes - inRow);
      // The window's bytes of this row that this piece of the chunk holds.
      const a = Math.max(inRow, from);
      const b = Math.min(inRow + take, to);
      if (a < b) {
        held.set(
          chunk.subarray(offset + a - inRow, offset + b - inRow),
          row * part.count * eb + (a - from),
        );
      }
      offset += take;
      at += take;
      if (at % expertBytes === 0) {
        for (let c = 0; c < part.count; c += band) {
          yield transpose(held, rows, part.count, eb, c, Math.min(part.count, c + band));
        }
      }
    }
  }
  if (at !== experts * expertBytes) {
    throw new RangeError(
      `Cannot transpose the experts: the payload ended after ${at} of ${
        experts * expertBytes
      } bytes`,
    );
  }
}

/**
 * Columns `[c0, c1)` of `[rows, w]` elements as rows: `[c1 − c0, rows]`
 * (`held` starts at the start of its buffer).
 */
function transpose(
  held: Uint8Array<ArrayBuffer>,
  rows: number,
  w: number,
  eb: number,
  c0: number,
  c1: number,
): Uint8Array {
  const out = new Uint8Array((c1 - c0) * rows * eb);
  const view = eb === 4 ? Uint32Array : eb === 2 ? Uint16Array : eb === 1 ? Uint8Array : undefined;
  if (view !== undefined) {
    const src = new view(held.buffer, held.byteOffset, rows * w);
    const dst = new view(out.buffer, 0, (c1 - c0) * rows);
    for (let c = c0; c < c1; c++) {
      const base = (c - c0) * rows;
      for (let r = 0; r < rows; r++) dst[base + r] = src[r * w + c]!;
    }
    return out;
  }
  for (let c = c0; c < c1; c++) {
    for (let r = 0; r < rows; r++) {
      const at = (r * w + c) * eb;
      out.set(held.subarray(at, at + eb), ((c - c0) * rows + r) * eb);
    }
  }
  return out;
}
