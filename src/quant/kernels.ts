// This module is browser compatible.

/**
 * Which implementation runs the block encoders: the WebAssembly SIMD kernels
 * (the default wherever WebAssembly runs) or the TypeScript ports of
 * llama.cpp's reference quantizers (the specification, and the fallback where
 * WebAssembly is unavailable, e.g. under a Content-Security-Policy). Both give
 * identical bytes; the switch exists for tests and benchmarks.
 *
 * @example Usage
 * ```ts
 * import { kernelBackend, setKernelBackend } from "./kernels.ts";
 * setKernelBackend("typescript");
 * console.assert(kernelBackend() === "typescript");
 * setKernelBackend("wasm"); // back to the default
 * ```
 *
 * @module
 */

import {
  type BlockDecoder,
  type Nf4BlocksDecoder,
  type Nf4BlocksEncoder,
  type WasmKernels,
  wasmKernels,
} from "./wasm/kernels.ts";
import { decodeNf4Blocks, encodeNf4Blocks } from "./nf4.ts";
import { aprQ8Absmax, encodeAprQ8 } from "./apr_q8.ts";
import { encodeF16 } from "./f16.ts";
import { encodeBf16 } from "./bf16.ts";
import { decodeQ4K } from "./q4_k.ts";
import { decodeQ6K } from "./q6_k.ts";
import { decodeQ4_0, decodeQ4_1, decodeQ5_0, decodeQ5_1, decodeQ8_0 } from "./ggml_legacy.ts";
import { decodeQ2K, decodeQ3K, decodeQ5K } from "./k_quants.ts";
import {
  decodeIq1M,
  decodeIq1S,
  decodeIq2S,
  decodeIq2Xs,
  decodeIq2Xxs,
  decodeIq3S,
  decodeIq3Xxs,
  decodeIq4Nl,
  decodeIq4Xs,
} from "./i_quants.ts";
import { decodeQ1_0, decodeQ2_0, decodeTq1_0, decodeTq2_0 } from "./ternary.ts";
import { decodeMxfp4, decodeNvfp4 } from "./fp4_blocks.ts";

/** An implementation of the kernels. */
export type KernelBackend = "wasm" | "typescript";

export type { BlockDecoder };

let preferred: KernelBackend = "wasm";

/**
 * Choose the kernels for this thread (encoder workers follow the choice made
 * when a job is sent). `"wasm"` falls back to TypeScript where WebAssembly
 * cannot run.
 *
 * @param backend `"wasm"` (default) or `"typescript"`.
 * @throws {TypeError} For another value.
 */
export function setKernelBackend(backend: KernelBackend): void {
  if (backend !== "wasm" && backend !== "typescript") {
    throw new TypeError(`Unknown kernel backend "${backend}": expected wasm or typescript`);
  }
  preferred = backend;
}

/**
 * The kernels in use: `"wasm"` when chosen and WebAssembly runs here,
 * `"typescript"` otherwise. Never throws.
 *
 * @returns The effective backend.
 */
export function kernelBackend(): KernelBackend {
  return preferred === "wasm" && wasmKernels() !== undefined ? "wasm" : "typescript";
}

/** Dtypes whose decoder has a WebAssembly form. */
export type FastDecodeTarget =
  | "Q4_K"
  | "Q6_K"
  | "Q8_0"
  | "Q4_0"
  | "Q4_1"
  | "Q5_0"
  | "Q5_1"
  | "Q2_K"
  | "Q3_K"
  | "Q5_K"
  | "IQ2_XXS"
  | "IQ2_XS"
  | "IQ2_S"
  | "IQ3_XXS"
  | "IQ3_S"
  | "IQ1_S"
  | "IQ1_M"
  | "IQ4_NL"
  | "IQ4_XS"
  | "TQ1_0"
  | "TQ2_0"
  | "Q1_0"
  | "Q2_0"
  | "MXFP4"
  | "NVFP4";

/** Each fast decoder's TypeScript form and the name of its WebAssembly form. */
/** The WebAssembly kernels that are block decoders. */
type WasmDecoderName = {
  [K in keyof WasmKernels]: WasmKernels[K] extends BlockDecoder ? K : never;
}[keyof WasmKernels];

