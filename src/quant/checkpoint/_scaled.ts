// This module is browser compatible.

/**
 * `weight × scale` with the scale broadcast over blocks, channels or the
 * whole tensor: llama.cpp's `dequant_simple` (convert_hf_to_gguf.py,
 * `ModelBase.dequant_model`), used by fp8 (`weight_scale_inv`, any
 * `weight_block_size`, unpadded edge blocks), compressed-tensors'
 * float/int-quantized `weight_scale`.
 * Computed in f32 as torch does (`weight.float() * scale.float()`), so the
 * values match llama.cpp's F32 output bit for bit.
 *
 * @module
 */

import { DTYPES } from "../../dtype.ts";
import type { TensorEntry } from "../../tensor.ts";
import { f32Entry } from "./_f32_entry.ts";
import { checkpointError, count, type QuantContext, shapeText } from "./_method.ts";
import { decodeInto, readFloat32, readRange } from "./_read.ts";

/** Largest scale tensor read whole: real ones are kilobytes (one per block or row). */
export const MAX_SCALE_BYTES = 64 * 1024 * 1024;

/** Weight dtypes a scale applies to. */
const WEIGHT_DTYPES = new Set(["F8_E4M3", "F8_E5M2", "I8", "F16", "BF16", "F32"]);
/** Scale dtypes. */
const SCALE_DTYPES = new Set(["F32", "F16", "BF16", "F64", "F8_E8M0"]);

/**
 * The dequantized entry for `weight` scaled by `scale`.
 *
 * @param name Name of the output tensor.
 * @param weight The quantized weight.
 * @param scale Its scale (same rank with blocks; else broadcast from the left).
 * @param blocks Block sizes of the last dimensions, or `undefined` (per tensor / channel).
 * @param context For messages.
 * @returns The F32 entry.
 */
export function scaledEntry(
  name: string,
  weight: TensorEntry,
  scale: TensorEntry,
  blocks: readonly number[] | undefined,
  context: QuantContext,
): TensorEntry {
  const w = weight.info.shape;
  const s = scale.info.shape;
  const bad = (why: string) =>
    checkpointError(
      context,
      `scale "${scale.info.name}" ${shapeText(s)} does not fit weight "${weight.info.name}" ${
        shapeText(w)
      }${blocks === undefined ? "" : ` with blocks ${shapeText(blocks)}`}: ${why}`,
    );
  if (!WEIGHT_DTYPES.has(weight.info.dtype)) {
    throw checkpointError(
      context,
      `weight "${weight.info.name}" is ${weight.info.dtype}; a scale applies to ${
        [...WEIGHT_DTYPES].join(", ")
      }`,
    );
  }
  if (!SCALE_DTYPES.has(scale.info.dtype)) {
    throw checkpointError(
      context,
      `scale "${scale.info.name}" is ${scale.info.dtype}, expected F32, F16, BF16 or F8_E8M0`,
    );
  }
  if (scale.info.byteLength > MAX_SCALE_BYTES) {
    throw checkpointError(
      context,
      `scale "${scale.info.name}" holds ${scale.info.byteLength} bytes, over the ${MAX_SCALE_BYTES}-byte limit`,
    );
  }
  // For each weight dimension: the divisor mapping a coordinate to its scale
  // coordinate (block size; 1 per channel; Infinity when broadcast).
  const divisors: number[] = [];
  let scaleDims: number[];
  if (blocks !== undefined) {
    if (s.length !== w.length || blocks.length > w.length) {
      throw bad("a block scale has the weight's rank");
    }
    scaleDims = [...s];
    const offset = w.length - blocks.length;
    for (let d = 0; d < w.length; d++) {
      if (d >= offset) {
        const size = blocks[d - offset]!;
        if (s[d] !== Math.ceil(w[d]! / size)) {
          throw bad(`dimension ${d} needs ${Math.ceil(w[d]! / size)} blocks`);
        }
        divisors.push(size);
      } else {
        divisors.push(leading(s[d]!, w[d]!, d));
      }
    }
  } else {
    // llama.cpp aligns the scale to the weight by appending size-1 dimensions.
    if (s.length > w.length) throw bad("the scale has more dimensions than the weight");
    scaleDims = [...s, ...new Array(w.length - s.length).fill(1)];
    if (w.length === 0 && count(s) !== 1) throw bad("a scalar weight takes one scale");
    for (let d = 0; d < w.length; d++) divisors.push(leading(scaleDims[d]!, w[d]!, d));
  }
  function leading(sd: number, wd: number, d: number): number {
    if (sd === wd) return 1;
    if (sd === 1) return Infinity;
    throw bad(`dimension ${d} is neither ${wd} nor 1`);
  }
  const strides = new Array<number>(w.length).fill(1);
  for (let d = w.length - 2; d >= 0; d--) strides[d] = strides[d + 1]! * scaleDims[d + 1]!;
  const columns = w.length === 0 ? 1 : w[w.length - 1]!;
  const at = (x: number, d: number) => divisors[d] === Infinity ? 0 : Math.floor(x / divisors[d]!);
  const columnPart = new Int32Array(columns);
  if (w.length > 0) { for (let c = 0; c < columns; c++) columnPart[c] = at(c, w.length - 1); }
  const elementBytes = DTYPES[weight.info.dtype].blockBytes;

  return f32Entry(name, w, () => {
    let scales: Promise<Float32Array> | undefined;
    return async (start, end, out) => {
      const factors = await (scales ??= readFloat32(scale));
      const bytes = await readRange(
        weight,
        start * columns * elementBytes,
        end * columns * elementBytes,
      );
      decodeInto(weight.info.dtype, bytes, out);
      for (let r = start; r < end; r++) {
        let rest = r;
        let rowPart = 0;
        for (let d = w.length - 2; d >= 0; d--) {
          rowPart += at(rest % w[d]!, d) * strides[d]!;
          rest = Math.floor(rest / w[d]!);
        }
        const base = (r - start) * columns;
        for (let c = 0; c < columns; c++) {
          out[base + c] = out[base + c]! * factors[rowPart + columnPart[c]!]!;
        }
      }
    };
  });
}
