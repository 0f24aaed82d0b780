// This module is browser compatible.

/**
 * The streaming byte transforms families use on the way between formats
 * (DESIGN.md §2.5a): each reads its source chunk by chunk and holds at most
 * one chunk (plus a few carried bytes), never a whole tensor.
 *
 * @module
 */

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
  let carry = new Uint8Array(0);
  return input.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const bytes = carry.length === 0 ? chunk : concat(carry, chunk);
        const whole = bytes.length - (bytes.length % 4);
        carry = bytes.slice(whole);
        if (whole === 0) return;
        const out = new Uint8Array(whole);
        out.set(bytes.subarray(0, whole));
        const view = new DataView(out.buffer);
        for (let at = 0; at < whole; at += 4) {
          view.setFloat32(at, view.getFloat32(at, true) + value, true);
        }
        controller.enqueue(out);
      },
      flush() {
        if (carry.length !== 0) {
          throw new RangeError(`Cannot shift values: the payload ends inside a float32`);
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
 * Columns `[from, to)` of each of `count` row-major `rows × cols` matrices,
 * transposed (`(to − from) × rows` each): Qwen3-VL-MoE's experts, which its
 * checkpoints store as `[experts, hidden, 2 × ff]` and GGUF as
 * `[experts, ff, hidden]` (gate and up columns apart). One matrix is held at a time.
 *
 * @example Usage
 * ```ts
 * import { transposedColumns } from "./transforms.ts";
 * // One 2 × 3 matrix of bytes [[0, 1, 2], [3, 4, 5]]: columns 1–2, transposed.
 * const input = ReadableStream.from([new Uint8Array([0, 1, 2, 3, 4, 5])]);
 * const out = transposedColumns(input, { count: 1, rows: 2, cols: 3, elementBytes: 1 }, 1, 3);
 * console.assert(new Uint8Array(await new Response(out).arrayBuffer()).join() === "1,4,2,5");
 * ```
 *
 * @param input The payload: the matrices one after another.
 * @param shape How many matrices, their rows and columns, and the bytes of one element.
 * @param from First column kept.
 * @param to Past the last column kept.
 * @returns The transposed columns, matrix after matrix.
 * @throws {RangeError} (from the stream) When the payload is not `count` whole matrices.
 */
export function transposedColumns(
  input: ReadableStream<Uint8Array>,
  shape: { count: number; rows: number; cols: number; elementBytes: number },
  from: number,
  to: number,
): ReadableStream<Uint8Array> {
  const { count, rows, cols, elementBytes: eb } = shape;
  const reader = input.getReader();
  const matrix = new Uint8Array(rows * cols * eb);
  let filled = 0;
  let done = 0;
  let pending: Uint8Array | undefined;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (done < count) {
        if (pending === undefined || pending.length === 0) {
          const next = await reader.read();
          if (next.done) {
            throw new RangeError(
              `Cannot transpose matrix ${
                done + 1
              } of ${count}: the payload ends ${filled} bytes into it`,
            );
          }
          pending = next.value;
        }
        const take = Math.min(pending.length, matrix.length - filled);
        matrix.set(pending.subarray(0, take), filled);
        pending = pending.subarray(take);
        filled += take;
        if (filled < matrix.length) continue;
        filled = 0;
        done++;
        controller.enqueue(transpose(matrix, rows, cols, eb, from, to));
        if (done === count) await reader.cancel();
        return;
      }
      controller.close();
    },
    async cancel(reason) {
      await reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}

function transpose(
  m: Uint8Array<ArrayBuffer>,
  rows: number,
  cols: number,
  eb: number,
  from: number,
  to: number,
): Uint8Array {
  const out = new Uint8Array((to - from) * rows * eb);
  // Whole elements at a time for 2- and 4-byte types (both buffers are fresh, so aligned).
  if (eb === 2 || eb === 4) {
    const View = eb === 2 ? Uint16Array : Uint32Array;
    const a = new View(m.buffer, m.byteOffset, m.length / eb);
    const b = new View(out.buffer);
    for (let c = from; c < to; c++) {
      const base = (c - from) * rows;
      for (let r = 0; r < rows; r++) b[base + r] = a[r * cols + c]!;
    }
    return out;
  }
  for (let c = from; c < to; c++) {
    const base = (c - from) * rows * eb;
    for (let r = 0; r < rows; r++) {
      const src = (r * cols + c) * eb;
      const dst = base + r * eb;
      for (let b = 0; b < eb; b++) out[dst + b] = m[src + b]!;
    }
  }
  return out;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