const DECODERS: Record<FastDecodeTarget, [BlockDecoder, WasmDecoderName]> = {
  Q4_K: [decodeQ4K, "decodeQ4K"],
  Q6_K: [decodeQ6K, "decodeQ6K"],
  Q8_0: [decodeQ8_0, "decodeQ8_0"],
  Q4_0: [decodeQ4_0, "decodeQ4_0"],
  Q4_1: [decodeQ4_1, "decodeQ4_1"],
  Q5_0: [decodeQ5_0, "decodeQ5_0"],
  Q5_1: [decodeQ5_1, "decodeQ5_1"],
  Q2_K: [decodeQ2K, "decodeQ2K"],
  Q3_K: [decodeQ3K, "decodeQ3K"],
  Q5_K: [decodeQ5K, "decodeQ5K"],
  IQ2_XXS: [decodeIq2Xxs, "decodeIq2Xxs"],
  IQ2_XS: [decodeIq2Xs, "decodeIq2Xs"],
  IQ2_S: [decodeIq2S, "decodeIq2S"],
  IQ3_XXS: [decodeIq3Xxs, "decodeIq3Xxs"],
  IQ3_S: [decodeIq3S, "decodeIq3S"],
  IQ1_S: [decodeIq1S, "decodeIq1S"],
  IQ1_M: [decodeIq1M, "decodeIq1M"],
  IQ4_NL: [decodeIq4Nl, "decodeIq4Nl"],
  IQ4_XS: [decodeIq4Xs, "decodeIq4Xs"],
  TQ1_0: [decodeTq1_0, "decodeTq1_0"],
  TQ2_0: [decodeTq2_0, "decodeTq2_0"],
  Q1_0: [decodeQ1_0, "decodeQ1_0"],
  Q2_0: [decodeQ2_0, "decodeQ2_0"],
  MXFP4: [decodeMxfp4, "decodeMxfp4"],
  NVFP4: [decodeNvfp4, "decodeNvfp4"],
};

/**
 * Internal: the decoder of `dtype` in `backend` (WebAssembly: ~1.7–6× the
 * TypeScript ones' speed, same values; docs/BENCHMARKS.md).
 */
export function decoderKernel(
  dtype: FastDecodeTarget,
  backend: KernelBackend = kernelBackend(),
): BlockDecoder {
  const [ts, name] = DECODERS[dtype];
  const wasm = backend === "wasm" ? wasmKernels() : undefined;
  return wasm?.[name] ?? ts;
}

/**
 * Internal: the F16 or BF16 encoder in `backend` (WebAssembly where it runs,
 * same bytes as `encodeF16` in f16.ts / `encodeBf16` in bf16.ts; measured
 * faster, docs/BENCHMARKS.md).
 */
export function halfEncoder(
  dtype: "F16" | "BF16",
  backend: KernelBackend = kernelBackend(),
): (values: Float32Array, out?: Uint8Array) => Uint8Array {
  const wasm = backend === "wasm" ? wasmKernels() : undefined;
  if (dtype === "F16") return wasm?.encodeF16 ?? encodeF16;
  return wasm?.encodeBf16 ?? encodeBf16;
}

/**
 * Internal: the batch NF4 encoder in `backend` (WebAssembly where it runs,
 * same bytes as `encodeNf4Blocks` in nf4.ts; measured faster, docs/BENCHMARKS.md).
 */
export function nf4Encoder(backend: KernelBackend = kernelBackend()): Nf4BlocksEncoder {
  const wasm = backend === "wasm" ? wasmKernels() : undefined;
  return wasm?.encodeNf4Blocks ?? encodeNf4Blocks;
}

/**
 * Internal: the batch NF4 decoder in `backend` (WebAssembly where it runs,
 * same values as `decodeNf4Blocks` in nf4.ts).
 */
export function nf4Decoder(backend: KernelBackend = kernelBackend()): Nf4BlocksDecoder {
  const wasm = backend === "wasm" ? wasmKernels() : undefined;
  return wasm?.decodeNf4Blocks ?? decodeNf4Blocks;
}

/** APR_Q8's two passes: the absmax fold and the encoder. */
export interface AprQ8Kernels {
  /** `max(start, |x|)` over the values, NaN ignored (as `aprQ8Absmax`). */
  absmax(values: Float32Array, start?: number): number;
  /** The bytes of `encodeAprQ8`. */
  encode(values: Float32Array, scale: number, out?: Uint8Array): Uint8Array;
}

const TYPESCRIPT_APR_Q8: AprQ8Kernels = { absmax: aprQ8Absmax, encode: encodeAprQ8 };

/**
 * Internal: APR_Q8's kernels in `backend` (WebAssembly: ~3× the TypeScript
 * ones' speed for both passes, same results).
 */
export function aprQ8Kernels(backend: KernelBackend = kernelBackend()): AprQ8Kernels {
  const wasm = backend === "wasm" ? wasmKernels() : undefined;
  return wasm === undefined
    ? TYPESCRIPT_APR_Q8
    : { absmax: wasm.aprQ8Absmax, encode: wasm.encodeAprQ8 };
}
