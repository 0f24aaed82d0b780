// This module is browser compatible.

/**
 * Internal: the one table of block encoders (the "kernels"), shared by
 * {@linkcode TensorEncoder}, the encoder workers and their in-thread fallback,
 * so a new kernel (or a faster form of one) is registered in one place.
 *
 * @module
 */

import { encodeAprQ4 } from "./apr_q4.ts";
import { encodeQ4K } from "./q4_k.ts";
import { encodeQ5K } from "./q5_k.ts";
import { encodeQ6K } from "./q6_k.ts";
import { encodeQ8_0 } from "./q8_0.ts";
import { encodeQ5_0, encodeQ5_1 } from "./q5_0.ts";
import { encodeQ4_0, encodeQ4_1 } from "./q4_0.ts";
import { encodeQ2K } from "./q2_k.ts";
import { encodeQ3K } from "./q3_k.ts";
import { encodeQ1_0, encodeQ2_0, encodeTq1_0, encodeTq2_0 } from "./ternary_encoders.ts";
import { encodeMxfp4 } from "./mxfp4_encoder.ts";
import { I_QUANT_ENCODERS, type IQuantTarget } from "./i_quants_encode.ts";
import { type KernelBackend, kernelBackend } from "./kernels.ts";
import { type Bf16Target, wasmKernels } from "./wasm/kernels.ts";
import {
  bf16Output,
  type BlockEncoder,
  encodeBf16InWasm,
  isBf16Target,
  wasmPlainEncoder,
  wasmWeightedEncoder,
} from "./_wasm_block_encoders.ts";
import { decodeBf16 } from "./bf16.ts";

export { type BlockEncoder, isBf16Target };

/** Dtypes encoded block by block. */
export type BlockTarget =
  | "APR_Q4"
  | "Q4_K"
  | "Q5_K"
  | "Q6_K"
  | "Q8_0"
  | "Q5_0"
  | "Q5_1"
  | "Q4_0"
  | "Q4_1"
  | "Q2_K"
  | "Q3_K"
  | "TQ1_0"
  | "TQ2_0"
  | "Q1_0"
  | "Q2_0"
  | "MXFP4"
  | IQuantTarget;

/**
 * Every block encoder, by target: a new ggml type is registered here (and in
 * {@linkcode BlockTarget}), and every writer and llama-quantize preset that
 * needs it can use it. The encoders that take no importance weights ignore
 * them, as ggml's do (Q8_0, the ternary types, MXFP4; APR_Q4 has none).
 */
export const BLOCK_ENCODERS: Readonly<Record<BlockTarget, BlockEncoder>> = {
  APR_Q4: (v, out) => encodeAprQ4(v, out),
  Q4_K: encodeQ4K,
  Q5_K: encodeQ5K,
  Q6_K: encodeQ6K,
  Q8_0: (v, out) => encodeQ8_0(v, out),
  Q5_0: encodeQ5_0,
  Q5_1: encodeQ5_1,
  Q4_0: encodeQ4_0,
  Q4_1: encodeQ4_1,
  Q2_K: encodeQ2K,
  Q3_K: encodeQ3K,
  TQ1_0: (v, out) => encodeTq1_0(v, out),
  TQ2_0: (v, out) => encodeTq2_0(v, out),
  Q1_0: (v, out) => encodeQ1_0(v, out),
  Q2_0: (v, out) => encodeQ2_0(v, out),
  MXFP4: (v, out) => encodeMxfp4(v, out),
  ...I_QUANT_ENCODERS,
};

/** The block encoders that ignore importance weights (ggml's `quantize_*` ignore them too). */
const UNWEIGHTED: ReadonlySet<BlockTarget> = new Set([
  "APR_Q4",
  "Q8_0",
  "TQ1_0",
  "TQ2_0",
  "Q1_0",
  "Q2_0",
  "MXFP4",
]);

/**
 * True when `target`'s encoder uses importance weights (llama-quantize's
 * `--imatrix` changes its bytes), so it needs whole rows and the matrix.
 */
export function usesImportance(target: string): boolean {
  return isBlockTarget(target) && !UNWEIGHTED.has(target);
}

/**
 * The encoder for `target` in `backend` (kernels.ts): the WebAssembly kernel
 * where there is one and no importance weights are given, else the table's.
 */
export function blockEncoder(
  target: BlockTarget,
  backend: KernelBackend = kernelBackend(),
): BlockEncoder {
  const ts = BLOCK_ENCODERS[target];
  const wasm = backend === "wasm" ? wasmKernels() : undefined;
  if (wasm === undefined) return ts;
  // Kernels that take the importance weights too.
  const weighted = wasmWeightedEncoder(wasm, target);
  if (weighted !== undefined) return weighted;
  const fast = wasmPlainEncoder(wasm, target);
  if (fast === undefined) return ts;
  return (values, out, importance) =>
    importance === undefined ? fast(values, out) : ts(values, out, importance);
}

/** True when `target` has a block encoder. */
export function isBlockTarget(target: string): target is BlockTarget {
  return Object.hasOwn(BLOCK_ENCODERS, target);
}

/**
 * Whole blocks of BF16 payload bytes to `target`: widened inside the
 * WebAssembly module (the same bytes as decoding them first), else decoded
 * here for the TypeScript encoder. The output is recycled memory, or the
 * payload's own with `inPlace` (`bf16Output`), every byte written.
 */
function encodeBf16Blocks(
  target: Bf16Target & BlockTarget,
  bytes: Uint8Array,
  backend: KernelBackend,
  inPlace: boolean,
): Uint8Array {
  const wasm = backend === "wasm" ? wasmKernels() : undefined;
  if (wasm !== undefined) return encodeBf16InWasm(wasm, target, bytes, inPlace);
  // Decoded first, so an output over the payload is written after it is read.
  const values = decodeBf16(bytes);
  const out = bf16Output(target, bytes, inPlace);
  blockEncoder(target, backend)(values, out);
  return out;
}

/**
 * Encode with {@linkcode blockEncoder}'s encoder for `target` in `backend`.
 * `values` may be a BF16 payload (whole blocks) for a target
 * {@linkcode isBf16Target} accepts, without importance weights: half the
 * bytes to move to a worker and into the module.
 *
 * @param inPlace BF16 bytes the caller owns: the output overwrites them
 *   (`bf16Output` in `_wasm_block_encoders.ts`).
 * @throws {TypeError} For a target without a block encoder, or BF16 bytes it cannot take.
 */
export function encodeBlocks(
  target: string,
  values: Float32Array | Uint8Array,
  importance?: Float32Array,
  backend: KernelBackend = kernelBackend(),
  inPlace = false,
): Uint8Array {
  if (!isBlockTarget(target)) throw new TypeError(`Cannot encode ${target} in blocks`);
  if (values instanceof Float32Array) {
    return blockEncoder(target, backend)(values, undefined, importance);
  }
  if (!isBf16Target(target) || importance !== undefined) {
    throw new TypeError(`Cannot encode ${target} from BF16 bytes`);
  }
  return encodeBf16Blocks(target, values, backend, inPlace);
}
