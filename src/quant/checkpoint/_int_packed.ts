// This module is browser compatible.

/**
 * compressed-tensors' `pack-quantized` weights (RedHatAI `…-quantized.w4a16`
 * and other llm-compressor checkpoints): `weight_packed` I32 `[out, ⌈in/(32/b)⌉]`
 * holds `32/b` b-bit values per word along the input, the lowest first;
 * `weight_scale` `[out, in/group]`; `weight_zero_point` I32 `[⌈out/(32/b)⌉,
 * in/group]` packed along the output, or, when absent, the symmetric offset
 * `2^(b−1)`; `weight_shape` the unpadded `[out, in]`. `(q − zero) × scale` in
 * f32, as llama.cpp's `dequant_packed` (conversion/base.py). Rows are stored
 * as they are written, so a band of rows is one read of each tensor.
 *
 * @module
 */

import { DTYPES } from "../../dtype.ts";
import type { TensorEntry } from "../../tensor.ts";
import { f32Entry } from "./_f32_entry.ts";
import { checkpointError, type QuantContext, shapeText } from "./_method.ts";
import { floats, int32s, readRange } from "./_read.ts";

/** The tensors of one packed weight. */
export interface PackedWeight {
  /** `W.weight_packed`. */
  readonly packed: TensorEntry;
  /** `W.weight_scale`. */
  readonly scale: TensorEntry;
  /** `W.weight_zero_point`, absent when symmetric. */
  readonly zeroPoint: TensorEntry | undefined;
  /** The unpadded `[out, in]`, read from `W.weight_shape`. */
  readonly shape: readonly [number, number];
}

/**
 * The dequantized entry of a pack-quantized weight.
 *
 * @param name Output name (`W.weight`).
 * @param weight Its tensors and shape.
 * @param bits Bits per value (2, 4 or 8).
 * @param groupSize Inputs per scale.
 * @param context For messages.
 * @returns The F32 entry.
 */
export function packedEntry(
  name: string,
  weight: PackedWeight,
  bits: number,
  groupSize: number,
  context: QuantContext,
): TensorEntry {
  const { packed, scale, zeroPoint } = weight;
  const [outputs, inputs] = weight.shape;
  const pack = 32 / bits;
  const words = Math.ceil(inputs / pack);
  const groups = inputs / groupSize;
  const fail = (why: string) =>
    checkpointError(
      context,
      `"${packed.info.name}" ${shapeText(packed.info.shape)} with "${scale.info.name}" ${
        shapeText(scale.info.shape)
      } for weight_shape ${shapeText(weight.shape)}: ${why}`,
    );
  if (!Number.isSafeInteger(groups)) {
    throw fail(`${inputs} inputs are not whole groups of ${groupSize}`);
  }
  if (packed.info.dtype !== "I32" || packed.info.shape.join() !== `${outputs},${words}`) {
    throw fail(`weight_packed must be I32 [${outputs}, ${words}]`);
  }
  if (
    !["F32", "F16", "BF16"].includes(scale.info.dtype) ||
    scale.info.shape.join() !== `${outputs},${groups}`
  ) {
    throw fail(`weight_scale must be F32, F16 or BF16 [${outputs}, ${groups}]`);
  }
  const zeroRows = Math.ceil(outputs / pack);
  if (
    zeroPoint !== undefined &&
    (zeroPoint.info.dtype !== "I32" || zeroPoint.info.shape.join() !== `${zeroRows},${groups}`)
  ) {
    throw fail(`"${zeroPoint.info.name}" must be I32 [${zeroRows}, ${groups}]`);
  }
  const mask = (1 << bits) - 1;
  const scaleBytes = DTYPES[scale.info.dtype].blockBytes;
  return f32Entry(name, [outputs, inputs], () => async (start, end, out) => {
    const q = int32s(await readRange(packed, start * words * 4, end * words * 4));
    const s = floats(
      scale.info.dtype,
      await readRange(scale, start * groups * scaleBytes, end * groups * scaleBytes),
    );
    const firstZeroRow = Math.floor(start / pack);
    const z = zeroPoint === undefined ? undefined : int32s(
      await readRange(
        zeroPoint,
        firstZeroRow * groups * 4,
        Math.ceil(end / pack) * groups * 4,
      ),
    );
    for (let o = start; o < end; o++) {
      const row = (o - start) * inputs;
      const zeroShift = bits * (o % pack);
      const zeroRow = (Math.floor(o / pack) - firstZeroRow) * groups;
      for (let i = 0; i < inputs; i++) {
        const g = Math.floor(i / groupSize);
        const value = (q[(o - start) * words + Math.floor(i / pack)]! >>> (bits * (i % pack))) &
          mask;
        const offset = z === undefined ? 1 << (bits - 1) : (z[zeroRow + g]! >>> zeroShift) & mask;
        out[row + i] = (value - offset) * s[(o - start) * groups + g]!;
      }
    }
  });
}
