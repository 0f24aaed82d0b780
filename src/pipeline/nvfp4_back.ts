/**
 * NVFP4 weights of a GGUF read back into their Hugging Face checkpoint's
 * values (`hf_layout.ts`), as the checkpoint's own import dequantizes them
 * (`quant/checkpoint/_nvfp4.ts`: E2M1 × E4M3 × `weight_scale_2`): llama.cpp's
 * converter (and aprkit's, `arch/kept_blocks.ts`) writes each NVFP4 weight as
 * ggml NVFP4 blocks with its per-tensor factor beside it as an F32 `.scale`
 * (`[1]`, or `[experts]` for stacked `*_exps`), which llama.cpp's graph
 * multiplies in. Here each weight is decoded to F32 and multiplied by its
 * factor (expert by expert for a stack, so unstacking slices one expert's
 * rows), one f32 rounding, so the values equal the checkpoint's import to the
 * bit. The `.scale` tensors are consumed; the `.input_scale` tensors are
 * activation scales (for kernels that quantize the input), no part of the
 * weights, and are dropped. A `.scale` left out is a factor of 1, as the
 * converter leaves out a trivial one (`_scale_is_trivial`) and llama.cpp then
 * multiplies nothing.
 *
 * A weight and its `.scale` are paired by the header: the outputs go where
 * the later of the two arrives (the writers put the scale right after its
 * weight), and until then the earlier one's entry, not its payload, is held.
 *
 * @module
 */

import { elementCount, tensorByteLength } from "../dtype.ts";
import { decodeStream } from "../quant/decode.ts";
import type { TensorEntry, TensorInfo } from "../tensor.ts";
import type { JoinedOutput } from "./joined_back.ts";
import { wholePayload } from "./whole_payload.ts";

/** F32 values per ggml NVFP4 block, and the block's bytes. */
const BLOCK_VALUES = 64;
const BLOCK_BYTES = 36;

/**
 * The GGUF name of a tensor the reader named (it gives llama-like
 * architectures' weights Hugging Face names, and leaves `.scale` and
 * `.input_scale` as they are).
 */
export type GgufNameOf = (name: string) => string;

/** The stem of a weight's `.scale` and `.input_scale`. */
function stemOf(weight: string, ggufName: GgufNameOf): string {
  return ggufName(weight).slice(0, -".weight".length);
}

/** The NVFP4 weights of a GGUF's tensors, by the name of their `.scale`/`.input_scale`. */
function nvfp4Weights(
  tensors: readonly TensorInfo[],
  ggufName: GgufNameOf,
): Map<string, TensorInfo> {
  const byName = new Map<string, TensorInfo>();
  for (const t of tensors) {
    if (t.dtype !== "NVFP4" || !t.name.endsWith(".weight")) continue;
    const stem = stemOf(t.name, ggufName);
    byName.set(stem + ".scale", t);
    byName.set(stem + ".input_scale", t);
  }
  return byName;
}

/**
 * Why a GGUF's NVFP4 weights cannot be read back with their `.scale`, or
 * `undefined`: a `.scale` that is not one F32 per weight (per expert of a
 * stack), or an NVFP4 weight that is a part of a joined tensor (which
 * `joined_back.ts` would decode without its factor).
 *
 * @param tensors The GGUF's tensors.
 * @param joinParts The names of the tensors the family joins.
 * @param ggufName The GGUF name of a tensor.
 * @returns The problem, naming the tensor.
 */
export function nvfp4BackProblem(
  tensors: readonly TensorInfo[],
  joinParts: ReadonlySet<string>,
  ggufName: GgufNameOf,
): string | undefined {
  const weights = nvfp4Weights(tensors, ggufName);
  for (const t of tensors) {
    const weight = weights.get(t.name);
    if (weight === undefined || !t.name.endsWith(".scale") || t.name.endsWith(".input_scale")) {
      continue;
    }
    const count = factorCount(weight);
    if (t.dtype !== "F32" || elementCount(t.shape) !== count) {
      return `its "${t.name}" is ${t.dtype} [${t.shape}], but the per-tensor factor of NVFP4 ` +
        `weight "${weight.name}" [${weight.shape}] is ${count} F32 value${count > 1 ? "s" : ""}`;
    }
  }
  const joined = tensors.find((t) => t.dtype === "NVFP4" && joinParts.has(t.name));
  return joined === undefined
    ? undefined
    : `its NVFP4 weight "${joined.name}" is a part of a joined tensor, which aprkit does not ` +
      "read back with its .scale";
}

/** One factor per expert of a stack `[experts, rows, cols]`, else one. */
function factorCount(weight: TensorInfo): number {
  return weight.shape.length === 3 ? weight.shape[0]! : 1;
}

/** The NVFP4 weights of a GGUF read back. */
export interface Nvfp4Back {
  /**
   * The outputs of a tensor of an NVFP4 pair (its weight's outputs, made by
   * `outputs` from the weight's F32 info, for the later of weight and
   * `.scale`; nothing for the earlier or an `.input_scale`); `undefined` for
   * other tensors.
   */
  outputsOf(
    name: string,
    outputs: (info: TensorInfo) => JoinedOutput[],
  ): JoinedOutput[] | undefined;
  /** Hold the entry of a weight or `.scale` until its pair is complete (others are ignored). */
  hold(entry: TensorEntry): void;
}

