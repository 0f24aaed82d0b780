// This module is browser compatible.

/**
 * The streaming byte transforms families use on the way between formats
 * (DESIGN.md §2.5a): each reads its source chunk by chunk and holds at most
 * one chunk (plus a few carried bytes), never a whole tensor; `columnsAsRows`
 * (columns_as_rows.ts) holds the kept columns of one matrix of a stack.
 *
 * @module
 */

import { markReleasable, releaseChunk, takeBuffer } from "../io/byte_source.ts";

export {
  columnsAsRows,
  type ColumnsAsRowsOptions,
  transposedPayload,
  transposedShape,
} from "./columns_as_rows.ts";

/**
 * Add `value` to every float32 of a little-endian F32 payload, rounding to
 * float32 (Gemma's `1 + w` norms become llama.cpp's `w`).
 *
 * @example Usage
 * ```ts
 * import { addToFloat32 } from "./transforms.ts";
 * const input = ReadableStream.from([new Uint8Array(new Float32Array([0.5, -1]).buffer)]);
 * const out = new Uint8Array(await new Response(addToFloat32(input, 1)).arrayBuffer());
 * console.assert(new Float32Array(out.buffer)[0] === 1.5);
 * ```
 *
 * @param input The F32 payload.
 * @param value What to add.
 * @returns The shifted payload, chunk for chunk (a value split across chunks is carried).
 * @throws {RangeError} (from the stream) When the payload is not whole float32 values.
 */
export function addToFloat32(
  input: ReadableStream<Uint8Array>,
  value: number,
): ReadableStream<Uint8Array> {
  return mapFloats(input, "F32", (v) => v + value);
}

/**
 * Apply `f` to every value of a little-endian F32 or BF16 payload, written
 * as F32 (each result rounded to float32), as llama.cpp's converter computes
 * on a checkpoint's values in float32: Qwen3-Next's `A_log` becomes
 * llama.cpp's `ssm_a = −exp(A_log)`.
 *
 * @example Usage
 * ```ts
 * import { mapFloats } from "./transforms.ts";
 * const input = ReadableStream.from([new Uint8Array(new Float32Array([0, 1]).buffer)]);
 * const out = new Uint8Array(await new Response(mapFloats(input, "F32", (v) => -v)).arrayBuffer());
 * console.assert(new Float32Array(out.buffer)[1] === -1);
 * ```
 *
 * @param input The payload.
 * @param dtype Its type.
 * @param f The function, on numbers.
 * @returns The F32 results, chunk for chunk (a value split across chunks is carried).
 * @throws {RangeError} (from the stream) When the payload is not whole values.
 */
export function mapFloats(
  input: ReadableStream<Uint8Array>,
  dtype: "F32" | "BF16",
  f: (value: number) => number,
): ReadableStream<Uint8Array> {
  const width = dtype === "F32" ? 4 : 2;
  const what = `Cannot map values: the payload ends inside a ${
    dtype === "F32" ? "float32" : "bfloat16"
  }`;
  return byValues(input, width, what, (from) => {
    const out = new Uint8Array(from.byteLength / width * 4);
    const to = new DataView(out.buffer);
    for (let at = 0, o = 0; at < from.byteLength; at += width, o += 4) {
      if (width === 4) to.setFloat32(o, f(from.getFloat32(at, true)), true);
      else {
        // A BF16 value is a float32's top half.
        to.setUint32(o, from.getUint16(at, true) << 16, true);
        to.setFloat32(o, f(to.getFloat32(o, true)), true);
      }
    }
    return out;
  });
}

/**
 * A payload's whole values, chunk by chunk (a value split across chunks is
 * carried to the next): `map` gets each run of values with the index of its
 * first and returns the bytes to pass on.
 */
function byValues(
  input: ReadableStream<Uint8Array>,
  width: number,
  unfinished: string,
  map: (values: DataView, first: number) => Uint8Array,
): ReadableStream<Uint8Array> {
  let carry = new Uint8Array(0);
  let index = 0;
  return input.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const bytes = carry.length === 0 ? chunk : concat(carry, chunk);
        const whole = bytes.length - (bytes.length % width);
        carry = bytes.slice(whole);
        if (whole === 0) return;
        controller.enqueue(map(new DataView(bytes.buffer, bytes.byteOffset, whole), index));
        index += whole / width;
      },
      flush() {
        if (carry.length !== 0) throw new RangeError(unfinished);
      },
    }),
  );
}

