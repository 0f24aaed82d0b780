// This module is browser compatible.

/**
 * Internal: the loop the Q2_K and Q3_K encoders share — check the input,
 * allocate the output, and hand each 256-value super-block (with its row's
 * importance weights, when given) to the type's block encoder.
 *
 * @module
 */

import type { DType } from "../dtype.ts";
import { countBlocks } from "./_count_blocks.ts";

/**
 * Encode one super-block: values `x[xo..xo+256)` into bytes `y[o..)`; with an
 * importance matrix entry `qw`, the super-block's weights start at `qw[qo]`.
 */
export type SuperBlockEncoder = (
  x: Float32Array,
  xo: number,
  y: Uint8Array,
  o: number,
  qw: Float32Array | undefined,
  qo: number,
) => void;

/**
 * Run `encode` on every super-block of `values` (whole rows of
 * `importance.length` values when it is given) into `out` or a new array.
 *
 * @throws {RangeError} When `values` is not whole super-blocks (or rows).
 */
export function encodeSuperBlocks(
  dtype: DType,
  blockBytes: number,
  values: Float32Array,
  out: Uint8Array | undefined,
  importance: Float32Array | undefined,
  encode: SuperBlockEncoder,
): Uint8Array {
  const nb = countBlocks(dtype, values, importance);
  const y = out ?? new Uint8Array(nb * blockBytes);
  const cols = importance?.length ?? 256;
  for (let i = 0; i < nb; i++) {
    encode(values, i * 256, y, i * blockBytes, importance, (i * 256) % cols);
  }
  return y;
}
