// This module is browser compatible.

/**
 * One payload read from several copies of it that must agree (K-EXAONE's
 * `mtp.fc`, which llama.cpp's converter writes into every MTP block): the
 * first copy's bytes, each chunk compared with the same bytes of every other
 * copy as it streams, so nothing is held but a chunk of each.
 *
 * @module
 */

import { concat } from "../arch/transforms.ts";
import type { TensorEntry } from "../tensor.ts";

/** A copy being read: its reader and the bytes read past the last comparison. */
interface Other {
  readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  rest: Uint8Array;
}

/** The next `length` bytes of `other`, or fewer where it ends. */
async function take(other: Other, length: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [other.rest];
  let have = other.rest.length;
  while (have < length) {
    const { done, value } = await other.reader.read();
    if (done) break;
    parts.push(value);
    have += value.length;
  }
  const all = parts.length === 1 ? parts[0]! : concat(...parts);
  other.rest = all.subarray(Math.min(length, all.length));
  return all.subarray(0, Math.min(length, all.length));
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The payload of `copies[0]`, erroring with `differ(i)` at the first chunk
 * where copy `i` has other bytes.
 *
 * @param copies The entries holding the same payload (two or more, of one size).
 * @param differ The error for copy `i` differing from the first.
 * @returns The first copy's bytes.
 */
export function agreedCopies(
  copies: readonly TensorEntry[],
  differ: (index: number) => Error,
): ReadableStream<Uint8Array> {
  let first: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let others: Other[] = [];
  const cancelAll = async (reason?: unknown) => {
    await Promise.all([first, ...others.map((o) => o.reader)].map((r) => r?.cancel(reason)));
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (first === undefined) {
        first = copies[0]!.open().getReader();
        others = copies.slice(1).map((c) => ({
          reader: c.open().getReader(),
          rest: new Uint8Array(0),
        }));
      }
      const { done, value } = await first.read();
      if (done) {
        controller.close();
        return;
      }
      for (let i = 0; i < others.length; i++) {
        if (!equalBytes(value, await take(others[i]!, value.length))) {
          const error = differ(i + 1);
          await cancelAll(error).catch(() => {});
          throw error;
        }
      }
      controller.enqueue(value);
    },
    cancel: (reason) => cancelAll(reason),
  }, { highWaterMark: 0 });
}