/** A float32's bits rounded to the nearest bfloat16 (ties to even), as torch rounds. */
function bf16Bits(f32Bits: number): number {
  if ((f32Bits & 0x7fffffff) > 0x7f800000) return (f32Bits >>> 16) | 0x40; // NaN stays NaN
  return ((f32Bits + 0x7fff + ((f32Bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/**
 * Multiply every value of an F32 or BF16 payload by factors, one after the
 * other, as torch's `tensor * scalar` does: each product in float32 of the
 * value and the factor rounded to float32, rounded to the payload's type
 * (Falcon-H1's µP multipliers, which llama.cpp's converter folds into the
 * weights). The payload keeps its type.
 *
 * @example Usage
 * ```ts
 * import { scaleFloats } from "./transforms.ts";
 * const input = ReadableStream.from([new Uint8Array(new Float32Array([1, 2]).buffer)]);
 * const out = new Uint8Array(await new Response(scaleFloats(input, "F32", (i) => [i + 1])).arrayBuffer());
 * console.assert(new Float32Array(out.buffer)[1] === 4);
 * ```
 *
 * @param input The payload.
 * @param dtype Its type.
 * @param factors The factors of the value at an index (row-major), in order.
 * @returns The scaled payload, chunk for chunk (a value split across chunks is carried).
 * @throws {RangeError} (from the stream) When the payload is not whole values.
 */
export function scaleFloats(
  input: ReadableStream<Uint8Array>,
  dtype: "F32" | "BF16",
  factors: (index: number) => readonly number[],
): ReadableStream<Uint8Array> {
  return mapFloatsInType(input, dtype, (v, index, round) => {
    for (const f of factors(index)) v = round(Math.fround(v * Math.fround(f)));
    return v;
  });
}

/**
 * Apply `f` to every value of a little-endian F32 or BF16 payload, keeping
 * its type: each result rounded to it, as torch computes on a tensor of that
 * type (BitNet's ternary weights, `ternary.ts`).
 *
 * @example Usage
 * ```ts
 * import { mapFloatsInType } from "./transforms.ts";
 * const input = ReadableStream.from([new Uint8Array(new Float32Array([1, 2]).buffer)]);
 * const out = new Uint8Array(await new Response(mapFloatsInType(input, "F32", (v) => -v)).arrayBuffer());
 * console.assert(new Float32Array(out.buffer)[1] === -2);
 * ```
 *
 * @param input The payload.
 * @param dtype Its type.
 * @param f The function: a value (as a number), its index (row-major), and the
 * rounding to the payload's type, for results computed in several steps.
 * @returns The results in the payload's type, chunk for chunk (a value split across chunks is carried).
 * @throws {RangeError} (from the stream) When the payload is not whole values.
 */
export function mapFloatsInType(
  input: ReadableStream<Uint8Array>,
  dtype: "F32" | "BF16",
  f: (value: number, index: number, round: (v: number) => number) => number,
): ReadableStream<Uint8Array> {
  const width = dtype === "F32" ? 4 : 2;
  const bits = new DataView(new ArrayBuffer(4));
  const toFloat32 = (bf16: number): number => {
    bits.setUint32(0, bf16 << 16);
    return bits.getFloat32(0);
  };
  const toBf16 = (v: number): number => {
    bits.setFloat32(0, v);
    return bf16Bits(bits.getUint32(0));
  };
  const round = width === 4 ? Math.fround : (v: number) => toFloat32(toBf16(v));
  return byValues(
    input,
    width,
    "Cannot map values: the payload ends inside one",
    (view, first) => {
      const out = new Uint8Array(view.byteLength);
      const to = new DataView(out.buffer);
      for (let at = 0, index = first; at < view.byteLength; at += width, index++) {
        const v = width === 4 ? view.getFloat32(at, true) : toFloat32(view.getUint16(at, true));
        const r = f(v, index, round);
        if (width === 4) to.setFloat32(at, r, true);
        else to.setUint16(at, toBf16(r), true);
      }
      return out;
    },
  );
}

/**
 * The bytes of a payload's ranges in the order given, which need not be
 * sorted (Qwen3-Next's fused `in_proj_qkvz` split into its q, k, v and z
 * rows; Qwen3.5's value heads from grouped to tiled order). The payload is
 * opened once for each run of ranges that follow one another, and read
 * only up to the run's last range.
 *
 * @example Usage
 * ```ts
 * import { rangesInOrder } from "./transforms.ts";
 * const open = () => ReadableStream.from([new Uint8Array([0, 1, 2, 3, 4, 5])]);
 * const out = new Uint8Array(await new Response(rangesInOrder(open, [[4, 6], [0, 2]])).arrayBuffer());
 * console.assert(out.join() === "4,5,0,1");
 * ```
 *
 * @param open Opens the payload (once per run).
 * @param ranges `[start, end)` byte ranges, not overlapping.
 * @returns The bytes of the ranges, in their order.
 */
export function rangesInOrder(
  open: () => ReadableStream<Uint8Array>,
  ranges: readonly (readonly [number, number])[],
): ReadableStream<Uint8Array> {
  const runs: (readonly [number, number])[][] = [];
  for (const range of ranges) {
    const run = runs[runs.length - 1];
    const last = run?.[run.length - 1];
    if (run !== undefined && last !== undefined && range[0] >= last[1]) run.push(range);
    else runs.push([range]);
  }
  return concatPayloads(runs.map((run) => () => keepRanges(open(), run)));
}

/**
 * Each group of a payload (`groupBytes`, e.g. one row or one attention
 * head's rows) with its equal segments reordered: segment `order[i]` of the
 * group is written `i`-th (Qwen3.5's `out_proj`, whose columns follow the
 * value heads; the per-head RoPE row permutation of
 * `src/pipeline/qk_row_layout.ts`). Holds one group; each group is handed on
 * in a pooled buffer the sink may free once written, and each input chunk is
 * released once copied.
 *
 * @example Usage
 * ```ts
 * import { reorderSegments } from "./transforms.ts";
 * const input = ReadableStream.from([new Uint8Array([0, 1, 2, 3, 4, 5, 6, 7])]);
 * const out = reorderSegments(input, 4, [1, 0]);
 * console.assert(new Uint8Array(await new Response(out).arrayBuffer()).join() === "2,3,0,1,6,7,4,5");
 * ```
 *
 * @param input The payload, whole groups.
 * @param groupBytes Bytes of a group.
 * @param order The segment written at each place.
 * @param what What is reordered, for the error when the payload ends inside a group.
 * @returns The reordered payload.
 * @throws {RangeError} When a group does not split into `order.length`
 * segments; (from the stream) when the payload ends inside a group.
 */
export function reorderSegments(
  input: ReadableStream<Uint8Array>,
  groupBytes: number,
  order: readonly number[],
  what = "segments",
): ReadableStream<Uint8Array> {
  const segment = groupBytes / order.length;
  if (!Number.isSafeInteger(segment) || segment <= 0) {
    throw new RangeError(`Cannot split ${groupBytes}-byte groups into ${order.length} segments`);
  }
  // Reused for every group: its segments are copied out before it is refilled.
  const group = new Uint8Array(groupBytes);
  let held = 0;
  return input.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        let at = 0;
        while (at < chunk.length) {
          const n = Math.min(groupBytes - held, chunk.length - at);
          group.set(chunk.subarray(at, at + n), held);
          held += n;
          at += n;
          if (held < groupBytes) break;
          // Every byte is written below; the sink may free it once written.
          const out = markReleasable(new Uint8Array(takeBuffer(groupBytes)));
          order.forEach((s, i) =>
            out.set(group.subarray(s * segment, (s + 1) * segment), i * segment)
          );
          controller.enqueue(out);
          held = 0;
        }
        // Copied into the group: free it now if its producer allows.
        releaseChunk(chunk);
      },
      flush() {
        if (held !== 0) {
          throw new RangeError(`Cannot reorder ${what}: the payload ends inside a group`);
        }
      },
    }),
  );
}

/**
 * One payload after another, each opened only when the previous one ends
 * (MoE experts stacked into one 3-D tensor, expert by expert).
 *
 * @param opens The payloads, in order.
 * @returns Their concatenation.
 */
export function concatPayloads(
  opens: readonly (() => ReadableStream<Uint8Array>)[],
): ReadableStream<Uint8Array> {
  let index = 0;
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (index < opens.length) {
        reader ??= opens[index]!().getReader();
        const { done, value } = await reader.read();
        if (!done) {
          controller.enqueue(value);
          return;
        }
        reader = undefined;
        index++;
      }
      controller.close();
    },
    async cancel(reason) {
      await reader?.cancel(reason);
    },
  }, { highWaterMark: 0 });
}

