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

import { type BlockDecoder, type BlockEncoder, wasmKernels } from "./wasm/kernels.ts";
import { encodeAprQ4 } from "./apr_q4.ts";
import { aprQ8Absmax, encodeAprQ8 } from "./apr_q8.ts";
import { decodeQ4K, encodeQ4K } from "./q4_k.ts";
import { decodeQ6K, encodeQ6K } from "./q6_k.ts";

/** An implementation of the kernels. */
export type KernelBackend = "wasm" | "typescript";

export type { BlockDecoder, BlockEncoder };

/** The TypeScript block encoders, by target dtype (every block target has one). */
const TYPESCRIPT_ENCODERS: Record<string, BlockEncoder> = {
  APR_Q4: encodeAprQ4,
  Q4_K: encodeQ4K,
  Q6_K: encodeQ6K,
};

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
 * `"typescript"` otherwise.
 *
 * @returns The effective backend.
 */
export function kernelBackend(): KernelBackend {
  return preferred === "wasm" && wasmKernels() !== undefined ? "wasm" : "typescript";
}

/**
 * Internal: the block encoder for `target` (APR_Q4, Q4_K, Q6_K) in `backend`,
 * the WebAssembly kernel when there is one (same bytes), else TypeScript.
 * Targets without a WebAssembly kernel only need a TypeScript entry above.
 */
export function blockEncoder(
  target: string,
  backend: KernelBackend = kernelBackend(),
): BlockEncoder {
  const ts = TYPESCRIPT_ENCODERS[target];
  if (ts === undefined) throw new TypeError(`Cannot encode ${target} in blocks`);
  if (backend === "typescript") return ts;
  const wasm = wasmKernels();
  if (wasm === undefined) return ts;
  if (target === "Q4_K") return wasm.encodeQ4K;
  if (target === "Q6_K") return wasm.encodeQ6K;
  if (target === "APR_Q4") return wasm.encodeAprQ4;
  return ts;
}

/**
 * Internal: the Q4_K or Q6_K decoder in `backend` (WebAssembly: ~3× and ~5×+
 * the TypeScript ones' speed, same values).
 */
export function kQuantDecoder(
  dtype: "Q4_K" | "Q6_K",
  backend: KernelBackend = kernelBackend(),
): BlockDecoder {
  const wasm = backend === "wasm" ? wasmKernels() : undefined;
  if (dtype === "Q4_K") return wasm?.decodeQ4K ?? decodeQ4K;
  return wasm?.decodeQ6K ?? decodeQ6K;
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
 * Internal: APR_Q8's kernels in `backend` (WebAssembly: ~5× the absmax and
 * ~2.5× the encoder's speed of the TypeScript ones, same results).
 */
export function aprQ8Kernels(backend: KernelBackend = kernelBackend()): AprQ8Kernels {
  const wasm = backend === "wasm" ? wasmKernels() : undefined;
  return wasm === undefined
    ? TYPESCRIPT_APR_Q8
    : { absmax: wasm.aprQ8Absmax, encode: wasm.encodeAprQ8 };
}
