/**
 * Reads made while opening a model give up on the signal, as tensor reads do
 * (src/io/abortable_reads.ts): a `read()` of an abortable source rejects at
 * once with the signal's reason and cancels the source's read in flight.
 *
 * @module
 */

import { deepEqual, equal } from "node:assert/strict";
import { abortableFiles, abortableSource } from "../../src/io/abortable_reads.ts";
import type { ByteSource } from "../../src/io/byte_source.ts";
import type { ModelFiles } from "../../src/io/model_files.ts";

/** A source whose streams never answer; records what was cancelled. */
function stalledSource(cancelled: unknown[]): ByteSource {
  return {
    name: "stalled",
    size: 100,
    read: () => new Promise(() => {}),
    stream: () =>
      new ReadableStream<Uint8Array>({
        pull: () => new Promise(() => {}),
        cancel: (reason) => void cancelled.push(reason),
      }),
    close: () => Promise.resolve(),
  };
}

Deno.test("abortableSource: a stalled read rejects with the signal's reason and is cancelled", async () => {
  const cancelled: unknown[] = [];
  const stop = new AbortController();
  const reason = new Error("stopped");
  const read = abortableSource(stalledSource(cancelled), stop.signal).read(0, 8);
  stop.abort(reason);
  equal(await read.catch((e) => e), reason);
  deepEqual(cancelled, [reason]);
});

Deno.test("abortableSource: reads the same bytes as its source", async () => {
  const bytes = Uint8Array.from({ length: 100 }, (_, i) => i);
  const source: ByteSource = {
    name: "bytes",
    size: bytes.length,
    read: (offset, length) => Promise.resolve(bytes.slice(offset, offset + length)),
    // Chunks of 7 bytes: a read spans several.
    stream: (start, end) =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (let at = start; at < end; at += 7) {
            controller.enqueue(bytes.slice(at, Math.min(end, at + 7)));
          }
          controller.close();
        },
      }),
    close: () => Promise.resolve(),
  };
  const wrapped = abortableSource(source, new AbortController().signal);
  deepEqual(await wrapped.read(10, 30), bytes.slice(10, 40));
  deepEqual(await wrapped.read(99, 0), new Uint8Array(0));
});

Deno.test("abortableFiles: opening a file that never opens rejects with the signal's reason", async () => {
  const files: ModelFiles = {
    name: "stalled",
    list: () => Promise.resolve(["a"]),
    open: () => new Promise(() => {}),
    locate: (path) => path,
  };
  const stop = new AbortController();
  const reason = new Error("stopped");
  const opening = abortableFiles(files, stop.signal).open("a");
  stop.abort(reason);
  equal(await opening.catch((e) => e), reason);
});
