// This module is browser compatible.

/**
 * Summary statistics of a tensor's values, computed while streaming (for
 * `apr tensors --stats`): memory stays at one decoded batch.
 *
 * @module
 */

import { decodeStream } from "../quant/decode.ts";
import type { TensorInfo } from "../tensor.ts";

/** Statistics of a tensor's finite values, plus counts of the others. */
export interface TensorStats {
  /** Elements in all. */
  count: number;
  /** Smallest finite value (`null` when there is none). */
  min: number | null;
  /** Largest finite value (`null` when there is none). */
  max: number | null;
  /** Mean of the finite values (`null` when there is none). */
  mean: number | null;
  /** Population standard deviation of the finite values (`null` when there is none). */
  std: number | null;
  /** NaN elements. */
  nan: number;
  /** Infinite elements. */
  inf: number;
}

/**
 * Decode a tensor payload and summarize it.
 *
 * @param info The tensor's dtype, shape and payload size.
 * @param payload The payload stream (e.g. `entry.open()`).
 * @returns The statistics.
 * @throws {RangeError} When the payload is longer or shorter than the tensor's size.
 * @throws {TypeError} When the dtype cannot be decoded.
 */
export async function tensorStats(
  info: TensorInfo,
  payload: ReadableStream<Uint8Array>,
): Promise<TensorStats> {
  let count = 0, finite = 0, nan = 0, inf = 0;
  let min = Infinity, max = -Infinity;
  // Welford's running mean and variance: stable over billions of values.
  let mean = 0, m2 = 0;
  for await (const batch of decodeStream(info, payload)) {
    count += batch.length;
    for (let i = 0; i < batch.length; i++) {
      const v = batch[i]!;
      if (Number.isNaN(v)) {
        nan++;
      } else if (!Number.isFinite(v)) {
        inf++;
      } else {
        finite++;
        if (v < min) min = v;
        if (v > max) max = v;
        const delta = v - mean;
        mean += delta / finite;
        m2 += delta * (v - mean);
      }
    }
  }
  const any = finite > 0;
  return {
    count,
    min: any ? min : null,
    max: any ? max : null,
    mean: any ? mean : null,
    std: any ? Math.sqrt(m2 / finite) : null,
    nan,
    inf,
  };
}
