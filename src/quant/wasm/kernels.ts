// This module is browser compatible.

/**
 * Internal: the WebAssembly SIMD kernels (AssemblyScript sources in
 * `assembly/`, embedded by `deno task wasm`), instantiated once per thread
 * (each encoder worker has its own instance) on first use.
 *
 * They produce the same bytes as the TypeScript kernels, which stay the
 * specification and the fallback: {@linkcode wasmKernels} returns `undefined`
 * where WebAssembly cannot run (no `WebAssembly`, a Content-Security-Policy
 * without `wasm-unsafe-eval`, a big-endian host).
 *
 * @module
 */

import { LITTLE_ENDIAN } from "../_bytes.ts";
import { KERNELS_WASM_BASE64 } from "./_kernels_wasm.ts";

interface Exports {
  memory: WebAssembly.Memory;
  heapBase(): number;
  encodeQ4K(src: number, dst: number, blocks: number): void;
  encodeQ6K(src: number, dst: number, blocks: number): void;
}

/** A block encoder: whole blocks of f32 values in, their bytes out. */
export type BlockEncoder = (values: Float32Array, out?: Uint8Array) => Uint8Array;

/** The kernels the module provides. */
export interface WasmKernels {
  /** Q4_K encoder (same contract and bytes as `encodeQ4K` in q4_k.ts). */
  encodeQ4K: BlockEncoder;
  /** Q6_K encoder (same contract and bytes as `encodeQ6K` in q6_k.ts). */
  encodeQ6K: BlockEncoder;
}

/**
 * Super-blocks per call: input is copied into the module's memory in slices
 * of 64 KiB of f32, so that memory stays small whatever the batch size.
 */
const SLICE_BLOCKS = 64;

let kernels: WasmKernels | null | undefined;

/** The WebAssembly kernels, or `undefined` where WebAssembly is unavailable. */
export function wasmKernels(): WasmKernels | undefined {
  if (kernels === undefined) kernels = instantiate();
  return kernels ?? undefined;
}

function decodeBase64(b64: string): Uint8Array<ArrayBuffer> {
  const s = atob(b64);
  const bytes = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return bytes;
}

function instantiate(): WasmKernels | null {
  if (!LITTLE_ENDIAN || typeof WebAssembly !== "object") return null;
  let exports: Exports;
  try {
    // Synchronous: the module is a few KiB, compiled in well under a millisecond.
    const module = new WebAssembly.Module(decodeBase64(KERNELS_WASM_BASE64));
    exports = new WebAssembly.Instance(module, {}).exports as unknown as Exports;
  } catch {
    // CSP without wasm-unsafe-eval, or no SIMD support: the TypeScript kernels.
    return null;
  }
  const base = (exports.heapBase() + 15) & ~15;
  const inBytes = SLICE_BLOCKS * 256 * 4;
  const need = base + inBytes + SLICE_BLOCKS * 256; // no block format exceeds 1 byte per value
  const have = exports.memory.buffer.byteLength;
  if (need > have) exports.memory.grow(Math.ceil((need - have) / 65536));
  const blockKernel = (
    name: string,
    run: (src: number, dst: number, blocks: number) => void,
    blockBytes: number,
  ): BlockEncoder =>
  (values, out) => {
    if (values.length % 256 !== 0) {
      throw new RangeError(
        `Cannot encode ${name}: ${values.length} values are not a whole number of 256-value blocks`,
      );
    }
    const nb = values.length / 256;
    const y = out ?? new Uint8Array(nb * blockBytes);
    // The memory never grows after start-up, so these views stay valid.
    const src = new Float32Array(exports.memory.buffer, base, SLICE_BLOCKS * 256);
    const dst = new Uint8Array(exports.memory.buffer, base + inBytes, SLICE_BLOCKS * blockBytes);
    for (let b = 0; b < nb; b += SLICE_BLOCKS) {
      const k = Math.min(SLICE_BLOCKS, nb - b);
      src.set(values.subarray(b * 256, (b + k) * 256));
      run(base, base + inBytes, k);
      y.set(k === SLICE_BLOCKS ? dst : dst.subarray(0, k * blockBytes), b * blockBytes);
    }
    return y;
  };
  return {
    encodeQ4K: blockKernel("Q4_K", exports.encodeQ4K, 144),
    encodeQ6K: blockKernel("Q6_K", exports.encodeQ6K, 210),
  };
}
