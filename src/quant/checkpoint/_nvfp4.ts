// This module is browser compatible.

/**
 * NVFP4 weights (NVIDIA ModelOpt `quant_algo: NVFP4`, compressed-tensors
 * `nvfp4-pack-quantized`): a U8 tensor `[out, in/2]` of E2M1 codes, the first
 * value of each pair in the low nibble; an F8_E4M3 `weight_scale`
 * `[out, in/16]`, one scale per 16 values; and one F32 per-tensor factor
 * (ModelOpt's `weight_scale_2`, the reciprocal of compressed-tensors'
 * `weight_global_scale`). llama.cpp's converter keeps these blocks as ggml's
 * NVFP4 (`_nvfp4_pack`, the scale's sign bit dropped) with the factor as a
 * separate `.scale` tensor that inference multiplies in; dequantized here
 * they are exactly that: ggml's `dequantize_row_nvfp4` value times the factor,
 * one f32 rounding.
 *
 * @module
 */

import type { TensorEntry } from "../../tensor.ts";
import { KVALUES_FP4 } from "../_ggml_grids.ts";
import { ue4m3Half } from "../fp4_blocks.ts";
import { f32Entry } from "./_f32_entry.ts";
import { checkpointError, count, type QuantContext, shapeText } from "./_method.ts";
import { readFloat32, readRange } from "./_read.ts";

/**
 * Why an NVFP4 checkpoint is not written as GGUF: llama.cpp's converter keeps
 * its blocks as ggml's NVFP4 with per-tensor `.scale`/`.input_scale` tensors,
 * which aprkit does not write yet; a dequantized GGUF would not be the
 * converter's model.
 */
export const NVFP4_GGUF_REFUSAL =
  "its NVFP4 weights stay NVFP4 in llama.cpp's converter output, which aprkit does not write yet; supported outputs: apr, safetensors (dequantized)";

/** Values per E4M3 scale. */
export const NVFP4_GROUP = 16;

/** The per-tensor factor: a one-value tensor, or a number when the checkpoint has none. */
export type Nvfp4Factor =
  | { readonly tensor: TensorEntry; readonly inverted: boolean }
  | { readonly value: number };

/**
 * Whether `weight`/`scale` look like an NVFP4 pair (U8 codes, a 2-D E4M3
 * scale): the checkpoint's FP8 weights have a scale of rank 0 or 1.
 *
 * @param scale The `weight_scale` tensor.
 * @returns Whether its rank is NVFP4's.
 */
export function isNvfp4Scale(scale: TensorEntry): boolean {
  return scale.info.shape.length >= 2;
}

/**
 * The dequantized F32 entry of an NVFP4 weight.
 *
 * @param name Name of the output tensor.
 * @param packed The U8 codes `[out, in/2]`.
 * @param scale The F8_E4M3 scales `[out, in/16]`.
 * @param factor The per-tensor factor (`inverted`: the tensor holds its reciprocal, as
 *   compressed-tensors' global scale; llama.cpp's converter stores `1 / it` in f32).
 * @param context For messages.
 * @returns The entry `[out, in]`.
 * @throws {ModelFormatError} When the shapes or dtypes are not NVFP4's.
 */
export function nvfp4Entry(
  name: string,
  packed: TensorEntry,
  scale: TensorEntry,
  factor: Nvfp4Factor,
  context: QuantContext,
): TensorEntry {
  const p = packed.info.shape;
  const s = scale.info.shape;
  if (
    packed.info.dtype !== "U8" || scale.info.dtype !== "F8_E4M3" || p.length !== 2 ||
    s.length !== 2 || s[0] !== p[0] || p[1]! * 2 !== s[1]! * NVFP4_GROUP || p[1] === 0
  ) {
    throw checkpointError(
      context,
      `"${packed.info.name}" ${packed.info.dtype} ${
        shapeText(p)
      } and "${scale.info.name}" ${scale.info.dtype} ${
        shapeText(s)
      } are not NVFP4: expected U8 [out, in/2] and F8_E4M3 [out, in/16] (one scale per 16 values)`,
    );
  }
  if ("tensor" in factor) {
    const f = factor.tensor.info;
    if (count(f.shape) !== 1 || !["F32", "F16", "BF16"].includes(f.dtype)) {
      throw checkpointError(
        context,
        `"${f.name}" is ${f.dtype} ${shapeText(f.shape)}, expected one F32 value`,
      );
    }
  }
  const [rows, half] = [p[0]!, p[1]!];
  const groups = s[1]!;
  return f32Entry(name, [rows, half * 2], () => {
    let global: Promise<number> | undefined;
    return async (start, end, out) => {
      const g = await (global ??= perTensor(factor));
      const codes = await readRange(packed, start * half, end * half);
      const scales = await readRange(scale, start * groups, end * groups);
      for (let i = 0; i < codes.length; i++) {
        const d = ue4m3Half(scales[Math.floor(i / (NVFP4_GROUP / 2))]!);
        const q = codes[i]!;
        out[2 * i] = Math.fround(KVALUES_FP4[q & 0xf]! * d * g);
        out[2 * i + 1] = Math.fround(KVALUES_FP4[q >>> 4]! * d * g);
      }
    };
  });
}

/** The factor as llama.cpp's converter stores it (f32; `1 / x` rounded to f32 when inverted). */
async function perTensor(factor: Nvfp4Factor): Promise<number> {
  if ("value" in factor) return factor.value;
  const x = (await readFloat32(factor.tensor))[0]!;
  return factor.inverted ? Math.fround(1 / x) : x;
}
