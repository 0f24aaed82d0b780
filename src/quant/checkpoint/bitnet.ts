// This module is browser compatible.

/**
 * `quant_method: "bitnet"` (microsoft/bitnet-b1.58-2B-4T and its offline
 * `autobitlinear` checkpoints): a U8 weight `[out/4, in]` holding four ternary
 * values per byte — bits `2k…2k+1` of row `r` are output row `k·out/4 + r`,
 * stored plus one — and a one-element `weight_scale` that divides them. As
 * llama.cpp's `dequant_bitnet` and transformers' `unpack_weights`: `(q − 1) / scale`
 * in f32.
 *
 * @module
 */

import type { TensorEntry } from "../../tensor.ts";
import { f32Entry } from "./_f32_entry.ts";
import {
  anchoredWeights,
  checkpointError,
  count,
  type QuantContext,
  type QuantMethod,
  replaceGroups,
  shapeText,
} from "./_method.ts";
import { readFloat32, readRange } from "./_read.ts";

/** The BitNet method. */
export const BITNET: QuantMethod = {
  name: "bitnet",
  reference: "llama.cpp conversion/base.py dequant_bitnet; transformers integrations/bitnet.py",
  companions: [".weight_scale"],
  dequantize(tensors, context) {
    const groups = anchoredWeights(tensors, ".weight_scale", context).map(({ base, part }) => ({
      entry: bitnetEntry(base + ".weight", part(".weight"), part(".weight_scale"), context),
      replaces: [base + ".weight", base + ".weight_scale"],
    }));
    return replaceGroups(tensors, groups, new Set(), context);
  },
};

function bitnetEntry(
  name: string,
  weight: TensorEntry,
  scale: TensorEntry,
  context: QuantContext,
): TensorEntry {
  const { dtype, shape } = weight.info;
  if ((dtype !== "U8" && dtype !== "I8") || shape.length === 0) {
    throw checkpointError(
      context,
      `weight "${name}" is ${dtype} ${
        shapeText(shape)
      }, expected packed U8 with at least one dimension`,
    );
  }
  if (
    count(scale.info.shape) !== 1 || !["F32", "F16", "BF16"].includes(scale.info.dtype)
  ) {
    throw checkpointError(
      context,
      `scale "${scale.info.name}" is ${scale.info.dtype} ${
        shapeText(scale.info.shape)
      }, expected one F32, F16 or BF16 value`,
    );
  }
  const quarter = shape[0]!;
  const columns = shape.slice(1).reduce((a, b) => a * b, 1);
  return f32Entry(name, [quarter * 4, ...shape.slice(1)], () => {
    let factor: Promise<Float32Array> | undefined;
    return async (start, end, out) => {
      const s = (await (factor ??= readFloat32(scale)))[0]!;
      // Rows of one bit-pair plane are consecutive source rows: one read each.
      for (let row = start; row < end;) {
        const plane = Math.floor(row / quarter);
        const last = Math.min(end, (plane + 1) * quarter);
        const first = row - plane * quarter;
        const bytes = await readRange(
          weight,
          first * columns,
          (last - plane * quarter) * columns,
        );
        const shift = 2 * plane;
        const base = (row - start) * columns;
        for (let k = 0; k < bytes.length; k++) {
          out[base + k] = (((bytes[k]! >>> shift) & 3) - 1) / s;
        }
        row = last;
      }
    };
  });
}