/**
 * The bytes of a payload that fall in the given ranges, in order (half of
 * each expert's rows of a stacked `gate_up_proj`; the first rows of an
 * embedding). Bytes after the last range are not read.
 *
 * @example Usage
 * ```ts
 * import { keepRanges } from "./transforms.ts";
 * const input = ReadableStream.from([new Uint8Array([0, 1, 2, 3]), new Uint8Array([4, 5, 6, 7])]);
 * const out = new Uint8Array(await new Response(keepRanges(input, [[1, 3], [5, 6]])).arrayBuffer());
 * console.assert(out.join() === "1,2,5");
 * ```
 *
 * @param input The payload.
 * @param ranges `[start, end)` byte ranges, sorted and not overlapping.
 * @returns The kept bytes.
 * @throws {RangeError} (from the stream) When the payload ends before the last range.
 */
export function keepRanges(
  input: ReadableStream<Uint8Array>,
  ranges: readonly (readonly [number, number])[],
): ReadableStream<Uint8Array> {
  const reader = input.getReader();
  let at = 0;
  let r = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (r < ranges.length) {
        const { done, value } = await reader.read();
        if (done) {
          throw new RangeError(
            `Cannot take bytes ${ranges[r]![0]}–${ranges[r]![1]}: the payload ends at ${at}`,
          );
        }
        const start = at;
        at += value.length;
        const parts: Uint8Array[] = [];
        while (r < ranges.length) {
          const [from, to] = ranges[r]!;
          const a = Math.max(from, start);
          const b = Math.min(to, at);
          if (a < b) parts.push(value.subarray(a - start, b - start));
          if (to <= at) r++;
          else break;
        }
        if (parts.length > 0) {
          controller.enqueue(parts.length === 1 ? parts[0]!.slice() : concat(...parts));
          if (r >= ranges.length) await reader.cancel();
          return;
        }
      }
      controller.close();
    },
    async cancel(reason) {
      await reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}

