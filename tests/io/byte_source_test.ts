import assert from "node:assert/strict";
import {
  markReleasable,
  releaseChunk,
  shareChunk,
  streamByReads,
  takeBuffer,
  takeChunk,
} from "../../src/io/byte_source.ts";
import { openFileSource } from "../../src/io/file_source.ts";

Deno.test("releaseChunk() frees a chunk marked releasable, once", () => {
  const chunk = markReleasable(new Uint8Array(16).fill(7));
  releaseChunk(chunk);
  assert.equal(chunk.length, 0);
  assert.equal(chunk.buffer.byteLength, 0);
  releaseChunk(chunk); // already freed: no-op, no throw
  assert.equal(chunk.length, 0);
});

Deno.test("releaseChunk() leaves an unmarked chunk alone", () => {
  const chunk = new Uint8Array([1, 2, 3]);
  releaseChunk(chunk);
  assert.deepEqual([...chunk], [1, 2, 3]);
});

Deno.test("streamByReads() marks chunks only when told read() returns owned buffers", async (t) => {
  const data = new Uint8Array(10).map((_, i) => i);
  const source = {
    name: "mem",
    size: 10,
    read: (o: number, n: number) => Promise.resolve(data.slice(o, o + n)),
  };
  await t.step("not releasable by default", async () => {
    const chunks = await Array.fromAsync(streamByReads(source, 0, 10, 4));
    for (const c of chunks) releaseChunk(c);
    assert.deepEqual(chunks.map((c) => c.length), [4, 4, 2]);
  });
  await t.step("releasable when asked", async () => {
    const chunks = await Array.fromAsync(streamByReads(source, 0, 10, 4, true));
    assert.deepEqual([...chunks[2]!], [8, 9]);
    for (const c of chunks) releaseChunk(c);
    assert.deepEqual(chunks.map((c) => c.length), [0, 0, 0]);
  });
});

Deno.test("FileSource.stream() chunks can be released; read() results cannot", async () => {
  const path = await Deno.makeTempFile();
  try {
    await Deno.writeFile(path, new Uint8Array(100).fill(5));
    const source = await openFileSource(path);
    try {
      const chunks = await Array.fromAsync(source.stream(0, 100, 64));
      assert.deepEqual(chunks.map((c) => c.length), [64, 36]);
      releaseChunk(chunks[0]!);
      assert.equal(chunks[0]!.length, 0);
      const read = await source.read(0, 10);
      releaseChunk(read);
      assert.equal(read.length, 10);
    } finally {
      await source.close();
    }
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("takeBuffer() hands out released memory again, detached from the old views", () => {
  const size = 12345; // a size nothing else in this process uses
  const chunk = markReleasable(new Uint8Array(size).fill(9));
  releaseChunk(chunk);
  assert.equal(chunk.length, 0);
  const again = takeBuffer(size);
  assert.equal(again.byteLength, size);
  assert.equal(new Uint8Array(again)[0], 9); // recycled: contents are arbitrary
  const fresh = takeBuffer(size); // nothing left of that size: a new buffer
  assert.equal(new Uint8Array(fresh)[0], 0);
});

Deno.test("releaseChunk() makes room for a released buffer by freeing kept ones of other lengths", () => {
  // Four buffers of one length fill the room kept for reuse (4 MiB); one of
  // another length released after them is kept, not freed: a run that has
  // moved on to other lengths must not lose recycling for good.
  const a = (1 << 20) - 3;
  const b = (1 << 20) - 5; // lengths nothing else in this process uses
  for (let i = 0; i < 4; i++) releaseChunk(markReleasable(new Uint8Array(a).fill(1)));
  releaseChunk(markReleasable(new Uint8Array(b).fill(9)));
  assert.equal(new Uint8Array(takeBuffer(b))[0], 9); // recycled
  assert.equal(new Uint8Array(takeBuffer(a))[0], 1); // the others of length a stay
});

Deno.test("shareChunk(): a chunk handed to several consumers is freed by the last release only", () => {
  const chunk = markReleasable(new Uint8Array(64).fill(7));
  assert.equal(shareChunk(chunk, 3), true);
  releaseChunk(chunk);
  releaseChunk(chunk);
  // Two of three consumers are done: the third still reads it.
  assert.equal(chunk.buffer.byteLength, 64);
  assert.equal(chunk[63], 7);
  releaseChunk(chunk);
  assert.equal(chunk.buffer.byteLength, 0);
  // An unmarked chunk is not shared: every consumer leaves it to the collector.
  const plain = new Uint8Array(8);
  assert.equal(shareChunk(plain, 2), false);
  releaseChunk(plain);
  assert.equal(plain.buffer.byteLength, 8);
});

Deno.test("takeChunk(): a releasable chunk's memory moves to a view of its own, and only such a chunk's", () => {
  const chunk = markReleasable(new Uint8Array(64).fill(5));
  const taken = takeChunk(chunk)!;
  assert.equal(taken.length, 64);
  assert.equal(taken[63], 5);
  // The chunk is left detached: its producer's release does nothing.
  assert.equal(chunk.buffer.byteLength, 0);
  releaseChunk(chunk);
  assert.equal(taken[0], 5);
  // The taken view is releasable in turn (its memory is recycled).
  releaseChunk(taken);
  assert.equal(taken.buffer.byteLength, 0);
  // Not taken: unmarked, shared with other consumers, or part of a buffer.
  const plain = new Uint8Array(8);
  assert.equal(takeChunk(plain), undefined);
  const shared = markReleasable(new Uint8Array(8));
  shareChunk(shared, 2);
  assert.equal(takeChunk(shared), undefined);
  const part = markReleasable(new Uint8Array(16)).subarray(0, 8);
  assert.equal(takeChunk(part), undefined);
  assert.equal(shared.buffer.byteLength + part.buffer.byteLength + plain.length, 32);
});

Deno.test("FileSource.read(): in-order reads skip the seek, and reads out of order, concurrent or after the end still get their bytes", async () => {
  const path = await Deno.makeTempFile();
  try {
    const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) % 251);
    await Deno.writeFile(path, bytes);
    const source = await openFileSource(path);
    try {
      const ranges: [number, number][] = [[0, 100], [100, 50], [150, 350], [10, 20], [30, 5]];
      for (const [offset, length] of ranges) {
        assert.deepEqual(
          await source.read(offset, length),
          bytes.subarray(offset, offset + length),
        );
      }
      // Past the end: refused before any read; the next read is still right.
      assert.throws(() => source.read(990, 20), RangeError);
      assert.deepEqual(await source.read(35, 10), bytes.subarray(35, 45));
      // Concurrent calls are queued in order, each at its own offset.
      const all = await Promise.all(
        [[900, 100], [0, 10], [10, 10], [500, 1]].map(([o, n]) => source.read(o!, n!)),
      );
      assert.deepEqual(all, [
        bytes.subarray(900, 1000),
        bytes.subarray(0, 10),
        bytes.subarray(10, 20),
        bytes.subarray(500, 501),
      ]);
      // The stream after reads elsewhere starts where it is asked to.
      const chunks = await Array.fromAsync(source.stream(600, 700, 30));
      assert.deepEqual(Uint8Array.from(chunks.flatMap((c) => [...c])), bytes.subarray(600, 700));
    } finally {
      await source.close();
    }
  } finally {
    await Deno.remove(path);
  }
});
