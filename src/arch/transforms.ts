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

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
