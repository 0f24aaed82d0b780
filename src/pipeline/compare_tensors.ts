// This module is browser compatible.

/**
 * Compare two tensors value by value, streaming both (for `apr diff`):
 * memory stays at one decoded batch per side whatever the tensors' size.
 *
 * @module
 */

import { decodeStream } from "../quant/decode.ts";
import type { TensorEntry } from "../tensor.ts";

/** How two tensors' values differ. */
export interface TensorDifference {
  /** Elements compared. */
  count: number;
  /** Largest absolute difference (NaN against NaN counts as equal). */
  maxAbsDiff: number;
  /** Root mean square of the differences. */
  rmse: number;
  /** Elements where exactly one side is NaN. */
  nanMismatches: number;
}

/**
 * Decode two tensors of the same element count and measure their difference.
 *
 * @param a One tensor.
 * @param b The other.
 * @returns The differences.
 * @throws {RangeError} When the element counts differ.
 */
export async function compareTensors(a: TensorEntry, b: TensorEntry): Promise<TensorDifference> {
  const left = decodeStream(a.info, a.open()).getReader();
  const right = decodeStream(b.info, b.open()).getReader();
  let x: Float32Array = new Float32Array(0), xi = 0;
  let y: Float32Array = new Float32Array(0), yi = 0;
  let count = 0, maxAbsDiff = 0, sumSq = 0, nanMismatches = 0;
  try {
    for (;;) {
      if (xi === x.length) {
        const r = await left.read();
        if (r.done) break;
        x = r.value;
        xi = 0;
        continue;
      }
      if (yi === y.length) {
        const r = await right.read();
        if (r.done) {
          throw new RangeError(
            `Cannot compare "${a.info.name}": the second tensor has fewer values`,
          );
        }
        y = r.value;
        yi = 0;
        continue;
      }
      // Walk the overlap of the two current batches.
      const n = Math.min(x.length - xi, y.length - yi);
      for (let k = 0; k < n; k++) {
        const u = x[xi + k]!, v = y[yi + k]!;
        const uNaN = Number.isNaN(u), vNaN = Number.isNaN(v);
        if (uNaN || vNaN) {
          if (uNaN !== vNaN) nanMismatches++;
          continue;
        }
        // Equal infinities differ by 0, not NaN.
        const d = u === v ? 0 : Math.abs(u - v);
        if (d > maxAbsDiff) maxAbsDiff = d;
        sumSq += d * d;
      }
      xi += n;
      yi += n;
      count += n;
    }
    if (yi !== y.length || !(await right.read()).done) {
      throw new RangeError(`Cannot compare "${a.info.name}": the second tensor has more values`);
    }
  } finally {
    await left.cancel().catch(() => {});
    await right.cancel().catch(() => {});
  }
  return { count, maxAbsDiff, rmse: count ? Math.sqrt(sumSq / count) : 0, nanMismatches };
}
