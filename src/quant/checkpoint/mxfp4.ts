// This module is browser compatible.

/**
 * `quant_method: "mxfp4"` (openai/gpt-oss): expert weights as `*_blocks` U8
 * `[experts, rows, groups, 16]` — 32 E2M1 values per group, the first in each
 * byte's low nibble — and `*_scales` U8 `[experts, rows, groups]`, one E8M0
 * exponent per group (`2^(s − 127)`). Dequantized as transformers'
 * `convert_moe_packed_tensors` (integrations/mxfp4.py): the values times their
 * group's power of two, then each expert transposed, so `…gate_up_proj`
 * comes out `[experts, groups·32, rows]` as the BF16 gpt-oss
 * checkpoints store it. GGUF output would keep MXFP4 as llama.cpp does, which
 * needs the gpt-oss family; until then a GGUF output of it is refused.
 *
 * @module
 */

import type { TensorEntry } from "../../tensor.ts";
import { decodeF4 } from "../float6_4.ts";
import { f32Entry } from "./_f32_entry.ts";
import {
  checkpointError,
  companion,
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
  ggufRefusal:
    "llama.cpp keeps gpt-oss's MXFP4 experts as MXFP4 in GGUF, and aprkit does not have the gpt-oss family yet; convert it to APR or SafeTensors (dequantized)",
  companions: ["_blocks", "_scales"],
  dequantize(tensors, context) {
    const byName = new Map(tensors.map((t) => [t.info.name, t]));
    const groups: { entry: TensorEntry; replaces: string[] }[] = [];
    for (const { info: { name } } of tensors) {
      if (!name.endsWith("_blocks")) continue;
      const base = name.slice(0, -"_blocks".length);
      const scales = companion(byName, base + "_scales", context, name);
      groups.push({
        entry: mxfp4Entry(base, byName.get(name)!, scales, context),
        replaces: [name, base + "_scales"],
      });
    }
    return replaceGroups(tensors, groups, new Set(), context);
  },
};

function mxfp4Entry(
  name: string,
  blocks: TensorEntry,
  scales: TensorEntry,
  context: QuantContext,
): TensorEntry {
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
