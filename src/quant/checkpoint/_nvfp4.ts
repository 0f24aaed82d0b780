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
 * one f32 rounding. For GGUF output {@linkcode keptNvfp4} keeps them as
 * stored, under ModelOpt's names, for `arch/kept_blocks.ts` to repack.
 *
 * @module
 */

import type { TensorEntry } from "../../tensor.ts";
import { KVALUES_FP4 } from "../_ggml_grids.ts";
import { ue4m3Half } from "../fp4_blocks.ts";
import { f32Entry } from "./_f32_entry.ts";
import { checkpointError, count, type QuantContext, shapeText } from "./_method.ts";
import { readFloat32, readRange } from "./_read.ts";

/** Values per E4M3 scale. */
const NVFP4_GROUP = 16;

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
  checkNvfp4(packed, scale, factor, context);
  const p = packed.info.shape;
  const [rows, half] = [p[0]!, p[1]!];
  const groups = scale.info.shape[1]!;
  return f32Entry(name, [rows, half * 2], () => {
    let global: Promise<number> | undefined;
    return async (start, end, out) => {
      const g = await (global ??= perTensor(factor, context));
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

/** Values per ggml NVFP4 block: the converter's repacking needs whole ones per row. */
const GGML_NVFP4_BLOCK = 64;

/**
 * For GGUF output, an NVFP4 weight kept as stored, as llama.cpp's converter
 * keeps it: the codes as `name` (`….weight`), the E4M3 scales as
 * `name_scale`, and the per-tensor factor and input scale as one-value F32
 * tensors `name_scale_2` and `….input_scale` (in f32, inverted when the
 * checkpoint stores reciprocals), each left out when it is 1 (the converter's
 * `_scale_is_trivial`), as when the checkpoint has none.
 *
 * @param name The weight's name.
 * @param packed The U8 codes.
 * @param scale The E4M3 scales.
 * @param factor The per-tensor factor.
 * @param input The input (activation) scale, when there is one.
 * @param context For messages.
 * @returns The entries, weight first.
 * @throws {ModelFormatError} When the shapes are not NVFP4's or a row is not whole ggml blocks.
 */
export async function keptNvfp4(
  name: string,
  packed: TensorEntry,
  scale: TensorEntry,
  factor: Nvfp4Factor,
  input: Nvfp4Factor | undefined,
  context: QuantContext,
): Promise<TensorEntry[]> {
  checkNvfp4(packed, scale, factor, context);
  if (input !== undefined && "tensor" in input) checkOneValue(input.tensor, context);
  const columns = packed.info.shape[1]! * 2;
  if (columns % GGML_NVFP4_BLOCK !== 0) {
    throw checkpointError(
      context,
      `NVFP4 weight "${packed.info.name}" has rows of ${columns} values; GGUF's NVFP4 blocks hold ${GGML_NVFP4_BLOCK}, so llama.cpp's converter cannot keep it`,
    );
  }
  const out = [
    { ...packed, info: { ...packed.info, name } },
    { ...scale, info: { ...scale.info, name: name + "_scale" } },
  ];
  const base = name.slice(0, -".weight".length);
  for (const [f, as] of [[factor, name + "_scale_2"], [input, base + ".input_scale"]] as const) {
    if (f === undefined) continue;
    const value = await perTensor(f, context);
    if (Math.abs(value - 1) >= 1e-6) out.push(oneValue(as, value));
  }
  return out;
}

/** A one-value F32 tensor `[1]`. */
function oneValue(name: string, value: number): TensorEntry {
  return f32Entry(name, [1], () => (_start, _end, out) => {
    out[0] = value;
    return Promise.resolve();
  });
}

/** Refuse codes, scales or a factor that are not NVFP4's. */
function checkNvfp4(
  packed: TensorEntry,
  scale: TensorEntry,
  factor: Nvfp4Factor,
  context: QuantContext,
): void {
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
  if ("tensor" in factor) checkOneValue(factor.tensor, context);
}

/** Refuse a per-tensor scale that is not one float. */
function checkOneValue(entry: TensorEntry, context: QuantContext): void {
  const f = entry.info;
  if (count(f.shape) !== 1 || !["F32", "F16", "BF16"].includes(f.dtype)) {
    throw checkpointError(
      context,
      `"${f.name}" is ${f.dtype} ${shapeText(f.shape)}, expected one F32 value`,
    );
  }
}

/**
 * The factor as llama.cpp's converter stores it (f32; `1 / x` rounded to f32
 * when inverted). A factor that is not a finite number (a global scale of 0,
 * a NaN) would write infinite or NaN weights: refused.
 */
async function perTensor(factor: Nvfp4Factor, context: QuantContext): Promise<number> {
  if ("value" in factor) return factor.value;
  const x = (await readFloat32(factor.tensor))[0]!;
  const value = factor.inverted ? Math.fround(1 / x) : x;
  if (!Number.isFinite(value)) {
    throw checkpointError(
      context,
      `"${factor.tensor.info.name}" holds ${x}, which makes the NVFP4 per-tensor factor ${value}`,
    );
  }
  return value;
}
