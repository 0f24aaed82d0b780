// This module is browser compatible.

/**
 * The state-space layers' tensors as llama.cpp's converter writes them
 * (conversion/mamba.py, and the hybrids that reuse its `modify_tensors`):
 * `A_log` as `ssm_a` = −exp(A_log), the depthwise `conv1d.weight`
 * `[channels, 1, kernel]` squeezed to `[channels, kernel]`, and Mamba-2's
 * per-head `A`/`D` as one-column matrices and its gated norm as
 * `[groups, inner / groups]`. Each is a {@linkcode MadeTensor} written where
 * its source is; the other SSM tensors are renamed as any others.
 *
 * @module
 */

import { tensorByteLength } from "../dtype.ts";
import type { TensorInfo } from "../tensor.ts";
import type { MadeTensor } from "./family.ts";
import type { KvWriter } from "./kv.ts";
import { mapFloats } from "./transforms.ts";

/** One SSM tensor the converter reshapes (and for `A_log`, recomputes). */
export interface SsmTensor {
  /** The Hugging Face piece after `<block prefix>.N.` (`mixer.A_log`). */
  readonly piece: string;
  /** The GGUF name after `blk.N.`, suffix included (`ssm_a`, `ssm_conv1d.weight`). */
  readonly gguf: string;
  /**
   * The GGUF shape (outermost first, as Hugging Face's) from the
   * checkpoint's and the config.
   */
  shape(shape: readonly number[], w: KvWriter): readonly number[];
  /** Whether the values become −exp(value) (`A_log` → `A`). */
  readonly negExp?: boolean;
}

/** Mamba's (and Jamba's) depthwise convolution: `[channels, 1, kernel]` → `[channels, kernel]`. */
export function squeezed(shape: readonly number[]): readonly number[] {
  return shape.filter((n) => n !== 1);
}

/** Mamba-2's per-head `A` and `D`: `[heads]` → `[heads, 1]` (`reshape((*shape, 1))`). */
export function oneColumn(shape: readonly number[]): readonly number[] {
  return [...shape, 1];
}

/**
 * The SSM tensors of every block of a checkpoint, made as the converter
 * makes them.
 *
 * @param tensors The checkpoint's tensors.
 * @param w The writer over `config.json`.
 * @param prefix Where the blocks live (`backbone.layers`, `model.layers`).
 * @param rules The family's reshaped tensors.
 * @returns One made tensor per matching checkpoint tensor.
 * @throws {RangeError} When a tensor to recompute is not F32 (the converter
 * computes −exp in the checkpoint's own float type, which aprkit does not
 * reproduce), or a reshape does not keep its element count.
 */
export function ssmTensors(
  tensors: readonly TensorInfo[],
  w: KvWriter,
  prefix: string,
  rules: readonly SsmTensor[],
): MadeTensor[] {
  const pattern = new RegExp(`^${prefix.replaceAll(".", "\\.")}\\.(\\d+)\\.(.+)$`);
  const made: MadeTensor[] = [];
  for (const info of tensors) {
    const m = pattern.exec(info.name);
    const rule = m === null ? undefined : rules.find((r) => r.piece === m[2]);
    if (m === null || rule === undefined) continue;
    const shape = rule.shape(info.shape, w);
    const byteLength = tensorByteLength(info.dtype, shape);
    if (byteLength !== info.byteLength) {
      throw new RangeError(
        `Cannot convert "${info.name}" [${info.shape}] to GGUF: it does not reshape to [${shape}]`,
      );
    }
    if (rule.negExp === true && info.dtype !== "F32") {
      throw new RangeError(
        `Cannot convert "${info.name}" to GGUF: it is ${info.dtype}; aprkit computes ` +
          `llama.cpp's −exp(A_log) from F32 values only`,
      );
    }
    made.push({
      info: { name: `blk.${m[1]}.${rule.gguf}`, dtype: info.dtype, shape, byteLength },
      needs: [info.name],
      open: ([source]) =>
        rule.negExp === true
          ? mapFloats(source!.open(), "F32", (x) => -Math.exp(x))
          : source!.open(),
    });
  }
  return made;
}
