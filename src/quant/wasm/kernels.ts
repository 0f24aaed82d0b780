// This module is browser compatible.

/**
 * Internal: the WebAssembly SIMD kernels (AssemblyScript sources in
 * `assembly/`, embedded by `deno task wasm`), compiled once per thread (an
 * encoder worker receives the compiled module from its pool) and
 * instantiated on first use (`_kernels_instance.ts`).
 *
 * They produce the same bytes as the TypeScript kernels, which stay the
 * specification and the fallback: {@linkcode wasmKernels} returns `undefined`
 * where WebAssembly cannot run (no `WebAssembly`, a Content-Security-Policy
 * without `wasm-unsafe-eval`, a big-endian host), and this module registers
 * the TypeScript kernels that a few inputs the module cannot take fall back to.
 *
 * @module
 */

import { LITTLE_ENDIAN } from "../_bytes.ts";
import { encodeAprQ4 } from "../apr_q4.ts";
import { decodeNf4Blocks, encodeNf4Blocks } from "../nf4.ts";
import { KERNELS_WASM_BASE64 } from "./_kernels_wasm.ts";
import { I_QUANT_ENCODERS } from "../i_quants_encode.ts";
import { encodeQ2K } from "../q2_k.ts";
import { encodeQ3K } from "../q3_k.ts";
import { encodeQ6K } from "../q6_k.ts";
import { encodeQ4K } from "../q4_k.ts";
import { encodeQ5K } from "../q5_k.ts";
import { decodeBase64 } from "../../runtime/_base64.ts";
import {
  givenKernelsModule,
  kernelsInstance,
  registerKernelFallbacks,
  useKernelsModule,
  type WasmKernels,
} from "./_kernels_instance.ts";

export type {
  Bf16Target,
  BlockDecoder,
  BlockEncoder,
  KBf16Target,
  LegacyTarget,
  Nf4BlocksDecoder,
  Nf4BlocksEncoder,
  WasmKernels,
  WeightedBlockEncoder,
  WeightedKTarget,
} from "./_kernels_instance.ts";
export { useKernelsModule };

registerKernelFallbacks({
  weighted: {
    Q2_K: encodeQ2K,
    Q3_K: encodeQ3K,
    Q4_K: encodeQ4K,
    Q5_K: encodeQ5K,
    Q6_K: encodeQ6K,
    ...I_QUANT_ENCODERS,
  },
  encodeAprQ4,
  encodeNf4Blocks,
  decodeNf4Blocks,
});

/** The WebAssembly kernels, or `undefined` where WebAssembly is unavailable. */
export function wasmKernels(): WasmKernels | undefined {
  kernelsModule();
  return kernelsInstance();
}

/**
 * The kernels' compiled module, compiled once per thread (or given by
 * {@linkcode useKernelsModule}); an encoder worker receives it from its pool
 * instead of decoding and compiling 128 KiB of WebAssembly again, and shares
 * the functions V8 has compiled already.
 *
 * @returns The module, or `undefined` where WebAssembly cannot run.
 */
export function kernelsModule(): WebAssembly.Module | undefined {
  if (givenKernelsModule() === undefined) {
    let compiled: WebAssembly.Module | null = null;
    if (LITTLE_ENDIAN && typeof WebAssembly === "object") {
      try {
        // Synchronous: V8 compiles each function on its first call.
        compiled = new WebAssembly.Module(decodeBase64(KERNELS_WASM_BASE64));
      } catch {
        // CSP without wasm-unsafe-eval, or no SIMD support: the TypeScript kernels.
      }
    }
    useKernelsModule(compiled);
  }
  return givenKernelsModule() ?? undefined;
}
