// This module is browser compatible.

/**
 * Internal: the worker side of {@linkcode EncoderPool}. Receives the
 * kernels' compiled module first (`{ module }`, with the WebAssembly kernels),
 * answers `{ ready: true }` once loaded, then for each `{ id, target, backend, values,
 * importance? }` (values transferred) answers `{ id, bytes, values }` (both
 * transferred: the pool reuses the values' memory) or `{ id, error }`.
 *
 * @module
 */

import { encodeBlocks } from "./_block_encoders.ts";
import type { KernelBackend } from "./kernels.ts";
import { useKernelsModule } from "./wasm/kernels.ts";

// deno-lint-ignore no-explicit-any
const scope = globalThis as any;
scope.onmessage = (
  e: MessageEvent<
    {
      id: number;
      target: string;
      backend: KernelBackend;
      values: Float32Array | Uint8Array;
      importance?: Float32Array;
    } | { module: WebAssembly.Module }
  >,
) => {
  if ("module" in e.data) {
    // The pool's compiled kernels: no base64 decoding and compiling here.
    useKernelsModule(e.data.module);
    return;
  }
  const { id, target, backend, values, importance } = e.data;
  try {
    // This worker's own WebAssembly instance, made on its first job.
    const bytes = encodeBlocks(target, values, importance, backend);
    // The batch is done with: back to the pool by transfer, which reuses its
    // memory for a later batch (a fresh one per job costs page faults there,
    // and here megabytes per job pile up until this worker's GC runs).
    scope.postMessage({ id, bytes, values }, [
      bytes.buffer as ArrayBuffer,
      values.buffer as ArrayBuffer,
    ]);
  } catch (error) {
    scope.postMessage({ id, error: String(error) });
  }
};

// Tell the pool this module loaded: jobs are held (not transferred) until then,
// so a worker that cannot start loses none.
scope.postMessage({ ready: true });
