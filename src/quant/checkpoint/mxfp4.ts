// This module is browser compatible.

/**
 * `quant_method: "mxfp4"` (openai/gpt-oss): expert weights as `*_blocks` U8
 * `[experts, rows, groups, 16]` — 32 E2M1 values per group, the first in each
 * byte's low nibble — and `*_scales` U8 `[experts, rows, groups]`, one E8M0
 * exponent per group (`2^(s − 127)`). Dequantized as transformers'
 * `convert_moe_packed_tensors` (integrations/mxfp4.py): the values times their
 * group's power of two, then each expert transposed, so `…gate_up_proj`
 * comes out `[experts, groups·32, rows]` as the BF16 gpt-oss
 * checkpoints store it. GGUF output keeps the blocks as stored (checked
 * alike): the gpt-oss family repacks them to ggml's MXFP4, as llama.cpp's
 * converter does.
 *
 * @module
 */

import type { TensorEntry } from "../../tensor.ts";
import { decodeF4 } from "../float6_4.ts";
import { f32Entry } from "./_f32_entry.ts";
import {
  anchoredWeights,
  checkpointError,
  type QuantContext,
  type QuantMethod,
  replaceGroups,
  shapeText,
} from "./_method.ts";
import { readColumns } from "./_read.ts";
import { TILE_BYTES, tileCache } from "./_tiles.ts";

/** The MXFP4 method. */
export const MXFP4: QuantMethod = {
  name: "mxfp4",
  reference: "transformers integrations/mxfp4.py convert_moe_packed_tensors; OCP MX v1.0",
  companions: ["_blocks", "_scales"],
  keeps: "MXFP4",
  dequantize(tensors, context) {
    const groups = pairs(tensors, context).map(({ base, blocks, scales }) => ({
      entry: mxfp4Entry(base, blocks, scales, context),
      replaces: [blocks.info.name, scales.info.name],
    }));
    return replaceGroups(tensors, groups, new Set(), context);
  },
  packedForGguf(tensors, context) {
    const paired = new Set<string>();
    for (const { blocks, scales } of pairs(tensors, context)) {
      checkPair(blocks, scales, context);
      paired.add(blocks.info.name).add(scales.info.name);
    }
    const lone = tensors.find((t) => t.info.name.endsWith("_scales") && !paired.has(t.info.name));
    if (lone !== undefined) {
      throw checkpointError(context, `tensor "${lone.info.name}" belongs to no quantized weight`);
    }
    return [...tensors];
  },
};

/** Every `*_blocks` tensor with its `*_scales`. */
function pairs(
  tensors: readonly TensorEntry[],
  context: QuantContext,
): { base: string; blocks: TensorEntry; scales: TensorEntry }[] {
  return anchoredWeights(tensors, "_blocks", context).map(({ base, part }) => ({
    base,
    blocks: part("_blocks"),
    scales: part("_scales"),
  }));
}

/** Refuse a `*_blocks`/`*_scales` pair that is not MXFP4's shapes and types. */
function checkPair(blocks: TensorEntry, scales: TensorEntry, context: QuantContext): void {
  const b = blocks.info.shape;
  const s = scales.info.shape;
  if (
    blocks.info.dtype !== "U8" || scales.info.dtype !== "U8" || b.length !== 4 || b[3] !== 16 ||
    s.length !== 3 || s[0] !== b[0] || s[1] !== b[1] || s[2] !== b[2]
  ) {
    throw checkpointError(
      context,
      `"${blocks.info.name}" ${blocks.info.dtype} ${
        shapeText(b)
      } and "${scales.info.name}" ${scales.info.dtype} ${
        shapeText(s)
      } are not MXFP4 blocks: expected U8 [experts, rows, groups, 16] and U8 [experts, rows, groups]`,
    );
  }
}

function mxfp4Entry(
  name: string,
  blocks: TensorEntry,
  scales: TensorEntry,
  context: QuantContext,
): TensorEntry {
  checkPair(blocks, scales, context);
  const b = blocks.info.shape;
  const [experts, rows, groups] = [b[0]!, b[1]!, b[2]!];
  const columns = groups * 32;
  // Groups per tile: as many as fit decoded (32 f32 per group and row) and a
  // divisor of `groups`, so a tile never spans two experts.
  let perTile = Math.max(
    1,
    Math.min(groups, Math.floor((context.tileBytes ?? TILE_BYTES) / Math.max(1, rows * 128))),
  );
  while (groups % perTile !== 0) perTile--;
  const power = (e: number) => Math.fround(2 ** (e - 127));

  return f32Entry(name, [experts, columns, rows], () => {
    // One tile's packed bytes and values, reused for every tile of the stream.
    const scratch = new Uint8Array(rows * perTile * 16);
    const decoded = new Float32Array(rows * perTile * 32);
    const tile = tileCache(perTile * 32, experts * columns, async (start, end) => {
      const expert = Math.floor(start / columns);
      const g0 = (start % columns) / 32;
      const g1 = g0 + (end - start) / 32;
      const w = g1 - g0;
      const packed = await readColumns(
        blocks,
        groups * 16,
        expert * rows,
        (expert + 1) * rows,
        g0 * 16,
        g1 * 16,
        scratch,
      );
      const exps = await readColumns(scales, groups, expert * rows, (expert + 1) * rows, g0, g1);
      // Decoded once per tile as [rows, w·32].
      const values = decodeF4(packed, decoded.subarray(0, packed.length * 2));
      for (let r = 0; r < rows; r++) {
        for (let g = 0; g < w; g++) {
          const p = power(exps[r * w + g]!);
          const at = (r * w + g) * 32;
          for (let k = 0; k < 32; k++) values[at + k] = values[at + k]! * p;
        }
      }
      return { values, width: w * 32 };
    });
    return async (start, end, out) => {
      for (let row = start; row < end; row++) {
        const { tile: t, start: first } = await tile(row);
        const col = row - first;
        const base = (row - start) * rows;
        for (let r = 0; r < rows; r++) out[base + r] = t.values[r * t.width + col]!;
      }
    };
  });
}
