/**
 * `transposedExperts` (Llama 4's stacked experts on the way to GGUF) against
 * a plain transpose, from payloads in chunks that cut rows and experts
 * anywhere, and for an expert larger than one output chunk; a payload of the
 * wrong length is an error.
 */

import assert from "node:assert/strict";
import { transposedExperts } from "../../src/pipeline/expert_transpose.ts";
import type { TensorEntry } from "../../src/tensor.ts";

type Shape = [number, number, number];

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

function entry(bytes: Uint8Array, shape: Shape, chunk: number): TensorEntry {
  return {
    info: { name: "x", dtype: "F32", shape, byteLength: bytes.length },
    open: () => {
      const parts: Uint8Array[] = [];
      for (let at = 0; at < bytes.length; at += chunk) parts.push(bytes.slice(at, at + chunk));
      return ReadableStream.from(parts);
    },
  };
}

async function run(source: TensorEntry, shape: Shape, from: number, count: number) {
  const stream = transposedExperts(source, { shape, elementBytes: 4, from, count });
  const chunks: number[] = [];
  const out = new Float32Array(
    await new Response(stream.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(c, controller) {
          chunks.push(c.length);
          controller.enqueue(c);
        },
      }),
    )).arrayBuffer(),
  );
  return { out, largest: Math.max(...chunks) };
}

Deno.test("transposedExperts() equals a plain transpose of each part, whatever the chunks", async (t) => {
  const shape: Shape = [3, 5, 8];
  const src = values(shape);
  const bytes = new Uint8Array(src.buffer);
  for (const [from, count] of [[0, 4], [4, 4], [0, 8], [3, 2]] as const) {
    const want = expected(src, shape, from, count);
    for (const chunk of [7, 32, 160, bytes.length]) {
      await t.step(`columns ${from}+${count}, chunks of ${chunk}`, async () => {
        assert.deepEqual((await run(entry(bytes, shape, chunk), shape, from, count)).out, want);
      });
    }
  }
});

Deno.test("transposedExperts() writes an expert larger than 4 MiB in chunks of at most 4 MiB", async () => {
  const shape: Shape = [2, 2048, 1024];
  const src = values(shape);
  const { out, largest } = await run(
    entry(new Uint8Array(src.buffer), shape, 1 << 20),
    shape,
    0,
    1024,
  );
  assert.deepEqual(out, expected(src, shape, 0, 1024));
  assert.equal(largest, 4 << 20);
});

Deno.test("transposedExperts() rejects a payload that ends early or runs long", async () => {
  const shape: Shape = [3, 5, 8];
  const bytes = new Uint8Array(values(shape).buffer);
  await assert.rejects(
    run(entry(bytes.slice(0, bytes.length - 40), shape, 64), shape, 0, 4),
    RangeError,
  );
  const longer = new Uint8Array(bytes.length + 8);
  longer.set(bytes);
  await assert.rejects(run(entry(longer, shape, 64), shape, 0, 4), RangeError);
});