/**
 * The NVFP4 weights among a GGUF's tensors, checked by
 * {@linkcode nvfp4BackProblem} first.
 *
 * @param tensors The GGUF's tensors, in the order they arrive.
 * @param ggufName The GGUF name of a tensor.
 * @returns How to hold the pairs and what each makes.
 */
export function nvfp4Back(tensors: readonly TensorInfo[], ggufName: GgufNameOf): Nvfp4Back {
  const names = new Set(tensors.map((t) => t.name));
  const order = new Map(tensors.map((t, i) => [t.name, i]));
  const weights = nvfp4Weights(tensors, ggufName);
  const held = new Map<string, TensorEntry>();
  // Each member of a pair: its weight, and whether it is the pair's later one.
  const members = new Map<string, { weight: TensorInfo; scale?: string; last: boolean }>();
  for (const t of tensors) {
    if (t.dtype !== "NVFP4" || !t.name.endsWith(".weight")) continue;
    const scale = stemOf(t.name, ggufName) + ".scale";
    if (!names.has(scale)) {
      members.set(t.name, { weight: t, last: true });
      continue;
    }
    const weightLast = order.get(t.name)! > order.get(scale)!;
    members.set(t.name, { weight: t, scale, last: weightLast });
    members.set(scale, { weight: t, scale, last: !weightLast });
  }
  return {
    outputsOf(name, outputs) {
      const member = members.get(name);
      if (member === undefined) {
        // An NVFP4 weight's activation scale: no part of the weights.
        return weights.has(name) && name.endsWith(".input_scale") ? [] : undefined;
      }
      if (!member.last) return [];
      const { weight, scale } = member;
      const info: TensorInfo = {
        name: weight.name,
        dtype: "F32",
        shape: weight.shape,
        byteLength: tensorByteLength("F32", weight.shape),
      };
      let entry: TensorEntry | undefined;
      // One scaled entry for all of the weight's outputs (its experts); the pair is then let go.
      const once = () => {
        if (entry !== undefined) return entry;
        entry = scaledEntry(
          info,
          held.get(weight.name)!,
          scale === undefined ? undefined : held.get(scale),
        );
        held.delete(weight.name);
        if (scale !== undefined) held.delete(scale);
        return entry;
      };
      return outputs(info).map((out) => ({ info: out.info, make: () => out.make(once()) }));
    },
    hold(entry) {
      if (members.has(entry.info.name)) held.set(entry.info.name, entry);
    },
  };
}

/**
 * The weight's F32 values times its factor(s): the whole tensor, or (for
 * unstacking) a range of whole blocks, decoded from only its blocks.
 */
function scaledEntry(
  info: TensorInfo,
  weight: TensorEntry,
  scale: TensorEntry | undefined,
): TensorEntry {
  const count = factorCount(weight.info);
  let factors: Promise<Float32Array> | undefined;
  const read = () =>
    factors ??= scale === undefined
      ? Promise.resolve(new Float32Array(count).fill(1))
      : readF32(scale);
  const perFactor = elementCount(info.shape) / count;
  const range = (start: number, end: number, payload: () => ReadableStream<Uint8Array>) =>
    scaled(payload, { ...weight.info, shape: [(end - start) / 4] }, start / 4, perFactor, read);
  const slice = weight.slice;
  return {
    info,
    open: () => range(0, info.byteLength, () => weight.open()),
    ...slice === undefined ? {} : {
      slice: (start: number, end: number) => {
        const block = BLOCK_VALUES * 4;
        if (start % block !== 0 || end % block !== 0) {
          throw new RangeError(`Cannot slice "${info.name}" inside an NVFP4 block`);
        }
        const from = start / block * BLOCK_BYTES;
        const to = end / block * BLOCK_BYTES;
        return range(start, end, () => slice(from, to));
      },
    },
  };
}

/** Decode NVFP4 blocks starting at value `first` and multiply each value by its factor. */
function scaled(
  payload: () => ReadableStream<Uint8Array>,
  blocks: TensorInfo,
  first: number,
  perFactor: number,
  factors: () => Promise<Float32Array>,
): ReadableStream<Uint8Array> {
  const info = { ...blocks, byteLength: tensorByteLength("NVFP4", blocks.shape) };
  let at = first;
  return decodeStream(info, payload()).pipeThrough(
    new TransformStream<Float32Array, Uint8Array>({
      async transform(batch, controller) {
        const f = await factors();
        const out = new Float32Array(batch.length);
        for (let i = 0; i < batch.length; i++, at++) {
          // The block's value is exact in f32; the product is rounded once, as the import's.
          out[i] = batch[i]! * f[Math.floor(at / perFactor)]!;
        }
        controller.enqueue(new Uint8Array(out.buffer));
      },
    }),
  );
}

/** A small F32 tensor's values (a `.scale`: one per weight or expert). */
async function readF32(entry: TensorEntry): Promise<Float32Array> {
  const bytes = await wholePayload(entry.open(), entry.info.byteLength, entry.info.name);
  // Little-endian on every platform Deno runs on.
  return new Float32Array(bytes.buffer);
}
