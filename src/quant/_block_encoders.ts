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
import { I_QUANT_ENCODERS, type IQuantTarget } from "./i_quants_encode.ts";
import { type KernelBackend, kernelBackend } from "./kernels.ts";
import { type WasmKernels, wasmKernels } from "./wasm/kernels.ts";

/** Dtypes encoded block by block. */
export type BlockTarget =
  | "APR_Q4"
  | "Q4_K"
  | "Q5_K"
  | "Q6_K"
  | "Q8_0"
  | "Q5_0"
  | "Q5_1"
  | IQuantTarget;

/**
 * Encode whole blocks; with `importance` (one weight per column of a row),
 * whole rows, weighting the error as `llama-quantize --imatrix` does.
 */
export type BlockEncoder = (
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
) => Uint8Array;

/** Every block encoder, by target. APR_Q4 and Q8_0 take no importance weights (llama.cpp's Q8_0 ignores them). */
export const BLOCK_ENCODERS: Readonly<Record<BlockTarget, BlockEncoder>> = {
  APR_Q4: (v, out) => encodeAprQ4(v, out),
  Q4_K: encodeQ4K,
  Q5_K: encodeQ5K,
  Q6_K: encodeQ6K,
  Q8_0: (v, out) => encodeQ8_0(v, out),
  Q5_0: encodeQ5_0,
  Q5_1: encodeQ5_1,
  ...I_QUANT_ENCODERS,
};

/**
 * The WebAssembly SIMD form of `target`'s encoder, if there is one: same bytes,
 * no importance weights (weighted encodes stay TypeScript).
 */
function wasmEncoder(
  target: BlockTarget,
): ((v: Float32Array, out?: Uint8Array) => Uint8Array) | undefined {
  const wasm = wasmKernels();
  if (wasm === undefined) return undefined;
  if (target === "Q4_K") return wasm.encodeQ4K;
  if (target === "Q5_K") return wasm.encodeQ5K;
  if (target === "Q6_K") return wasm.encodeQ6K;
  if (target === "APR_Q4") return wasm.encodeAprQ4;
  if (target === "Q8_0") return wasm.encodeQ8_0;
  if (target === "Q5_0") return wasm.encodeQ5_0;
  if (target === "Q5_1") return wasm.encodeQ5_1;
  return undefined;
}

/** The WebAssembly kernels that take importance weights too (the i-quants), by target. */
const WEIGHTED_KERNELS: Readonly<Record<IQuantTarget, keyof WasmKernels>> = {
  IQ4_NL: "encodeIq4Nl",
  IQ4_XS: "encodeIq4Xs",
  IQ3_XXS: "encodeIq3Xxs",
  IQ3_S: "encodeIq3S",
  IQ2_XXS: "encodeIq2Xxs",
  IQ2_XS: "encodeIq2Xs",
  IQ2_S: "encodeIq2S",
  IQ1_S: "encodeIq1S",
  IQ1_M: "encodeIq1M",
};

/** The WebAssembly form of `target`'s encoder that takes importance weights too, if there is one. */
function wasmWeightedEncoder(target: BlockTarget): BlockEncoder | undefined {
  const name = Object.hasOwn(WEIGHTED_KERNELS, target)
    ? WEIGHTED_KERNELS[target as IQuantTarget]
    : undefined;
  const wasm = wasmKernels();
  return name === undefined || wasm === undefined ? undefined : (wasm[name] as BlockEncoder);
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
  // Kernels that take the importance weights too.
  const weighted = backend === "wasm" ? wasmWeightedEncoder(target) : undefined;
  if (weighted !== undefined) return weighted;
  const fast = backend === "wasm" ? wasmEncoder(target) : undefined;
  if (fast === undefined) return ts;
  return (values, out, importance) =>
    importance === undefined ? fast(values, out) : ts(values, out, importance);
}

/** True when `target` has a block encoder. */
export function isBlockTarget(target: string): target is BlockTarget {
  return Object.hasOwn(BLOCK_ENCODERS, target);
}

/**
 * Encode with {@linkcode blockEncoder}'s encoder for `target` in `backend`.
 *
 * @throws {TypeError} For a target without a block encoder.
 */
export function encodeBlocks(
  target: string,
  values: Float32Array,
  importance?: Float32Array,
  backend: KernelBackend = kernelBackend(),
): Uint8Array {
  if (!isBlockTarget(target)) throw new TypeError(`Cannot encode ${target} in blocks`);
  return blockEncoder(target, backend)(values, undefined, importance);
}