/**
 * A payload's equal blocks in another order (rows of a fused Q/K/V
 * regrouped): block `i` of the output is block `order[i]` of the source.
 * Each block is a slice where the source can be sliced; otherwise every run
 * of ascending blocks is one pass over the payload.
 *
 * @example Usage
 * ```ts
 * import { reorderedBlocks } from "./transforms.ts";
 * const bytes = new Uint8Array([0, 1, 2, 3, 4, 5]);
 * const out = reorderedBlocks({ open: () => ReadableStream.from([bytes]) }, 6, [0, 2, 1]);
 * console.assert(new Uint8Array(await new Response(out).arrayBuffer()).join() === "0,1,4,5,2,3");
 * ```
 *
 * @param source The payload: how to read it, and to slice it if it can.
 * @param byteLength Its length.
 * @param order The source block of each output block (a permutation).
 * @returns The reordered payload.
 * @throws {RangeError} When `order` is not a permutation or the length does not divide.
 */
export function reorderedBlocks(
  source: {
    open(): ReadableStream<Uint8Array>;
    slice?: (start: number, end: number) => ReadableStream<Uint8Array>;
  },
  byteLength: number,
  order: readonly number[],
): ReadableStream<Uint8Array> {
  const n = order.length;
  const sorted = [...order].sort((a, b) => a - b);
  if (n === 0 || byteLength % n !== 0 || sorted.some((b, i) => b !== i)) {
    throw new RangeError(
      `Cannot reorder ${byteLength} bytes as ${n} blocks in the order [${order.join(", ")}]`,
    );
  }
  const block = byteLength / n;
  const ranges = order.map((b) => [b * block, (b + 1) * block] as const);
  if (source.slice !== undefined) {
    return concatPayloads(ranges.map(([a, b]) => () => source.slice!(a, b)));
  }
  const runs: (readonly [number, number])[][] = [];
  for (const r of ranges) {
    const run = runs.at(-1);
    if (run !== undefined && run.at(-1)![1] <= r[0]) run.push(r);
    else runs.push([r]);
  }
  return concatPayloads(runs.map((run) => () => keepRanges(source.open(), run)));
}

