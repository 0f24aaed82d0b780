// This module is browser compatible.

/**
 * Columns of stacked matrices written as rows: what llama.cpp's converter
 * makes of expert stacks a checkpoint stores transposed, `[experts, in, out]`
 * (`transpose(-1, -2)`, then a split or a strided slice), for GGUF's
 * `[experts, out, in]`. Llama 4 and the Hub's Qwen3-VL-MoE split a window of
 * columns; gpt-oss keeps every other column (gate and up are interleaved).
 *
 * An output row is a column of a matrix, so it needs a little of every
 * stored row. The payload is read once, in order, one matrix at a time: the
 * matrix's kept columns are held until its last row has arrived, then
 * written transposed. Memory is the kept columns of one matrix (Llama 4
 * Scout's gate: 5120 × 8192 BF16, 80 MiB), never the tensor. Tiles of
 * columns read row by row from a random-access source would hold less, but
 * cost one read per row and tile (measured 15× slower on a local file), or
 * read every byte many times.
 *
 * @module
 */

import { markReleasable, releaseChunk, takeBuffer } from "../io/byte_source.ts";

/**
 * Most bytes of one output chunk (or one output row, when larger): a size
 * the chunk pool of io/byte_source.ts keeps for reuse.
 */
const OUT_CHUNK_BYTES = 1024 * 1024;

/** Stored rows transposed together (measured: 8 to 16 fastest, whole columns 3× slower). */
const TILE_ROWS = 16;

/** The stacked matrices, and which of their columns to write as rows. */
export interface ColumnsAsRowsOptions {
  /** Matrices in the stack (experts). */
  readonly matrices: number;
  /** Rows of each matrix. */
  readonly rows: number;
  /** Columns of each matrix. */
  readonly cols: number;
  /** Bytes per value. */
  readonly width: number;
  /**
   * First column kept.
   *
   * @default {0}
   */
  readonly start?: number;
  /**
   * Columns from one kept column to the next (2 for `[..., 1::2]`).
   *
   * @default {1}
   */
  readonly step?: number;
  /**
   * Columns kept (a window `[start, start + count)` when `step` is 1).
   *
   * @default {every `step`-th column from `start` to the last}
   */
  readonly count?: number;
}

/**
 * Every `step`-th column of each row-major `[rows, cols]` matrix of a stack,
 * `count` of them from column `start`, as rows: the stack becomes
 * `[matrices, count, rows]`. Holds the kept columns of one matrix; emits
 * chunks of at most 1 MiB (or one output row), which the sink may give back
 * to the chunk pool, and gives each source chunk back once copied.
 *
 * @example Usage
 * ```ts
 * import { columnsAsRows } from "./columns_as_rows.ts";
 * // One 2×4 matrix of bytes: 0 1 2 3 / 4 5 6 7; the odd columns as rows.
 * const input = ReadableStream.from([new Uint8Array([0, 1, 2, 3, 4, 5, 6, 7])]);
 * const out = columnsAsRows(input, { matrices: 1, rows: 2, cols: 4, width: 1, start: 1, step: 2 });
 * console.assert(new Uint8Array(await new Response(out).arrayBuffer()).join() === "1,5,3,7");
 * ```
 *
 * @param input The stacked matrices.
 * @param options Their count, size and value width, and which columns to keep.
 * @returns The kept columns, each as one row.
 * @throws {RangeError} When the columns are not inside the matrix; (from the
 * stream) when the payload ends early or runs long.
 */
export function columnsAsRows(
  input: ReadableStream<Uint8Array>,
  options: ColumnsAsRowsOptions,
): ReadableStream<Uint8Array> {
  const { matrices, rows, cols, width, start = 0, step = 1 } = options;
  const count = options.count ?? Math.ceil((cols - start) / step);
  const numbers = [matrices, rows, cols, width, start, step, count];
  if (
    !numbers.every(Number.isSafeInteger) || Math.min(...numbers) < 0 || width === 0 ||
    step === 0 || (count > 0 && start + (count - 1) * step >= cols)
  ) {
    throw new RangeError(
      `Cannot take columns as rows: ${count} columns from ${start} by ${step} are not inside ` +
        `[${rows}, ${cols}] matrices of ${width}-byte values`,
    );
  }
  const rowBytes = cols * width;
  const total = matrices * rows * rowBytes;
  const held = new Matrix(rows, count, width, start, step);
  // A stored row split across source chunks, or not aligned for a typed view.
  const staged = new Uint8Array(rowBytes);
  const outRows = Math.max(1, Math.floor(OUT_CHUNK_BYTES / (rows * width)));
  const reader = input.getReader();
  let chunk: Uint8Array | undefined;
  let offset = 0; // bytes of `chunk` used
  let at = 0; // bytes of the payload used
  let next = count; // the held matrix's next column to write; `count` when written

  // Reads until a whole matrix is held; false at the end of the payload.
  async function readMatrix(): Promise<boolean> {
    while (true) {
      if (chunk === undefined) {
        const { done, value } = await reader.read();
        if (done) {
          if (at === total) return false;
          throw new RangeError(
            `Cannot read the stacked matrices: the payload ends ${total - at} bytes early`,
          );
        }
        if (at + value.length > total) {
          await reader.cancel();
          throw new RangeError(
            `Cannot read the stacked matrices: the payload is longer than ${total} bytes`,
          );
        }
        [chunk, offset] = [value, 0];
      }
      let whole = false;
      while (offset < chunk.length && !whole) {
        const inRow = at % rowBytes;
        const take = Math.min(chunk.length - offset, rowBytes - inRow);
        const row = Math.floor(at / rowBytes) % rows;
        if (take === rowBytes) {
          held.keep(row, chunk.subarray(offset, offset + take), staged);
        } else {
          staged.set(chunk.subarray(offset, offset + take), inRow);
          if (inRow + take === rowBytes) held.keep(row, staged, staged);
        }
        offset += take;
        at += take;
        whole = at % (rows * rowBytes) === 0;
      }
      if (offset >= chunk.length) {
        releaseChunk(chunk);
        chunk = undefined;
      }
      if (whole) return true;
    }
  }

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (next >= count) {
        if (rows * count === 0) {
          // Nothing is kept (no rows or no columns), so nothing to read.
          await reader.cancel();
          controller.close();
          return;
        }
        if (!await readMatrix()) {
          controller.close();
          return;
        }
        next = 0;
      }
      const end = Math.min(count, next + outRows);
      controller.enqueue(held.columnsAsRows(next, end));
      next = end;
    },
    async cancel(reason) {
      await reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}

