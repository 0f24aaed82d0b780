/**
 * The family layer's streaming transforms on small real payloads, cut into
 * chunks at awkward places: values carried across chunks, ranges across
 * chunk boundaries, payloads opened one after another.
 */

import assert from "node:assert/strict";
import {
  addToFloat32,
  concatPayloads,
  int64AsInt32,
  keepRanges,
  mapFloats,
  rangesInOrder,
  reorderedBlocks,
  reorderSegments,
  repackMxfp4,
} from "../../src/arch/transforms.ts";
import { all, chunked } from "./_payloads.ts";

Deno.test("addToFloat32(): Gemma's +1, with float32s split across chunks", async () => {
  // Gemma stores w − 1; these are values a norm weight has.
  const values = new Float32Array([-0.5, 0, 1.25, -1, 3.1415927, 1e-8]);
  const bytes = new Uint8Array(values.buffer);
  const out = new Float32Array((await all(addToFloat32(chunked(bytes, [3, 6, 1, 9]), 1))).buffer);
  assert.deepEqual([...out], [...values].map((v) => Math.fround(v + 1)));
});

Deno.test("addToFloat32(): a payload ending inside a float32 fails", async () => {
  await assert.rejects(all(addToFloat32(chunked(new Uint8Array(6), [4]), 1)), /inside a float32/);
});

Deno.test("keepRanges(): each expert's gate rows of a stacked gate_up, across chunk edges", async () => {
  // 2 experts × 4 rows × 3 bytes: the gate is each expert's first 2 rows.
  const bytes = Uint8Array.from({ length: 24 }, (_, i) => i);
  const ranges: [number, number][] = [[0, 6], [12, 18]];
  for (const cuts of [[], [5], [1, 1, 1, 10], [7, 7, 7]]) {
    const out = await all(keepRanges(chunked(bytes, cuts), ranges));
    assert.deepEqual([...out], [0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17], `cuts ${cuts}`);
  }
  const up = await all(keepRanges(chunked(bytes, [5, 5]), [[6, 12], [18, 24]]));
  assert.deepEqual([...up], [6, 7, 8, 9, 10, 11, 18, 19, 20, 21, 22, 23]);
});

Deno.test("keepRanges(): stops reading after the last range, fails on a short payload", async () => {
  let pulled = 0;
  const source = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled++;
      controller.enqueue(new Uint8Array(4).fill(pulled));
    },
  });
  assert.deepEqual([...await all(keepRanges(source, [[2, 5]]))], [1, 1, 2]);
  assert.equal(pulled <= 3, true, `read ${pulled} chunks of an endless payload`);
  await assert.rejects(all(keepRanges(chunked(new Uint8Array(4), []), [[2, 8]])), /ends at 4/);
});

Deno.test("concatPayloads(): experts in order, each opened only when the previous one ended", async () => {
  const opened: number[] = [];
  const expert = (e: number) => () => {
    opened.push(e);
    return chunked(new Uint8Array(5).fill(e), [2]);
  };
  const stream = concatPayloads([expert(0), expert(1), expert(2)]);
  const reader = stream.getReader();
  const first = await reader.read();
  assert.deepEqual([...first.value!], [0, 0]);
  assert.deepEqual(opened, [0]);
  const rest: number[] = [];
  for (let r = await reader.read(); !r.done; r = await reader.read()) rest.push(...r.value);
  assert.deepEqual(rest, [0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2]);
  assert.deepEqual(opened, [0, 1, 2]);
});

Deno.test("repackMxfp4(): the exponent first, value j and j + 16 in byte j's nibbles, every other row, across chunk edges", async () => {
  // 4 rows of 2 groups: value k of group g of row r has code (r + g + k) & 15.
  const [rows, groups] = [4, 2];
  const code = (r: number, g: number, k: number) => (r + g + k) & 15;
  const blocks = new Uint8Array(rows * groups * 16);
  const scales = new Uint8Array(rows * groups);
  for (let r = 0; r < rows; r++) {
    for (let g = 0; g < groups; g++) {
      scales[r * groups + g] = 120 + r * groups + g;
      for (let i = 0; i < 16; i++) {
        blocks[(r * groups + g) * 16 + i] = code(r, g, 2 * i) | (code(r, g, 2 * i + 1) << 4);
      }
    }
  }
  const out = await all(
    repackMxfp4(chunked(blocks, [7, 40]), chunked(scales, [3]), {
      rows,
      groups,
      start: 1,
      step: 2,
    }),
  );
  const want: number[] = [];
  for (const r of [1, 3]) {
    for (let g = 0; g < groups; g++) {
      want.push(120 + r * groups + g);
      for (let j = 0; j < 16; j++) want.push(code(r, g, j) | (code(r, g, j + 16) << 4));
    }
  }
  assert.deepEqual([...out], want);
});

