/**
 * `columnsAsRows` (stacked experts stored `[experts, in, out]` on the way to
 * GGUF's `[experts, out, in]`: Llama 4's and Qwen3-VL-MoE's column windows,
 * gpt-oss's interleaved columns) against a plain transpose, from payloads in
 * chunks that cut values, rows and experts anywhere; chunks of at most 1 MiB
 * given to and taken from the chunk pool; a payload of the wrong length is
 * an error.
 */

import assert from "node:assert/strict";
import { columnsAsRows, transposedPayload, transposedShape } from "../../src/arch/transforms.ts";
import { markReleasable, releaseChunk } from "../../src/io/byte_source.ts";
import { all, chunked } from "./_payloads.ts";

type Shape = [number, number, number];

/** `bytes` in chunks of `size` bytes. */
function evenly(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  return chunked(bytes, Array.from({ length: Math.ceil(bytes.length / size) }, () => size));
}

function values(shape: Shape): Float32Array {
  return Float32Array.from({ length: shape[0] * shape[1] * shape[2] }, (_, i) => i * 0.5 - 7);
}

/** `src[e][r][from + c]` laid out as `[E][count][R]`. */
function expected(src: Float32Array, [E, R, C]: Shape, from: number, count: number): Float32Array {
  const out = new Float32Array(E * count * R);
  for (let e = 0; e < E; e++) {
    for (let c = 0; c < count; c++) {
      for (let r = 0; r < R; r++) out[(e * count + c) * R + r] = src[(e * R + r) * C + from + c]!;
    }
  }
  return out;
}

/** A window of F32 columns of `src` as rows, and the largest chunk written. */
async function window(
  input: ReadableStream<Uint8Array>,
  shape: Shape,
  from: number,
  count: number,
) {
  const [matrices, rows, cols] = shape;
  const stream = columnsAsRows(input, { matrices, rows, cols, width: 4, start: from, count });
  const chunks: number[] = [];
  const out = new Float32Array(
    (await all(stream.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(c, controller) {
          chunks.push(c.length);
          controller.enqueue(c);
        },
      }),
    ))).buffer,
  );
  return { out, largest: Math.max(...chunks) };
}

Deno.test("columnsAsRows() equals a plain transpose of each window of columns, whatever the chunks", async (t) => {
  const shape: Shape = [3, 5, 8];
  const src = values(shape);
  const bytes = new Uint8Array(src.buffer);
  for (const [from, count] of [[0, 4], [4, 4], [0, 8], [3, 2]] as const) {
    const want = expected(src, shape, from, count);
    for (const chunk of [7, 32, 160, bytes.length]) {
      await t.step(`columns ${from}+${count}, chunks of ${chunk}`, async () => {
        assert.deepEqual((await window(evenly(bytes, chunk), shape, from, count)).out, want);
      });
    }
  }
});

Deno.test("columnsAsRows(): gpt-oss's interleaved gate/up columns as rows, BF16-wide values, across chunk edges", async () => {
  // 2 experts of [3 rows, 4 cols] of 2-byte values: value (e, r, c) = e·100 + r·10 + c.
  const [matrices, rows, cols, width] = [2, 3, 4, 2];
  const values = new Uint16Array(matrices * rows * cols);
  for (let e = 0; e < matrices; e++) {
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) values[(e * rows + r) * cols + c] = e * 100 + r * 10 + c;
    }
  }
  const bytes = new Uint8Array(values.buffer);
  for (const [start, step] of [[0, 2], [1, 2], [0, 1]] as const) {
    // Cuts split values and rows, and leave whole rows at odd offsets.
    const out = await all(
      columnsAsRows(chunked(bytes, [1, 5, 3, 17]), { matrices, rows, cols, width, start, step }),
    );
    const want: number[] = [];
    for (let e = 0; e < matrices; e++) {
      for (let c = start; c < cols; c += step) {
        for (let r = 0; r < rows; r++) want.push(e * 100 + r * 10 + c);
      }
    }
    assert.deepEqual([...new Uint16Array(out.buffer)], want, `start ${start}, step ${step}`);
  }
  await assert.rejects(
    all(
      columnsAsRows(chunked(bytes.subarray(0, 30), []), {
        matrices,
        rows,
        cols,
        width,
        start: 0,
        step: 1,
      }),
    ),
    /ends 18 bytes early/,
  );
});

