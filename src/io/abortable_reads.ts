// This module is browser compatible.

/**
 * Tensor reads that give up when a signal aborts — the one way every
 * conversion honours Ctrl-C, whatever it writes.
 *
 * A stopped pipe (`pipeTo` with a signal, a sink's `abort()`) waits for the
 * write in flight, and a sink's write is a tensor being read: a read that a
 * stalled server never answers would be waited out (every idle timeout and
 * retry of a `--no-cache` stream, minutes). Wrapped here, a pending read
 * rejects at once with the signal's reason and the source read is cancelled
 * (closing its connection); the sink then fails as on any read error, and
 * removes its partial file or, for a resumable output, keeps what it wrote.
 *
 * Opening a model reads too (an index, each shard's header, over HTTP for a
 * `--no-cache` Hub model): {@linkcode abortableFiles} gives those reads the
 * same signal, through the same stream wrapper.
 *
 * @module
 */

import type { ModelChunk, TensorEntry } from "../tensor.ts";
import type { ByteSource } from "./byte_source.ts";
import type { ModelFiles } from "./model_files.ts";

/**
 * A stream with the chunks of `stream` whose pending read rejects with
 * `signal`'s reason as soon as it aborts (the source is cancelled then).
 *
 * @example Usage
 * ```ts
 * import { abortableStream } from "./abortable_reads.ts";
 * const stop = new AbortController();
 * const never = new ReadableStream<Uint8Array>({ pull: () => new Promise(() => {}) });
 * const read = abortableStream(never, stop.signal).getReader().read();
 * stop.abort(new Error("stopped"));
 * console.assert((await read.catch((e) => e)).message === "stopped");
 * ```
 *
 * @param stream The source stream (locked by this call).
 * @param signal Stops the reads.
 * @returns The stream to read instead.
 */
export function abortableStream<T>(
  stream: ReadableStream<T>,
  signal: AbortSignal,
): ReadableStream<T> {
  const reader = stream.getReader();
  return new ReadableStream<T>({
    async pull(controller) {
      let result: ReadableStreamReadResult<T>;
      try {
        result = await readOrAbort(reader, signal);
      } catch (error) {
        // Not awaited: a stalled source may take its time to let go.
        reader.cancel(error).catch(() => {});
        throw error;
      }
      if (result.done) controller.close();
      else controller.enqueue(result.value);
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
}

/**
 * One `reader.read()` that rejects with `signal`'s reason as soon as it aborts.
 *
 * Each read races its own abort promise and listener, both dropped when it
 * settles. Not `Promise.race` against one promise kept for the whole stream:
 * a promise that never settles keeps every race's reaction, and with it every
 * chunk read (the whole tensor in memory, 256 MiB of a 256 MiB tensor; see
 * docs/BENCHMARKS.md, "`--no-cache` import from the Hub").
 */
function readOrAbort<T>(
  reader: ReadableStreamDefaultReader<T>,
  signal: AbortSignal,
): Promise<ReadableStreamReadResult<T>> {
  return untilAborted(reader.read(), signal);
}

/**
 * The same tensor, each of whose payload streams is an
 * {@linkcode abortableStream} (restart support kept as the entry has it).
 *
 * @param entry The tensor.
 * @param signal Stops its reads.
 * @returns The wrapped entry.
 */
export function abortableEntry(entry: TensorEntry, signal: AbortSignal): TensorEntry {
  const wrap = (stream: ReadableStream<Uint8Array>) => abortableStream(stream, signal);
  const { slice, restartPoint, openAt } = entry;
  return {
    info: entry.info,
    open: () => wrap(entry.open()),
    ...(slice === undefined ? {} : { slice: (start, end) => wrap(slice.call(entry, start, end)) }),
    ...(restartPoint === undefined
      ? {}
      : { restartPoint: (offset) => restartPoint.call(entry, offset) }),
    ...(openAt === undefined ? {} : {
      openAt: (offset, state) => {
        const stream = openAt.call(entry, offset, state);
        return stream === undefined ? undefined : wrap(stream);
      },
    }),
  };
}

/**
 * A pipeline stage making every tensor's reads {@linkcode abortableEntry}s:
 * put it last, before the sink.
 *
 * @param signal Stops the reads.
 * @returns The transform.
 */
export function abortableTensors(signal: AbortSignal): TransformStream<ModelChunk, ModelChunk> {
  return new TransformStream<ModelChunk, ModelChunk>({
    transform(chunk, controller) {
      controller.enqueue(
        chunk.type === "tensor"
          ? { ...chunk, tensor: abortableEntry(chunk.tensor, signal) }
          : chunk,
      );
    },
  });
}

/**
 * The same bytes, each of whose reads rejects with `signal`'s reason as soon
 * as it aborts. A `read()` is a stream here, an {@linkcode abortableStream},
 * so giving up cancels the source's read (an HTTP source drops the
 * connection) instead of leaving it to its idle timeouts and retries.
 *
 * @param source The bytes (closed by the wrapper's `close()`).
 * @param signal Stops the reads.
 * @returns The source to read instead.
 */
export function abortableSource(source: ByteSource, signal: AbortSignal): ByteSource {
  return {
    name: source.name,
    size: source.size,
    async read(offset, length) {
      signal.throwIfAborted();
      const result = new Uint8Array(length);
      let filled = 0;
      const stream = abortableStream(source.stream(offset, offset + length), signal);
      for await (const chunk of stream) {
        result.set(chunk, filled);
        filled += chunk.length;
      }
      return result;
    },
    stream: (start, end, chunkSize) =>
      abortableStream(source.stream(start, end, chunkSize), signal),
    close: () => source.close(),
  };
}

/**
 * The same files, opened as {@linkcode abortableSource}s: opening a model
 * through them (its index, its shards' headers) and every read after that
 * give up when `signal` aborts. Opening a file (a Hub file's metadata
 * request) gives up too.
 *
 * @param files The files.
 * @param signal Stops opening and reading.
 * @returns The files to open the model from.
 */
export function abortableFiles(files: ModelFiles, signal: AbortSignal): ModelFiles {
  return {
    name: files.name,
    list: () => files.list(),
    async open(path) {
      const opening = files.open(path);
      const source = await untilAborted(opening, signal).catch((error) => {
        // Opened after all, once the abort was answered: nobody will read it.
        opening.then((late) => late.close(), () => {});
        throw error;
      });
      return abortableSource(source, signal);
    },
    locate: (path) => files.locate(path),
    ...(files.verify === undefined ? {} : { verify: () => files.verify!() }),
  };
}

/**
 * `promise`, or `signal`'s reason as soon as it aborts. Each call has its own
 * listener, dropped when `promise` settles (see {@linkcode readOrAbort}).
 */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    const release = (): void => signal.removeEventListener("abort", onAbort);
    promise.then(
      (value) => {
        release();
        resolve(value);
      },
      (error) => {
        release();
        reject(error);
      },
    );
  });
}
