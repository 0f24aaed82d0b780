// This module is browser compatible.

/**
 * `quant_method: "awq"` (AutoAWQ / llm-awq checkpoints, `version: "gemm"`):
 * `qweight` I32 `[in, out/8]` and `qzeros` I32 `[in/group, out/8]` hold eight
 * 4-bit values per word in AWQ's interleaved order (output column `8j + k`
 * sits at nibble `[0, 4, 1, 5, 2, 6, 3, 7][k]`), `scales` `[in/group, out]`.
 * `weight[o][i] = scales[g][o] × (q[i][o] − z[g][o])`, `g = i / group_size`,
 * computed in f32 (AutoAWQ's `dequantize_gemm` multiplies in the scales'
 * f16, which can round the last bit differently). llama.cpp's converter has
 * no AWQ path; the formula is AutoAWQ's `unpack_awq` + `reverse_awq_order`.
 *
 * @module
 */

import { DTYPES } from "../../dtype.ts";
import type { TensorEntry } from "../../tensor.ts";
import { f32Entry } from "./_f32_entry.ts";
import {
  anchoredWeights,
  checkpointError,
  configInt,
  type QuantContext,
  type QuantMethod,
  replaceGroups,
} from "./_method.ts";
import { checkQweightTriple, type QweightTriple, readScaleColumns } from "./_qweight.ts";
import { int32s, readColumns } from "./_read.ts";
import { tileCache, tileRows } from "./_tiles.ts";

/** Nibble of output column `8j + k` inside word `j`: AutoAWQ's reverse order. */
const NIBBLE = [0, 4, 1, 5, 2, 6, 3, 7];

/** The AWQ method (GEMM packing). */
export const AWQ: QuantMethod = {
  name: "awq",
  reference: "AutoAWQ awq/utils/packing_utils.py unpack_awq, reverse_awq_order, dequantize_gemm",
  companions: [".qweight", ".qzeros", ".scales"],
  dequantize(tensors, context) {
    const bits = configInt(context, "bits", configInt(context, "w_bit", 4));
    if (bits !== 4) throw checkpointError(context, `bits ${bits} is not supported (supported: 4)`);
    const version = String(context.config["version"] ?? "gemm").toLowerCase();
    if (version !== "gemm") {
      throw checkpointError(
        context,
        `version ${JSON.stringify(context.config["version"])} is not supported (supported: gemm)`,
      );
    }
    const groupSize = configInt(context, "group_size", configInt(context, "q_group_size", -1));
    if (groupSize === 0 || groupSize < -1) {
      throw checkpointError(context, `group_size ${groupSize} is not positive`);
    }
    const groups = anchoredWeights(tensors, ".qweight", context).map(({ base, part }) => ({
      entry: awqEntry(
        base + ".weight",
        { qweight: part(".qweight"), qzeros: part(".qzeros"), scales: part(".scales") },
        groupSize,
        context,
      ),
      replaces: [".qweight", ".qzeros", ".scales"].map((s) => base + s),
    }));
    return replaceGroups(tensors, groups, new Set(), context);
  },
};

function awqEntry(
  name: string,
  triple: QweightTriple,
  groupSize: number,
  context: QuantContext,
): TensorEntry {
  const { qweight, qzeros, scales } = triple;
  const fail = checkQweightTriple(triple, context);
  const inputs = qweight.info.shape[0]!;
  const words = qweight.info.shape[1]!;
  const outputs = words * 8;
  const size = groupSize === -1 ? inputs : groupSize;
  const groups = Math.ceil(inputs / size);
  if (scales.info.shape[0] !== groups || scales.info.shape[1] !== outputs) {
    throw fail(`group_size ${groupSize} needs scales [${groups}, ${outputs}]`);
  }
  if (qzeros.info.shape[0] !== groups || qzeros.info.shape[1] !== words) {
    throw fail(`group_size ${groupSize} needs qzeros [${groups}, ${words}]`);
  }
  const scaleBytes = DTYPES[scales.info.dtype].blockBytes;
  const perTile = tileRows(inputs / 2 + groups * (scaleBytes + 0.5), 8, outputs, context.tileBytes);

  return f32Entry(name, [outputs, inputs], () => {
    // One tile's packed words, reused for every tile of the stream.
    const scratch = new Uint8Array(inputs * Math.ceil(perTile / 8) * 4);
    const tile = tileCache(perTile, outputs, async (start, end) => {
      const wordStart = start / 8;
      const wordEnd = Math.ceil(end / 8);
      return {
        wordWidth: wordEnd - wordStart,
        width: end - start,
        words: int32s(
          await readColumns(qweight, words * 4, 0, inputs, wordStart * 4, wordEnd * 4, scratch),
        ),
        zeros: int32s(await readColumns(qzeros, words * 4, 0, groups, wordStart * 4, wordEnd * 4)),
        scales: await readScaleColumns(scales, outputs, groups, start, end),
      };
    });
    return async (start, end, out) => {
      for (let o = start; o < end; o++) {
        const { tile: t, start: first } = await tile(o);
        const col = o - first;
        const word = Math.floor(o / 8) - first / 8;
        const shift = 4 * NIBBLE[o % 8]!;
        const base = (o - start) * inputs;
        for (let i = 0; i < inputs; i++) {
          const g = Math.floor(i / size);
          const q = (t.words[i * t.wordWidth + word]! >>> shift) & 15;
          const z = (t.zeros[g * t.wordWidth + word]! >>> shift) & 15;
          out[base + i] = t.scales[g * t.width + col]! * (q - z);
        }
      }
    };
  });
}
