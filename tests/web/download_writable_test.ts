import { deepEqual, equal, rejects } from "node:assert/strict";
import { type DownloadSink, DownloadWritable } from "../../web/download_writable.ts";

/** A sink that keeps what it is sent, in order. */
function recorder(limit?: number): DownloadSink & { chunks: Uint8Array[]; closed: boolean } {
  const sink = {
    chunks: [] as Uint8Array[],
    closed: false,
    write(chunk: Uint8Array) {
      sink.chunks.push(chunk.slice());
      return Promise.resolve();
    },
    close() {
      sink.closed = true;
      return Promise.resolve();
    },
    abort() {
      return Promise.resolve();
    },
    ...(limit === undefined ? {} : { limit }),
  };
  return sink;
}

function joined(chunks: Uint8Array[]): number[] {
  return chunks.flatMap((c) => [...c]);
}

const bytes = (...values: number[]) => new Uint8Array(values);

Deno.test("DownloadWritable sends writes in file order as they come, holding none", async () => {
  const sink = recorder();
  const out = new DownloadWritable(sink, "m.gguf");
  await out.write({ type: "write", position: 0, data: bytes(1, 2) });
  await out.write({ type: "truncate", size: 6 });
  await out.write({ type: "write", position: 2, data: bytes(3) });
  // Sent already, before close: a download streams.
  deepEqual(joined(sink.chunks), [1, 2, 3]);
  await out.close();
  // Never written: the preallocated length's zeros, at the end.
  deepEqual(joined(sink.chunks), [1, 2, 3, 0, 0, 0]);
  equal(sink.closed, true);
  equal(out.peakHeld, 0);
});

Deno.test("DownloadWritable holds a write ahead of the next byte due until the bytes before it arrive", async () => {
  const sink = recorder();
  const out = new DownloadWritable(sink, "m.apr");
  await out.write({ type: "write", position: 0, data: bytes(9) });
  await out.write({ type: "truncate", size: 8 });
  await out.write({ type: "write", position: 5, data: bytes(6, 7) });
  await out.write({ type: "write", position: 3, data: bytes(4, 5) });
  deepEqual(joined(sink.chunks), [9]);
  await out.write({ type: "write", position: 1, data: bytes(2, 3) });
  // The held writes follow on at once.
  deepEqual(joined(sink.chunks), [9, 2, 3, 4, 5, 6, 7]);
  equal(out.peakHeld, 4);
  await out.close();
  deepEqual(joined(sink.chunks), [9, 2, 3, 4, 5, 6, 7, 0]);
});

Deno.test("DownloadWritable sends the holes between held writes as zeros at close", async () => {
  const sink = recorder();
  const out = new DownloadWritable(sink, "m.apr");
  await out.write({ type: "write", position: 4, data: bytes(5) });
  await out.write({ type: "write", position: 1, data: bytes(2) });
  await out.close();
  deepEqual(joined(sink.chunks), [0, 2, 0, 0, 5]);
});

Deno.test("DownloadWritable refuses what a download cannot take back or hold", async (t) => {
  await t.step("a write behind the bytes sent", async () => {
    const out = new DownloadWritable(recorder(), "m.apr");
    await out.write({ type: "write", position: 0, data: bytes(1, 2, 3) });
    await rejects(
      out.write({ type: "write", position: 1, data: bytes(7) }),
      (e: Error) => e instanceof RangeError && e.message.includes("went back to byte 1"),
    );
  });
  await t.step("a write over a held one", async () => {
    const out = new DownloadWritable(recorder(), "m.apr");
    await out.write({ type: "write", position: 4, data: bytes(1, 2) });
    await rejects(
      out.write({ type: "write", position: 5, data: bytes(7) }),
      (e: Error) => e instanceof RangeError && e.message.includes("written twice"),
    );
  });
  await t.step("a file over the sink's limit, at its preallocation, before any byte", async () => {
    const sink = recorder(10);
    const out = new DownloadWritable(sink, "m.gguf");
    await rejects(
      out.write({ type: "truncate", size: 11 }),
      (e: Error) =>
        e instanceof RangeError &&
        e.message.startsWith('Cannot save "m.gguf" as a download in this browser: it is 11 bytes'),
    );
    deepEqual(sink.chunks, []);
  });
  await t.step("more held out of order than the bound", async () => {
    const out = new DownloadWritable(recorder(), "m.apr", 2);
    await out.write({ type: "write", position: 1, data: bytes(1, 2) });
    await rejects(
      out.write({ type: "write", position: 3, data: bytes(1) }),
      (e: Error) => e instanceof RangeError && e.message.includes("arrived ahead"),
    );
  });
});
