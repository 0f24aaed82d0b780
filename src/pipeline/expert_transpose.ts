// This module is browser compatible.

/**
 * Stacked experts stored transposed (Llama 4's `gate_up_proj`
 * `[experts, hidden, 2 × ff]`, `down_proj` `[experts, ff, hidden]`): a
 * window of each expert's columns, written as rows, which is what llama.cpp's
 * converter makes of them (`transpose(-1, -2)`, then the split).
 *
 * One output row is a column of the expert's matrix, so it needs a little of
 * every stored row. From a random-access source (`slice`), a tile of
 * columns (at most {@linkcode TILE_BYTES}) is read row by row and written
 * out before the next, so memory stays at one tile whatever the tensor's
 * size. A source read only in order is transposed one expert at a time: the
 * expert's columns in the window are held (one expert's part, not the
 * tensor).
 *
 * @module
 */

import type { TensorEntry } from "../tensor.ts";

/** Most bytes of the source held at once by the random-access path. */
export const TILE_BYTES = 4 * 1024 * 1024;

/** Largest contiguous read when a tile spans most of each row. */
const MAX_READ = 4 * 1024 * 1024;

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
  /** Most source bytes per tile (random-access path). @default {TILE_BYTES} */
  readonly tileBytes?: number;
}

/**
 * The part's payload: for each expert, for each column in the window, that
 * column of the expert's matrix (`[experts, count, rows]`, row-major).
 *
 * @param source The stacked tensor.
 * @param part Which columns, and the shape.
 * @returns The payload, tile by tile.
 */
export function transposedExperts(
  source: TensorEntry,
  part: TransposedPart,
): ReadableStream<Uint8Array> {
  const slice = source.slice;
  const tiles = slice !== undefined
    ? tilesFromSlices(slice, part)
    : tilesInOrder(source.open(), part);
  return ReadableStream.from(tiles);
}

async function* tilesFromSlices(
  slice: (start: number, end: number) => ReadableStream<Uint8Array>,
  part: TransposedPart,
): AsyncGenerator<Uint8Array> {
  const [experts, rows, cols] = part.shape;
  const eb = part.elementBytes;
  const rowBytes = cols * eb;
  const budget = part.tileBytes ?? TILE_BYTES;
  const width = Math.max(1, Math.min(part.count, Math.floor(budget / (rows * eb))));
  for (let e = 0; e < experts; e++) {
    for (let c = 0; c < part.count; c += width) {
      const w = Math.min(width, part.count - c);
      const from = (part.from + c) * eb;
      const tile = new Uint8Array(rows * w * eb);
      if (w * eb * 2 >= rowBytes) {
        // Most of each row: whole rows in large reads, the window kept.
        const step = Math.max(1, Math.floor(MAX_READ / rowBytes));
        for (let r = 0; r < rows; r += step) {
          const last = Math.min(rows, r + step);
          const start = (e * rows + r) * rowBytes;
          const bytes = await read(slice, start, start + (last - r) * rowBytes);
          for (let k = r; k < last; k++) {
            const at = (k - r) * rowBytes + from;
            tile.set(bytes.subarray(at, at + w * eb), k * w * eb);
          }
        }
      } else {
        for (let r = 0; r < rows; r++) {
          const start = (e * rows + r) * rowBytes + from;
          tile.set(await read(slice, start, start + w * eb), r * w * eb);
        }
      }
      yield transpose(tile, rows, w, eb);
    }
  }
}

async function* tilesInOrder(
  input: ReadableStream<Uint8Array>,
  part: TransposedPart,
): AsyncGenerator<Uint8Array> {
  const [experts, rows, cols] = part.shape;
  const eb = part.elementBytes;
  const rowBytes = cols * eb;
  const from = part.from * eb;
  const to = from + part.count * eb;
  const held = new Uint8Array(rows * part.count * eb);
  let at = 0; // bytes of the source read so far
  let expert = 0;
  for await (const chunk of input) {
    let offset = 0;
    while (offset < chunk.length) {
      const inExpert = at - expert * rows * rowBytes;
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
      if (row === rows - 1 && inRow + take === rowBytes) {
        yield transpose(held, rows, part.count, eb);
        expert++;
      }
    }
  }
  if (expert !== experts) {
    throw new RangeError(
      `Cannot transpose the experts: the payload ended after ${expert} of ${experts}`,
    );
  }
}

/** `[rows, w]` elements → `[w, rows]` (`tile` starts at the start of its buffer). */
function transpose(
  tile: Uint8Array<ArrayBuffer>,
  rows: number,
  w: number,
  eb: number,
): Uint8Array {
  const out = new Uint8Array(rows * w * eb);
  const view = eb === 4 ? Uint32Array : eb === 2 ? Uint16Array : eb === 1 ? Uint8Array : undefined;
  if (view !== undefined) {
    const src = new view(tile.buffer, tile.byteOffset, rows * w);
    const dst = new view(out.buffer, 0, rows * w);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < w; c++) dst[c * rows + r] = src[r * w + c]!;
    }
    return out;
  }
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < w; c++) {
      const at = (r * w + c) * eb;
      out.set(tile.subarray(at, at + eb), (c * rows + r) * eb);
    }
  }
  return out;
}

async function read(
  slice: (start: number, end: number) => ReadableStream<Uint8Array>,
  start: number,
  end: number,
): Promise<Uint8Array> {
  const out = new Uint8Array(end - start);
  let at = 0;
  for await (const chunk of slice(start, end)) {
    if (at + chunk.length > out.length) {
      throw new RangeError(`Cannot read bytes ${start}–${end}: the source gave more`);
    }
    out.set(chunk, at);
    at += chunk.length;
  }
  if (at !== out.length) {
    throw new RangeError(`Cannot read bytes ${start}–${end}: the source ended after ${at}`);
  }
  return out;
}
