// This module is browser compatible.

/**
 * Internal: the argument check every block encoder makes — whole blocks, and
 * with an importance matrix entry (one weight per column), whole rows.
 *
 * @module
 */

import { type DType, DTYPES } from "../dtype.ts";

/**
 * The number of blocks in `values`, checked.
 *
 * @throws {RangeError} When `values` is not whole blocks, or not whole rows of
 * `importance.length` values (which must itself be whole blocks).
 */
export function countBlocks(
  dtype: DType,
  values: Float32Array,
  importance: Float32Array | undefined,
): number {
  const be = DTYPES[dtype].blockElements;
  if (values.length % be !== 0) {
    throw new RangeError(
      `Cannot encode ${dtype}: ${values.length} values are not a whole number of ${be}-value blocks`,
    );
  }
  if (importance !== undefined) {
    const cols = importance.length;
    if (cols === 0 || cols % be !== 0 || values.length % cols !== 0) {
      throw new RangeError(
        `Cannot encode ${dtype} with importance weights: ${values.length} values are not ` +
          `whole rows of ${cols} (a multiple of ${be})`,
      );
    }
  }
  return values.length / be;
}
