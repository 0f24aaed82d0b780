/**
 * `transposedExperts` (Llama 4's stacked experts on the way to GGUF) against
 * a plain transpose: from a random-access source in tiles of every width
 * (whole rows read, or a window of each row), and from a source read only in
 * order, in chunks that cut rows anywhere.
 */

import assert from "node:assert/strict";
import { transposedExperts } from "../../src/pipeline/expert_transpose.ts";
import type { TensorEntry } from "../../src/tensor.ts";

const [E, R, C] = [3, 5, 8];

function values(): Float32Array {
  return Float32Array.from({ length: E * R * C }, (_, i) => i * 0.5 - 7);
}

/** `src[e][r][from + c]` laid out as `[E][count][R]`. */
function expected(src: Float32Array, from: number, count: number): Float32Array {
  const out = new Float32Array(E * count * R);
  for (let e = 0; e < E; e++) {
    for (let c = 0; c < count; c++) {
      for (let r = 0; r < R; r++) out[(e * count + c) * R + r] = src[(e * R + r) * C + from + c]!;
    }
  }
  return out;
}

function entry(bytes: Uint8Array, chunk: number, random: boolean): TensorEntry {
  const chunks = (start: number, end: number) => {
    const parts: Uint8Array[] = [];
    for (let at = start; at < end; at += chunk) {
      parts.push(bytes.slice(at, Math.min(end, at + chunk)));
    }
    return ReadableStream.from(parts);
  };
  return {
    info: { name: "x", dtype: "F32", shape: [E, R, C], byteLength: bytes.length },
    open: () => chunks(0, bytes.length),
    ...(random ? { slice: chunks } : {}),
  };
}

async function run(source: TensorEntry, from: number, count: number, tileBytes?: number) {
  const stream = transposedExperts(source, {
    shape: [E, R, C],
    elementBytes: 4,
    from,
    count,
    ...(tileBytes === undefined ? {} : { tileBytes }),
  });
  return new Float32Array(await new Response(stream).arrayBuffer());
}

Deno.test("transposedExperts() equals a plain transpose of each part, in tiles and in order", async (t) => {
  const src = values();
  const bytes = new Uint8Array(src.buffer);
  for (const [from, count] of [[0, 4], [4, 4], [0, 8], [3, 2]] as const) {
    const want = expected(src, from, count);
    // Tiles one column wide (a window of each row), two (whole rows when the part is most of one), all.
    for (const tile of [R * 4, 2 * R * 4, undefined]) {
      await t.step(
        `columns ${from}+${count}, random access, tile ${tile ?? "default"}`,
        async () => {
          assert.deepEqual(await run(entry(bytes, 12, true), from, count, tile), want);
        },
      );
    }
    for (const chunk of [7, 32, bytes.length]) {
      await t.step(`columns ${from}+${count}, in order, chunks of ${chunk}`, async () => {
        assert.deepEqual(await run(entry(bytes, chunk, false), from, count), want);
      });
    }
  }
});

Deno.test("transposedExperts() rejects a payload that ends early", async () => {
  const bytes = new Uint8Array(values().buffer).slice(0, E * R * C * 4 - 40);
  const source: TensorEntry = {
    info: { name: "x", dtype: "F32", shape: [E, R, C], byteLength: bytes.length },
    open: () => ReadableStream.from([bytes]),
  };
  await assert.rejects(run(source, 0, 4), RangeError);
});
