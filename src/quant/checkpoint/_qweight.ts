// This module is browser compatible.

/**
 * What GPTQ and AWQ checkpoints share: a `qweight`, `qzeros`, `scales` triple
 * of I32 words and float scales, 2-D, with the output features as columns,
 * and the window of scale columns one tile reads.
 *
 * @module
 */

import { DTYPES } from "../../dtype.ts";
import type { ModelFormatError } from "../../errors.ts";
import type { TensorEntry } from "../../tensor.ts";
import { checkpointError, type QuantContext, shapeText } from "./_method.ts";
import { floats, readColumns } from "./_read.ts";

/** Float types of `scales`. */
const SCALE_DTYPES = new Set(["F16", "BF16", "F32"]);

/** The tensors of one GPTQ or AWQ weight. */
export interface QweightTriple {
  /** `W.qweight`, I32 words. */
  readonly qweight: TensorEntry;
  /** `W.qzeros`, I32 words. */
  readonly qzeros: TensorEntry;
  /** `W.scales`, F16, BF16 or F32. */
  readonly scales: TensorEntry;
}

/**
 * Refuse a triple whose dtypes or ranks are wrong, and return the error
 * maker for the method's own shape checks: each message names all three.
 *
 * @param triple The weight's tensors.
 * @param context For messages.
 * @returns A function making the error for a reason.
 * @throws {ModelFormatError} When a dtype or rank is wrong.
 */
export function checkQweightTriple(
  triple: QweightTriple,
  context: QuantContext,
): (why: string) => ModelFormatError {
  const { qweight, qzeros, scales } = triple;
  const fail = (why: string) =>
    checkpointError(
      context,
      `"${qweight.info.name}" ${shapeText(qweight.info.shape)}, "${qzeros.info.name}" ${
        shapeText(qzeros.info.shape)
      }, "${scales.info.name}" ${shapeText(scales.info.shape)}: ${why}`,
    );
  if (qweight.info.dtype !== "I32" || qzeros.info.dtype !== "I32") {
    throw fail(
      `qweight and qzeros must be I32 (found ${qweight.info.dtype}, ${qzeros.info.dtype})`,
    );
  }
  if (!SCALE_DTYPES.has(scales.info.dtype)) {
    throw fail(`scales must be F16, BF16 or F32 (found ${scales.info.dtype})`);
  }
  if ([qweight, qzeros, scales].some((t) => t.info.shape.length !== 2)) {
    throw fail("each must have 2 dimensions");
  }
  return fail;
}

/**
 * Columns `[start, end)` of every group's row of `scales` `[groups, outputs]`, in f32.
 *
 * @param scales The scales.
 * @param outputs Columns per row.
 * @param groups Rows.
 * @param start First column.
 * @param end One past the last column.
 * @returns `groups × (end − start)` values, row by row.
 */
export async function readScaleColumns(
  scales: TensorEntry,
  outputs: number,
  groups: number,
  start: number,
  end: number,
): Promise<Float32Array> {
  const scaleBytes = DTYPES[scales.info.dtype].blockBytes;
  return floats(
    scales.info.dtype,
    await readColumns(
      scales,
      outputs * scaleBytes,
      0,
      groups,
      start * scaleBytes,
      end * scaleBytes,
    ),
  );
}