/**
 * A little-endian I64 payload as I32, each value's low 32 bits (torch's
 * `.to(torch.int32)`: DeepSeek-V4's hash routing table, whose values are
 * expert ids).
 *
 * @example Usage
 * ```ts
 * import { int64AsInt32 } from "./transforms.ts";
 * const input = ReadableStream.from([new Uint8Array(new BigInt64Array([3n, -1n]).buffer)]);
 * const out = new Uint8Array(await new Response(int64AsInt32(input)).arrayBuffer());
 * console.assert(new Int32Array(out.buffer).join() === "3,-1");
 * ```
 *
 * @param input The I64 payload.
 * @returns The I32 payload (a value split across chunks is carried).
 * @throws {RangeError} (from the stream) When the payload is not whole 8-byte values.
 */
export function int64AsInt32(input: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  let carry = new Uint8Array(0);
  return input.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const bytes = carry.length === 0 ? chunk : concat(carry, chunk);
        const whole = bytes.length - (bytes.length % 8);
        const out = new Uint8Array(whole / 2);
        for (let i = 0, o = 0; i < whole; i += 8, o += 4) out.set(bytes.subarray(i, i + 4), o);
        carry = bytes.slice(whole);
        if (out.length > 0) controller.enqueue(out);
      },
      flush() {
        if (carry.length !== 0) {
          throw new RangeError(
            `Cannot read I64 values: the payload ends ${carry.length} bytes into one`,
          );
        }
      },
    }),
  );
}

/**
 * `length` zero bytes, a megabyte at a time (rows padding a tensor: zero in
 * every float type).
 *
 * @param length How many.
 * @returns The bytes.
 */
export function zeroBytes(length: number): ReadableStream<Uint8Array> {
  const chunk = 1 << 20;
  let left = length;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (left <= 0) {
        controller.close();
        return;
      }
      const n = Math.min(chunk, left);
      left -= n;
      controller.enqueue(new Uint8Array(n));
    },
  }, { highWaterMark: 0 });
}

/**
 * The parts' bytes one after another, in a new array.
 *
 * @param parts The byte arrays.
 * @returns Their concatenation.
 */
export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * Reads exact byte counts from a payload stream into the caller's buffer,
 * giving each source chunk back (`releaseChunk`) once it is copied out.
 */
class ExactReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #what: string;
  #chunk: Uint8Array | undefined;
  #at = 0;

  constructor(input: ReadableStream<Uint8Array>, what: string) {
    this.#reader = input.getReader();
    this.#what = what;
  }

  /** Fill `out` with the next `out.length` bytes. */
  async readInto(out: Uint8Array): Promise<void> {
    let filled = 0;
    while (filled < out.length) {
      if (this.#chunk === undefined) {
        const { done, value } = await this.#reader.read();
        if (done) {
          throw new RangeError(
            `Cannot read ${this.#what}: the payload ends ${out.length - filled} bytes early`,
          );
        }
        [this.#chunk, this.#at] = [value, 0];
      }
      const take = Math.min(out.length - filled, this.#chunk.length - this.#at);
      out.set(this.#chunk.subarray(this.#at, this.#at + take), filled);
      [filled, this.#at] = [filled + take, this.#at + take];
      if (this.#at >= this.#chunk.length) {
        releaseChunk(this.#chunk);
        this.#chunk = undefined;
      }
    }
  }

  cancel(reason?: unknown): Promise<void> {
    return this.#reader.cancel(reason);
  }
}

/** A chunk the sink may give back for reuse once written. */
function outChunk(length: number): Uint8Array {
  return markReleasable(new Uint8Array(takeBuffer(length)));
}

/** Rows of packed MXFP4 written per chunk. */
const MXFP4_ROWS_PER_CHUNK = 256;

/**
 * ggml's MXFP4 blocks (17 bytes: the E8M0 exponent, then 16 bytes holding
 * value `j` in the low nibble and `j + 16` in the high nibble of byte `j`)
 * from a Hugging Face checkpoint's `*_blocks` (16 bytes per 32 values, value
 * `2i` in the low and `2i + 1` in the high nibble of byte `i`) and `*_scales`
 * (one exponent per 32 values), as llama.cpp's converter repacks gpt-oss
 * (`GptOssModel.repack_mxfp4`, `transform_nibble_layout`). Only every
 * `step`-th row from `start` is kept (`[:, ::2]` and `[:, 1::2]` of the
 * interleaved gate/up rows). Streams both payloads, 256 rows at a time.
 *
 * @example Usage
 * ```ts
 * import { repackMxfp4 } from "./transforms.ts";
 * // Value k of the 32 is the 4-bit code k % 16: byte i holds values 2i and 2i + 1.
 * const blocks = ReadableStream.from([Uint8Array.from({ length: 16 }, (_, i) => ((2 * i + 1) % 16) << 4 | (2 * i) % 16)]);
 * const scales = ReadableStream.from([new Uint8Array([127])]);
 * const out = repackMxfp4(blocks, scales, { rows: 1, groups: 1, start: 0, step: 1 });
 * const bytes = new Uint8Array(await new Response(out).arrayBuffer());
 * // ggml's byte j holds values j and j + 16: codes j % 16 and j % 16 again.
 * console.assert(bytes[0] === 127 && bytes[2] === (1 << 4 | 1));
 * ```
 *
 * @param blocks The `*_blocks` payload (`[rows, groups, 16]`, any leading dimensions folded into rows).
 * @param scales The `*_scales` payload (`[rows, groups]`).
 * @param layout Rows and groups per row, and which rows to keep.
 * @returns The kept rows as MXFP4 blocks.
 * @throws {RangeError} (from the stream) When a payload ends early.
 */
export function repackMxfp4(
  blocks: ReadableStream<Uint8Array>,
  scales: ReadableStream<Uint8Array>,
  layout: { rows: number; groups: number; start: number; step: number },
): ReadableStream<Uint8Array> {
  const { rows, groups, start, step } = layout;
  const sources = [
    { stream: blocks, what: "MXFP4 blocks", rowBytes: groups * 16 },
    { stream: scales, what: "MXFP4 scales", rowBytes: groups },
  ] as const;
  return rowBands(sources, rows, (packed, exps, row, end) => {
    const keptRows: number[] = [];
    for (let r = row; r < end; r++) if (r >= start && (r - start) % step === 0) keptRows.push(r);
    const out = outChunk(keptRows.length * groups * 17);
    let at = 0;
    for (const r of keptRows) {
      for (let g = 0; g < groups; g++) {
        const i = (r - row) * groups + g;
        out[at] = exps[i]!;
        const src = i * 16;
        for (let j = 0; j < 16; j++) {
          // Value k sits in byte k >> 1, low nibble when k is even.
          const lo = nibble(packed, src, j);
          const hi = nibble(packed, src, j + 16);
          out[at + 1 + j] = lo | (hi << 4);
        }
        at += 17;
      }
    }
    return out;
  });
}

/**
 * Two payloads of `rows` rows each (codes and their scales) read together,
 * {@linkcode MXFP4_ROWS_PER_CHUNK} rows at a time into reused buffers, each
 * band turned into one output chunk by `make`.
 */
function rowBands(
  sources: readonly [
    { stream: ReadableStream<Uint8Array>; what: string; rowBytes: number },
    { stream: ReadableStream<Uint8Array>; what: string; rowBytes: number },
  ],
  rows: number,
  make: (a: Uint8Array, b: Uint8Array, row: number, end: number) => Uint8Array,
): ReadableStream<Uint8Array> {
  const [a, b] = sources.map((s) => new ExactReader(s.stream, s.what)) as [
    ExactReader,
    ExactReader,
  ];
  const band = Math.min(rows, MXFP4_ROWS_PER_CHUNK);
  const aAll = new Uint8Array(band * sources[0].rowBytes);
  const bAll = new Uint8Array(band * sources[1].rowBytes);
  let row = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (row >= rows) {
        controller.close();
        return;
      }
      const end = Math.min(rows, row + MXFP4_ROWS_PER_CHUNK);
      const aBand = aAll.subarray(0, (end - row) * sources[0].rowBytes);
      const bBand = bAll.subarray(0, (end - row) * sources[1].rowBytes);
      await a.readInto(aBand);
      await b.readInto(bBand);
      const out = make(aBand, bBand, row, end);
      row = end;
      controller.enqueue(out);
    },
    async cancel(reason) {
      await Promise.all([a.cancel(reason), b.cancel(reason)]);
    },
  }, { highWaterMark: 0 });
}

/** Value `k` of a Hugging Face MXFP4 group starting at byte `at`. */
function nibble(packed: Uint8Array, at: number, k: number): number {
  const byte = packed[at + (k >> 1)]!;
  return (k & 1) === 0 ? byte & 0x0f : byte >> 4;
}

/**
 * ggml's NVFP4 blocks (36 bytes per 64 values: four UE4M3 scales, then four
 * 8-byte groups whose byte `j` holds value `j` low and `j + 8` high) from
 * NVIDIA's NVFP4 (codes `[rows, cols / 2]`, value `2i` in byte `i`'s low
 * nibble; E4M3 scales `[rows, cols / 16]`), as llama.cpp's converter repacks
 * them (`_nvfp4_pack`): the scales' sign bits dropped, the values unchanged.
 * Streams both payloads, 256 rows at a time.
 *
 * @example Usage
 * ```ts
 * import { repackNvfp4 } from "./transforms.ts";
 * // 64 values, value k the code k % 16; scales 0x38 (1.0), one with its sign bit set.
 * const codes = ReadableStream.from([Uint8Array.from({ length: 32 }, (_, i) => ((2 * i + 1) % 16) << 4 | (2 * i) % 16)]);
 * const scales = ReadableStream.from([new Uint8Array([0x38, 0xb8, 0x38, 0x38])]);
 * const out = repackNvfp4(codes, scales, { rows: 1, cols: 64 });
 * const bytes = new Uint8Array(await new Response(out).arrayBuffer());
 * // ggml's byte j of a group holds values j and j + 8.
 * console.assert(bytes[1] === 0x38 && bytes[4] === (8 << 4 | 0));
 * ```
 *
 * @param codes The codes' payload.
 * @param scales The scales' payload.
 * @param layout Rows, and values per row (a multiple of 64).
 * @returns The rows as NVFP4 blocks.
 * @throws {RangeError} (from the stream) When a payload ends early.
 */
export function repackNvfp4(
  codes: ReadableStream<Uint8Array>,
  scales: ReadableStream<Uint8Array>,
  layout: { rows: number; cols: number },
): ReadableStream<Uint8Array> {
  const { rows, cols } = layout;
  const sources = [
    { stream: codes, what: "NVFP4 codes", rowBytes: cols / 2 },
    { stream: scales, what: "NVFP4 scales", rowBytes: cols / 16 },
  ] as const;
  return rowBands(sources, rows, (packed, d, row, end) => {
    const blocks = (end - row) * cols / 64;
    const out = outChunk(blocks * 36);
    for (let b = 0; b < blocks; b++) {
      const o = b * 36;
      for (let k = 0; k < 4; k++) {
        const group = b * 4 + k;
        out[o + k] = d[group]! & 0x7f;
        for (let j = 0; j < 8; j++) {
          out[o + 4 + k * 8 + j] = nibble(packed, group * 8, j) |
            (nibble(packed, group * 8, j + 8) << 4);
        }
      }
    }
    return out;
  });
}
