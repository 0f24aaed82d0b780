// This module is browser compatible.

/**
 * Parallel ranged reads for a streamed source: a long span is split into
 * parts read concurrently (each one Range request, with the source's own
 * retries) and yielded in order. This is what `apr pull` does to fill the
 * cache, brought to `--no-cache` streaming: on a link where one connection
 * is throttled, several carry the bytes. Memory stays bounded: at most
 * `jobs` parts are held, `jobs × partSize` bytes.
 *
 * @module
 */

import { assertRange, type ByteSource, DEFAULT_CHUNK_SIZE } from "./byte_source.ts";

/** Options of {@linkcode parallelRanges}. */
export interface ParallelRangesOptions {
  /** Parts read at once. @default {4} */
  jobs?: number;
  /** Size of a part. Spans no longer than this stream as before. @default {4 MiB} */
  partSize?: number;
}

/** Default parts in flight (memory: jobs × partSize = 16 MiB). */
export const DEFAULT_PARALLEL_JOBS = 4;
/** Default part size. */
export const DEFAULT_PARALLEL_PART_SIZE = 4 * 1024 * 1024;

/**
 * Wrap a source so that its long streams read several parts at once.
 *
 * @param inner The source (an HTTP source: positioned reads are requests).
 * @param options Parts in flight and their size.
 * @returns A source with the same bytes.
 * @throws {RangeError} For a `jobs` or `partSize` that is not a positive integer.
 */
export function parallelRanges(inner: ByteSource, options: ParallelRangesOptions = {}): ByteSource {
  const jobs = options.jobs ?? DEFAULT_PARALLEL_JOBS;
  const partSize = options.partSize ?? DEFAULT_PARALLEL_PART_SIZE;
  for (const [name, value] of [["jobs", jobs], ["partSize", partSize]] as const) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new RangeError(`Cannot read in parallel: ${name} ${value} is not a positive integer`);
    }
  }
  return {
    name: inner.name,
    size: inner.size,
    read: (offset, length) => inner.read(offset, length),
    stream(start, end, chunkSize = DEFAULT_CHUNK_SIZE) {
      assertRange(inner.name, inner.size, start, end - start);
      if (jobs === 1 || end - start <= partSize) return inner.stream(start, end, chunkSize);
      return orderedParts(inner, start, end, chunkSize, jobs, partSize);
    },
    close: () => inner.close(),
  };
}

function orderedParts(
  inner: ByteSource,
  start: number,
  end: number,
  chunkSize: number,
  jobs: number,
  partSize: number,
): ReadableStream<Uint8Array> {
  // Parts started and not yet yielded, in order; a new one starts whenever
  // the oldest is taken, so at most `jobs` are held.
  const inFlight: Promise<Uint8Array>[] = [];
  let next = start;
  let current: Uint8Array | undefined;
  let at = 0;
  let cancelled = false;
  const startPart = (): void => {
    if (next >= end || cancelled) return;
    const length = Math.min(partSize, end - next);
    const read = inner.read(next, length);
    read.catch(() => {}); // Reported when its turn comes (or dropped on cancel).
    inFlight.push(read);
    next += length;
  };
  return new ReadableStream<Uint8Array>({
    start() {
      for (let i = 0; i < jobs; i++) startPart();
    },
    async pull(controller) {
      if (current === undefined || at >= current.length) {
        const oldest = inFlight.shift();
        if (oldest === undefined) {
          controller.close();
          return;
        }
        current = await oldest;
        at = 0;
        startPart();
      }
      const take = Math.min(chunkSize, current.length - at);
      controller.enqueue(current.subarray(at, at + take));
      at += take;
      if (at >= current.length) current = undefined;
    },
    cancel() {
      cancelled = true;
      inFlight.length = 0;
      current = undefined;
    },
  }, { highWaterMark: 0 });
}
