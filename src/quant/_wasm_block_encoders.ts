// This module is browser compatible.

/**
 * Internal: which WebAssembly kernel encodes each block target, and the
 * encoding of BF16 payload bytes in the module. Shared by the table of every
 * encoder (`_block_encoders.ts`) and the encoder workers, which load only
 * this and the kernels' instance (not the TypeScript encoders) unless a job
 * needs one (docs/BENCHMARKS.md, "Q4_0/Q4_1, seventh pass").
 *
 * @module
 */

import { DTYPES } from "../dtype.ts";
import type {
  Bf16Target,
  BlockEncoder as KernelEncoder,
  WasmKernels,
  WeightedKTarget,
} from "./wasm/_kernels_instance.ts";
import { kernelsInstance } from "./wasm/_kernels_instance.ts";
import { takeBuffer } from "../io/byte_source.ts";

/**
 * Encode whole blocks; with `importance` (one weight per column of a row),
 * whole rows, weighting the error as `llama-quantize --imatrix` does.
 */
export type BlockEncoder = (
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
) => Uint8Array;

/** The WebAssembly kernels that take importance weights too (the i-quants, Q2_K–Q6_K), by target. */
const WEIGHTED_KERNELS: Readonly<Record<WeightedKTarget, keyof WasmKernels>> = {
  Q2_K: "encodeQ2K",
  Q3_K: "encodeQ3K",
  Q4_K: "encodeQ4K",
  Q5_K: "encodeQ5K",
  Q6_K: "encodeQ6K",
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

/**
 * The WebAssembly kernels that take no importance weights (the TypeScript
 * encoder runs when weights are given), by target.
 */
const PLAIN_KERNELS: Readonly<Record<string, keyof WasmKernels>> = {
  APR_Q4: "encodeAprQ4",
  Q8_0: "encodeQ8_0",
  Q5_0: "encodeQ5_0",
  Q5_1: "encodeQ5_1",
  Q4_0: "encodeQ4_0",
  Q4_1: "encodeQ4_1",
  TQ1_0: "encodeTq1_0",
  TQ2_0: "encodeTq2_0",
  Q1_0: "encodeQ1_0",
  Q2_0: "encodeQ2_0",
  MXFP4: "encodeMxfp4",
};

/** The WebAssembly form of `target`'s encoder that takes importance weights too, if there is one. */
export function wasmWeightedEncoder(wasm: WasmKernels, target: string): BlockEncoder | undefined {
  return Object.hasOwn(WEIGHTED_KERNELS, target)
    ? wasm[WEIGHTED_KERNELS[target as WeightedKTarget]] as BlockEncoder
    : undefined;
}

/** The WebAssembly form of `target`'s encoder without importance weights, if there is one. */
export function wasmPlainEncoder(wasm: WasmKernels, target: string): KernelEncoder | undefined {
  return Object.hasOwn(PLAIN_KERNELS, target)
    ? wasm[PLAIN_KERNELS[target]!] as KernelEncoder
    : undefined;
}

/**
 * The types encoded straight from BF16 payload bytes, without importance
 * weights: block types, and F16 (blocks of one value, never a worker's job).
 */
const BF16_TARGETS: ReadonlySet<string> = new Set<Bf16Target>([
  "Q8_0",
  "Q4_0",
  "Q4_1",
  "Q5_0",
  "Q5_1",
  "Q1_0",
  "Q2_K",
  "Q3_K",
  "Q4_K",
  "Q5_K",
  "Q6_K",
  "F16",
]);

/**
 * True when `encodeBlocks` takes `target`'s values as BF16 payload bytes
 * (the WebAssembly kernels widen them; without importance weights).
 */
export function isBf16Target(target: string): target is Bf16Target {
  return BF16_TARGETS.has(target);
}

/**
 * The output of whole blocks of BF16 payload `bytes` encoded to `target`:
 * recycled memory (`takeBuffer`), or with `inPlace` the start of the
 * payload's own buffer, which the caller owns (no buffer to allocate, fault
 * in and hand back: a block's bytes are fewer than its BF16 bytes, and each
 * slice is read into the module before its output is written).
 */
export function bf16Output(target: Bf16Target, bytes: Uint8Array, inPlace: boolean): Uint8Array {
  const spec = DTYPES[target];
  const n = (bytes.length / (2 * spec.blockElements)) * spec.blockBytes;
  return inPlace
    ? new Uint8Array(bytes.buffer, bytes.byteOffset, n)
    : new Uint8Array(takeBuffer(n));
}

/**
 * Whole blocks of BF16 payload bytes to `target` in the module, every byte
 * of the output ({@linkcode bf16Output}) written.
 */
export function encodeBf16InWasm(
  wasm: WasmKernels,
  target: Bf16Target,
  bytes: Uint8Array,
  inPlace = false,
): Uint8Array {
  const out = bf16Output(target, bytes, inPlace);
  wasm.encodeFromBf16(target, bytes, out);
  return out;
}

/**
 * A job as `encodeBlocks` in `_block_encoders.ts` encodes it with the
 * WebAssembly kernels (same bytes), when this thread's kernels instance can
 * take it without a TypeScript encoder.
 *
 * @param inPlace BF16 bytes the caller owns: the output overwrites them ({@linkcode bf16Output}).
 * @returns The bytes, or `undefined` when the job needs a TypeScript encoder
 *   (no kernel for it, or weights a plain kernel does not take).
 * @throws {KernelFallbackMissing} When the kernel needs a TypeScript fallback
 *   this thread has not loaded (nothing written; encode it again with `encodeBlocks`).
 */
export function encodeInWasm(
  target: string,
  values: Float32Array | Uint8Array,
  importance: Float32Array | undefined,
  inPlace = false,
): Uint8Array | undefined {
  const wasm = kernelsInstance();
  if (wasm === undefined) return undefined;
  if (!(values instanceof Float32Array)) {
    return isBf16Target(target) && importance === undefined
      ? encodeBf16InWasm(wasm, target, values, inPlace)
      : undefined;
  }
  const weighted = wasmWeightedEncoder(wasm, target);
  if (weighted !== undefined) return weighted(values, undefined, importance);
  if (importance !== undefined) return undefined;
  return wasmPlainEncoder(wasm, target)?.(values);
}
