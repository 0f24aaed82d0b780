// This module is browser compatible.

/**
 * `quant_method: "gptq"` (AutoGPTQ / GPTQModel checkpoints, `checkpoint_format`
 * `gptq` or `gptq_v2`): `qweight` I32 `[in / (32/bits), out]` packed along the
 * input, `qzeros` I32 `[groups, out / (32/bits)]` packed along the output,
 * `scales` `[groups, out]`, `g_idx` I32 `[in]` (the group of each input
 * feature; act-order checkpoints permute it). Dequantized as llama.cpp's
 * `dequant_gptq` (after GPTQModel): `weight[o][i] = scales[g][o] × (q[i][o] −
 * z[g][o])`, `g = g_idx[i]`, in f32; the `gptq` (v1) format stores each zero
 * minus one. Bits 2, 4 and 8; 3-bit packing is refused, as llama.cpp does.
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
  shapeText,
} from "./_method.ts";
import { checkQweightTriple, type QweightTriple, readScaleColumns } from "./_qweight.ts";
import { int32s, readColumns, readRange } from "./_read.ts";
import { tileCache, tileRows } from "./_tiles.ts";

/** Bit widths dequantized. */
const BITS = [2, 4, 8];

/** The GPTQ method. */
export const GPTQ: QuantMethod = {
  name: "gptq",
  reference:
    "llama.cpp conversion/base.py dequant_gptq; GPTQModel nn_modules/qlinear dequantize_weight",
  companions: [".qweight", ".qzeros", ".scales", ".g_idx"],
  dequantize(tensors, context) {
    const bits = configInt(context, "bits");
    if (!BITS.includes(bits)) {
      throw checkpointError(context, `bits ${bits} is not supported (supported: 2, 4, 8)`);
    }
    const format = context.config["checkpoint_format"] ?? "gptq";
    if (format !== "gptq" && format !== "gptq_v2") {
      throw checkpointError(
        context,
        `checkpoint_format ${JSON.stringify(format)} is not supported (supported: gptq, gptq_v2)`,
      );
    }
    const groupSize = configInt(context, "group_size", -1);
    const groups = anchoredWeights(tensors, ".qweight", context).map(({ base, part, optional }) => {
      const gIdx = optional(".g_idx");
      const layer: GptqLayer = {
        qweight: part(".qweight"),
        qzeros: part(".qzeros"),
        scales: part(".scales"),
        gIdx,
        bits,
        zeroOffset: format === "gptq" ? 1 : 0,
        groupSize,
      };
      return {
        entry: gptqEntry(base + ".weight", layer, context),
        replaces: [".qweight", ".qzeros", ".scales", ...(gIdx ? [".g_idx"] : [])].map((s) =>
          base + s
        ),
      };
    });
    return replaceGroups(tensors, groups, new Set(), context);
  },
};

interface GptqLayer extends QweightTriple {
  gIdx: TensorEntry | undefined;
  bits: number;
  /** 1 for the v1 format, which stores zeros minus one. */
  zeroOffset: number;
  groupSize: number;
}

