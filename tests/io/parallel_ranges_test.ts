/**
 * `--no-cache` streams long spans as parallel ranges (as `apr pull` does):
 * the bytes are the source's, in order, with `jobs` reads in flight and
 * never more than `jobs` parts held.
 *
 * @module
 */

import { deepEqual, equal, ok, rejects } from "node:assert/strict";
import { BlobSource } from "../../src/io/blob_source.ts";
import type { ByteSource } from "../../src/io/byte_source.ts";
import { parallelRanges } from "../../src/io/parallel_ranges.ts";

/** A source whose reads take a while, counting how many run at once. */
function slowSource(bytes: Uint8Array<ArrayBuffer>, failAt?: number) {
  const inner = new BlobSource(new Blob([bytes]), "slow");
  const stats = { running: 0, most: 0, reads: [] as [number, number][] };
  const source: ByteSource = {
    name: "slow",
    size: bytes.length,
    async read(offset, length) {
      stats.running++;
      stats.most = Math.max(stats.most, stats.running);
      stats.reads.push([offset, length]);
      await new Promise((r) => setTimeout(r, 5));
      stats.running--;
      if (failAt !== undefined && offset <= failAt && failAt < offset + length) {
        throw new Error(`read at ${offset} failed`);
      }
      return inner.read(offset, length);
    },
    stream: (start, end, chunkSize) => inner.stream(start, end, chunkSize),
    close: () => inner.close(),
  };
  return { source, stats };
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of stream) parts.push(chunk.slice());
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) (out.set(p, at), at += p.length);
  return out;
}

Deno.test("parallelRanges(): a long span streams in order from `jobs` concurrent part reads", async () => {
  const bytes = new Uint8Array(10_000);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + 7) & 255;
  const { source, stats } = slowSource(bytes);
  const parallel = parallelRanges(source, { jobs: 3, partSize: 1000 });
  const got = await collect(parallel.stream(123, 9_877, 256));
  deepEqual(got, bytes.subarray(123, 9_877));
  equal(stats.most, 3, "three part reads ran at once");
  equal(stats.reads.length, 10);
  ok(stats.reads.every(([, length]) => length <= 1000));
  // A short span is one stream, as before.
  stats.reads.length = 0;
  deepEqual(await collect(parallel.stream(0, 900, 256)), bytes.subarray(0, 900));
  equal(stats.reads.length, 0);
});

Deno.test("parallelRanges(): a failed part errors the stream; cancelling stops starting parts", async () => {
  const bytes = new Uint8Array(8_000);
  const { source } = slowSource(bytes, 5_500);
  await rejects(
    collect(parallelRanges(source, { jobs: 2, partSize: 1000 }).stream(0, 8_000)),
    /read at 5000 failed/,
  );
  const { source: other, stats } = slowSource(bytes);
  const reader = parallelRanges(other, { jobs: 2, partSize: 1000 }).stream(0, 8_000, 1000)
    .getReader();
  await reader.read();
  await reader.cancel();
  await new Promise((r) => setTimeout(r, 30));
  ok(stats.reads.length <= 3, `${stats.reads.length} parts were read after a cancel at the first`);
});