Deno.test("columnsAsRows() moves values no typed array holds (8 bytes) whole, strided", async () => {
  // 2 experts of [2 rows, 3 cols] of 8-byte values; byte i of value v is v·8 + i.
  const bytes = Uint8Array.from({ length: 2 * 2 * 3 * 8 }, (_, i) => i);
  const out = await all(
    columnsAsRows(chunked(bytes, [5, 11, 9]), {
      matrices: 2,
      rows: 2,
      cols: 3,
      width: 8,
      start: 0,
      step: 2,
    }),
  );
  const order = [0, 3, 2, 5, 6, 9, 8, 11]; // per expert: column 0, then column 2
  assert.deepEqual([...out], order.flatMap((v) => Array.from({ length: 8 }, (_, i) => v * 8 + i)));
});

Deno.test("columnsAsRows() writes an expert larger than 1 MiB in chunks of at most 1 MiB", async () => {
  const shape: Shape = [2, 2048, 1024];
  const src = values(shape);
  const { out, largest } = await window(
    evenly(new Uint8Array(src.buffer), 1 << 20),
    shape,
    0,
    1024,
  );
  assert.deepEqual(out, expected(src, shape, 0, 1024));
  assert.equal(largest, 1 << 20);
});

Deno.test("columnsAsRows() gives source chunks back once copied, and its chunks are the sink's to give back", async () => {
  const shape: Shape = [2, 4, 6];
  const bytes = new Uint8Array(values(shape).buffer);
  const sources: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += 20) {
    sources.push(markReleasable(bytes.slice(at, at + 20)));
  }
  const stream = columnsAsRows(ReadableStream.from(sources), {
    matrices: 2,
    rows: 4,
    cols: 6,
    width: 4,
    start: 1,
    count: 3,
  });
  let written = 0;
  for await (const chunk of stream) {
    written += chunk.length;
    releaseChunk(chunk);
    assert.equal(chunk.length, 0, "an output chunk is not releasable");
  }
  assert.equal(written, 2 * 3 * 4 * 4);
  assert.deepEqual(sources.map((c) => c.length), sources.map(() => 0));
});

Deno.test("columnsAsRows() rejects a payload that ends early or runs long", async () => {
  const shape: Shape = [3, 5, 8];
  const bytes = new Uint8Array(values(shape).buffer);
  await assert.rejects(
    window(evenly(bytes.slice(0, bytes.length - 40), 64), shape, 0, 4),
    /Cannot read the stacked matrices: the payload ends 40 bytes early/,
  );
  const longer = new Uint8Array(bytes.length + 8);
  longer.set(bytes);
  await assert.rejects(
    window(evenly(longer, 64), shape, 0, 4),
    /Cannot read the stacked matrices: the payload is longer than 480 bytes/,
  );
});

Deno.test("columnsAsRows() refuses columns outside the matrix before reading", () => {
  const input = chunked(new Uint8Array(8), []);
  for (const bad of [{ start: 2, count: 3 }, { start: 1, step: 2, count: 3 }, { step: 0 }]) {
    assert.throws(
      () => columnsAsRows(input, { matrices: 1, rows: 2, cols: 4, width: 1, ...bad }),
      (e) => e instanceof RangeError && /are not inside \[2, 4\] matrices/.test(e.message),
      JSON.stringify(bad),
    );
  }
  assert.equal(input.locked, false);
});

Deno.test("columnsAsRows() cancelled cancels its source", async () => {
  let reason: unknown;
  const source = new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(new Uint8Array(16));
    },
    cancel(r) {
      reason = r;
    },
  });
  const reader = columnsAsRows(source, { matrices: 4, rows: 2, cols: 8, width: 2 }).getReader();
  await reader.read();
  await reader.cancel("enough");
  assert.equal(reason, "enough");
});

Deno.test("transposedPayload(): a matrix's columns as rows, in chunks of any size; a tensor not 2-D is refused", async () => {
  // [2, 3] of u16: 0 1 2 / 3 4 5 → [3, 2]: 0 3 / 1 4 / 2 5.
  const values = new Uint16Array([0, 1, 2, 3, 4, 5]);
  const bytes = new Uint8Array(values.buffer);
  const info = { name: "m", shape: [2, 3], byteLength: 12 };
  const input = ReadableStream.from([bytes.slice(0, 5), bytes.slice(5)]);
  const out = new Uint8Array(await new Response(transposedPayload(input, info)).arrayBuffer());
  assert.deepEqual([...new Uint16Array(out.buffer)], [0, 3, 1, 4, 2, 5]);
  assert.deepEqual(transposedShape(info), [3, 2]);
  assert.throws(() => transposedShape({ name: "v", shape: [6] }), /"v"/);
});