function gptqEntry(name: string, layer: GptqLayer, context: QuantContext): TensorEntry {
  const { qweight, qzeros, scales, gIdx, bits } = layer;
  const fail = checkQweightTriple(layer, context);
  const pack = 32 / bits;
  const packed = qweight.info.shape[0]!;
  const outputs = qweight.info.shape[1]!;
  const inputs = packed * pack;
  const groups = scales.info.shape[0]!;
  if (scales.info.shape[1] !== outputs) throw fail(`scales must have ${outputs} columns`);
  if (outputs % pack !== 0 || qzeros.info.shape[1] !== outputs / pack) {
    throw fail(`qzeros must have ${outputs / pack} columns (${pack} zeros per word)`);
  }
  if (qzeros.info.shape[0] !== groups) throw fail(`qzeros must have ${groups} rows, as scales`);
  if (groups === 0 && inputs > 0) throw fail("no groups");
  if (gIdx !== undefined) {
    if (
      !["I32", "I64"].includes(gIdx.info.dtype) || gIdx.info.shape.length !== 1 ||
      gIdx.info.shape[0] !== inputs
    ) {
      throw checkpointError(
        context,
        `"${gIdx.info.name}" must be I32 [${inputs}] (found ${gIdx.info.dtype} ${
          shapeText(gIdx.info.shape)
        })`,
      );
    }
  }
  // GPTQ's writers (AutoGPTQ, GPTQModel) allocate ceil(in / group_size) groups
  // with or without act-order: g_idx only permutes which inputs share one. More
  // rows than inputs are groups nothing reads, and each tile would read them
  // all (500k groups took 383 s).
  const expect = layer.groupSize > 0 ? Math.ceil(inputs / layer.groupSize) : 1;
  if (layer.groupSize === 0 || layer.groupSize < -1 || groups !== expect) {
    throw fail(`group_size ${layer.groupSize} means ${expect} groups, not ${groups}`);
  }
  const scaleBytes = DTYPES[scales.info.dtype].blockBytes;
  const maxq = (1 << bits) - 1;
  const perTile = tileRows(
    packed * 4 + groups * (scaleBytes + 4 / pack),
    pack,
    outputs,
    context.tileBytes,
  );

  return f32Entry(name, [outputs, inputs], () => {
    let index: Promise<Int32Array> | undefined;
    // One tile's packed words, reused for every tile of the stream.
    const scratch = new Uint8Array(packed * perTile * 4);
    const tile = tileCache(perTile, outputs, async (start, end) => {
      const width = end - start;
      return {
        width,
        words: int32s(
          await readColumns(qweight, outputs * 4, 0, packed, start * 4, end * 4, scratch),
        ),
        zeros: int32s(
          await readColumns(
            qzeros,
            (outputs / pack) * 4,
            0,
            groups,
            (start / pack) * 4,
            Math.ceil(end / pack) * 4,
          ),
        ),
        zeroWidth: Math.ceil(end / pack) - start / pack,
        scales: await readScaleColumns(scales, outputs, groups, start, end),
      };
    });
    return async (start, end, out) => {
      const g = await (index ??= groupIndex(layer, inputs, groups, context));
      for (let o = start; o < end; o++) {
        const { tile: t, start: first } = await tile(o);
        const col = o - first;
        const zeroCol = Math.floor(o / pack) - first / pack;
        const zeroShift = bits * (o % pack);
        const base = (o - start) * inputs;
        for (let i = 0; i < inputs; i++) {
          const group = g[i]!;
          const q = (t.words[Math.floor(i / pack) * t.width + col]! >>> (bits * (i % pack))) &
            maxq;
          const z = ((t.zeros[group * t.zeroWidth + zeroCol]! >>> zeroShift) & maxq) +
            layer.zeroOffset;
          out[base + i] = t.scales[group * t.width + col]! * (q - z);
        }
      }
    };
  });
}

/** `g_idx`, checked (a hostile index must not read outside the scales), or the default. */
async function groupIndex(
  layer: GptqLayer,
  inputs: number,
  groups: number,
  context: QuantContext,
): Promise<Int32Array> {
  const { gIdx, groupSize } = layer;
  const g = new Int32Array(inputs);
  if (gIdx === undefined) {
    for (let i = 0; i < inputs; i++) g[i] = groupSize > 0 ? Math.floor(i / groupSize) : 0;
    return g;
  }
  const bytes = await readRange(gIdx, 0, gIdx.info.byteLength);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const wide = gIdx.info.dtype === "I64";
  for (let i = 0; i < inputs; i++) {
    const v = wide ? Number(view.getBigInt64(i * 8, true)) : view.getInt32(i * 4, true);
    if (!(v >= 0 && v < groups)) {
      throw checkpointError(
        context,
        `"${gIdx.info.name}"[${i}] is ${v}, outside the ${groups} groups of its scales`,
      );
    }
    g[i] = v;
  }
  return g;
}