Deno.test("mapFloats(): Qwen3-Next's −exp(A_log) in float32, from F32 and from BF16, written as F32", async () => {
  const values = new Float32Array([-4.5, 0, 0.6931472, 2.7725887, -0.001]);
  const f32 = new Float32Array(
    (await all(
      mapFloats(chunked(new Uint8Array(values.buffer), [3, 5]), "F32", (v) => -Math.exp(v)),
    ))
      .buffer,
  );
  assert.deepEqual([...f32], [...values].map((v) => Math.fround(-Math.exp(v))));
  // BF16 0x3F31 = 0.69140625 and 0x4000 = 2: −exp in float32, not rounded back to BF16
  // (the converter's −exp of the fixture qwen35-bf16's A_log matched only so).
  const bf16 = new Uint8Array([0x31, 0x3f, 0x00, 0x40]);
  const out = new Float32Array(
    (await all(mapFloats(chunked(bf16, [1]), "BF16", (v) => -Math.exp(v)))).buffer,
  );
  assert.deepEqual([...out], [Math.fround(-Math.exp(0.69140625)), Math.fround(-Math.exp(2))]);
  await assert.rejects(
    all(mapFloats(chunked(new Uint8Array(3), []), "BF16", (v) => v)),
    /bfloat16/,
  );
});

Deno.test("rangesInOrder(): in_proj_qkvz's q, k, v rows of each key head, one pass per sorted run", async () => {
  // 2 key heads × [q, k, v, z] of 2 bytes each.
  const bytes = Uint8Array.from({ length: 16 }, (_, i) => i);
  let opened = 0;
  const open = () => {
    opened++;
    return chunked(bytes, [3, 5]);
  };
  const q = [[0, 2], [8, 10]] as const;
  const k = [[2, 4], [10, 12]] as const;
  const v = [[4, 6], [12, 14]] as const;
  const out = await all(rangesInOrder(open, [...q, ...k, ...v]));
  assert.deepEqual([...out], [0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13]);
  assert.equal(opened, 3);
});

Deno.test("reorderSegments(): each row's value-head columns from grouped to tiled order, across chunk edges", async () => {
  // 2 rows × 4 segments of 2 bytes; order [0, 2, 1, 3] (2 key heads × 2 value heads each).
  const bytes = Uint8Array.from({ length: 16 }, (_, i) => i);
  for (const cuts of [[], [3], [1, 7, 5]]) {
    const out = await all(reorderSegments(chunked(bytes, cuts), 8, [0, 2, 1, 3]));
    assert.deepEqual([...out], [0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15], `${cuts}`);
  }
  await assert.rejects(all(reorderSegments(chunked(bytes, []), 12, [0, 1])), /inside a group/);
  assert.throws(() => reorderSegments(chunked(bytes, []), 7, [0, 1]), /segments/);
});

Deno.test("reorderedBlocks(): GPT-NeoX's per-head q/k/v regrouped and back, by slices or by passes over the stream", async () => {
  // 2 heads × (q, k, v), blocks of 3 bytes: h0q h0k h0v h1q h1k h1v.
  const bytes = Uint8Array.from({ length: 18 }, (_, i) => i);
  const byPart = [0, 3, 1, 4, 2, 5]; // q q k k v v
  const streamed = { open: () => chunked(bytes, [4, 4, 4, 6]) };
  const sliced = {
    ...streamed,
    slice: (a: number, b: number) => chunked(bytes.slice(a, b), [b - a]),
  };
  const want = byPart.flatMap((b) => [3 * b, 3 * b + 1, 3 * b + 2]);
  for (const source of [streamed, sliced]) {
    const out = await all(reorderedBlocks(source, 18, byPart));
    assert.deepEqual([...out], want);
    const back = byPart.map((_, i) => byPart.indexOf(i));
    const again = await all(reorderedBlocks({ open: () => chunked(out, [18]) }, 18, back));
    assert.deepEqual([...again], [...bytes]);
  }
  assert.throws(() => reorderedBlocks(streamed, 18, [0, 0, 1]), /Cannot reorder/);
  assert.throws(() => reorderedBlocks(streamed, 17, [0, 1]), /Cannot reorder/);
});

Deno.test("int64AsInt32(): DeepSeek-V4's hash table as I32, values split across chunk edges; a cut value is an error", async () => {
  const ids = new BigInt64Array([0n, 3n, 255n, 70000n, -1n]);
  const bytes = new Uint8Array(ids.buffer);
  const out = await all(int64AsInt32(chunked(bytes, [3, 9, 1, 20, 7])));
  assert.deepEqual([...new Int32Array(out.buffer)], [0, 3, 255, 70000, -1]);
  await assert.rejects(all(int64AsInt32(chunked(bytes.slice(0, 13), [13]))), RangeError);
});
