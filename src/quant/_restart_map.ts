// This module is browser compatible.

/**
 * Internal: where a converted payload can restart (resume inside a tensor,
 * DESIGN.md §2.3). An output byte offset is a restart point when it starts an
 * output block whose values start a source block: the conversion then goes on
 * from there as the conversion of a smaller tensor (the remaining values),
 * which gives the same bytes because every block is encoded on its own.
 * K-quant rows that need padding (columns not a multiple of 256) restart at
 * row starts only, so the smaller tensor is whole rows. An APR_Q8 source
 * never restarts (its decoder needs the scale at its start); an APR_Q8
 * output restarts with the scale its first pass found, which the caller
 * journals. This is the restart state of the pipeline, not of the kernels:
 * they only ever see whole blocks.
 *
 * @module
 */

import { DTYPES, elementCount } from "../dtype.ts";
import type { TensorInfo } from "../tensor.ts";

/** A restart of a conversion at an output offset. */
export interface RestartMap {
  /** The remaining source payload, as a tensor of its own. */
  readonly source: TensorInfo;
  /** Where it starts in the source payload. */
  readonly sourceOffset: number;
  /** The remaining output, as a tensor of its own. */
  readonly target: TensorInfo;
}

/** The first element an output offset encodes, when it starts a block. */
function outputElement(info: TensorInfo, offset: number): number | undefined {
  const spec = DTYPES[info.dtype];
  const bb = spec.blockBytes;
  const be = spec.blockElements;
  switch (spec.layout) {
    case "elements":
      return offset % bb === 0 ? (offset / bb) * be : undefined;
    case "scale_prefix":
      return offset > 4 ? offset - 4 : undefined;
    case "flat_blocks":
      return offset % bb === 0 ? (offset / bb) * be : undefined;
    case "row_blocks": {
      if (offset % bb !== 0) return undefined;
      const block = offset / bb;
      const cols = info.shape.length === 0 ? 1 : info.shape[info.shape.length - 1]!;
      if (cols % be === 0) return block * be;
      const rowBlocks = Math.ceil(cols / be);
      return block % rowBlocks === 0 ? (block / rowBlocks) * cols : undefined;
    }
  }
}

/** The source payload offset of element `e`, when a source block starts there. */
function sourceOffset(info: TensorInfo, e: number): number | undefined {
  const spec = DTYPES[info.dtype];
  const bb = spec.blockBytes;
  const be = spec.blockElements;
  switch (spec.layout) {
    case "elements":
    case "flat_blocks":
      return e % be === 0 ? (e / be) * bb : undefined;
    case "row_blocks": {
      const cols = info.shape.length === 0 ? 1 : info.shape[info.shape.length - 1]!;
      return cols % be === 0 && e % be === 0 ? (e / be) * bb : undefined;
    }
    case "scale_prefix":
      return undefined;
  }
}

/**
 * Where converting `source` into `target` can restart at output byte `offset`.
 *
 * @param source The tensor as it arrives.
 * @param target The tensor as it leaves.
 * @param offset An output payload offset strictly inside the payload.
 * @returns The restart, or `undefined` when `offset` is not a restart point.
 */
export function restartAt(
  source: TensorInfo,
  target: TensorInfo,
  offset: number,
): RestartMap | undefined {
  if (!Number.isSafeInteger(offset) || offset <= 0 || offset >= target.byteLength) {
    return undefined;
  }
  const n = elementCount(target.shape);
  const e = outputElement(target, offset);
  if (e === undefined || e <= 0 || e >= n) return undefined;
  const from = sourceOffset(source, e);
  if (from === undefined || from >= source.byteLength) return undefined;
  const left = n - e;
  const spec = DTYPES[target.dtype];
  const cols = target.shape.length === 0 ? 1 : target.shape[target.shape.length - 1]!;
  // Padded K-quant rows restart at a row start: keep the rows' shape.
  const shape = spec.layout === "row_blocks" && cols % spec.blockElements !== 0
    ? [left / cols, cols]
    : [left];
  return {
    source: { ...source, shape, byteLength: source.byteLength - from },
    sourceOffset: from,
    target: { ...target, shape, byteLength: target.byteLength - offset },
  };
}

/**
 * Read back an APR_Q8 scale journaled as restart state: a positive, finite
 * f32 written by `String()`, or `undefined` for anything else.
 *
 * @param state The journaled text.
 * @returns The scale.
 */
export function parseAprQ8Scale(state: string | undefined): number | undefined {
  if (state === undefined || state.length > 40 || !/^[0-9][0-9.e+-]*$/i.test(state)) {
    return undefined;
  }
  const v = Number(state);
  return Number.isFinite(v) && v > 0 && Math.fround(v) === v ? v : undefined;
}