/**
 * The shape of a 2-D tensor transposed (`[rows, cols]` → `[cols, rows]`).
 *
 * @param info The tensor.
 * @returns The transposed shape.
 * @throws {RangeError} When the tensor is not 2-D.
 */
export function transposedShape(
  info: { name: string; shape: readonly number[] },
): [number, number] {
  if (info.shape.length !== 2) {
    throw new RangeError(
      `Cannot transpose "${info.name}": it is not a matrix (shape [${info.shape}])`,
    );
  }
  return [info.shape[1]!, info.shape[0]!];
}

/**
 * A row-major matrix's payload transposed: every column as a row (one
 * matrix of {@linkcode columnsAsRows}).
 *
 * @param input The payload.
 * @param info The tensor: its 2-D shape and element type's width.
 * @returns The transposed payload.
 */
export function transposedPayload(
  input: ReadableStream<Uint8Array>,
  info: { name: string; shape: readonly number[]; byteLength: number },
): ReadableStream<Uint8Array> {
  const [cols, rows] = transposedShape(info);
  const width = rows * cols === 0 ? 1 : info.byteLength / (rows * cols);
  return columnsAsRows(input, { matrices: 1, rows, cols, width });
}

/** The typed array whose elements are `width` bytes, if there is one. */
function elementView(width: number) {
  return width === 4
    ? Uint32Array
    : width === 2
    ? Uint16Array
    : width === 1
    ? Uint8Array
    : undefined;
}

/** The kept columns of one matrix, row-major `[rows, count]`. */
class Matrix {
  readonly #rows: number;
  readonly #count: number;
  readonly #width: number;
  readonly #start: number;
  readonly #step: number;
  readonly #bytes: Uint8Array<ArrayBuffer>;

  constructor(rows: number, count: number, width: number, start: number, step: number) {
    [this.#rows, this.#count, this.#width] = [rows, count, width];
    [this.#start, this.#step] = [start, step];
    this.#bytes = new Uint8Array(rows * count * width);
  }

  /**
   * Keep the columns of stored row `row` (`stored`, one whole row; `spare`,
   * a row's worth of aligned bytes, for a `stored` a typed view cannot read).
   */
  keep(row: number, stored: Uint8Array, spare: Uint8Array<ArrayBuffer>): void {
    const [count, width, start, step] = [this.#count, this.#width, this.#start, this.#step];
    const into = row * count;
    if (step === 1) {
      this.#bytes.set(stored.subarray(start * width, (start + count) * width), into * width);
      return;
    }
    const View = elementView(width);
    if (View === undefined) {
      for (let k = 0; k < count; k++) {
        const from = (start + k * step) * width;
        this.#bytes.set(stored.subarray(from, from + width), (into + k) * width);
      }
      return;
    }
    if (stored.byteOffset % width !== 0) {
      spare.set(stored);
      stored = spare;
    }
    const src = new View(stored.buffer as ArrayBuffer, stored.byteOffset, stored.length / width);
    const dst = new View(this.#bytes.buffer, into * width, count);
    for (let k = 0, c = start; k < count; k++, c += step) dst[k] = src[c]!;
  }

  /** Kept columns `[c0, c1)` as rows, `[c1 − c0, rows]`, in a chunk from the pool. */
  columnsAsRows(c0: number, c1: number): Uint8Array {
    const [rows, w, width] = [this.#rows, this.#count, this.#width];
    const out = markReleasable(new Uint8Array(takeBuffer((c1 - c0) * rows * width)));
    const View = elementView(width);
    if (View === undefined) {
      for (let c = c0; c < c1; c++) {
        for (let r = 0; r < rows; r++) {
          const at = (r * w + c) * width;
          out.set(this.#bytes.subarray(at, at + width), ((c - c0) * rows + r) * width);
        }
      }
      return out;
    }
    const src = new View(this.#bytes.buffer, 0, rows * w);
    const dst = new View(out.buffer, 0, (c1 - c0) * rows);
    // A few rows at a time, so the rows being read stay in cache while every
    // column of the chunk takes its values from them: 3× faster than whole
    // columns (bench/columns_as_rows_bench.ts).
    for (let r0 = 0; r0 < rows; r0 += TILE_ROWS) {
      const r1 = Math.min(rows, r0 + TILE_ROWS);
      for (let c = c0; c < c1; c++) {
        const base = (c - c0) * rows;
        for (let r = r0, i = r0 * w + c; r < r1; r++, i += w) dst[base + r] = src[i]!;
      }
    }
    return out;
  }
}
