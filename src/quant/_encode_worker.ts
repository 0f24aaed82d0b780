// This module is browser compatible.

/**
 * Internal: the worker side of {@linkcode EncoderPool}. Receives the
 * kernels' compiled module first (`{ module }`, with the WebAssembly kernels),
 * answers `{ ready: true }` once loaded, then for each `{ id, target, backend, values,
 * importance?, inPlace? }` (values transferred) answers `{ id, bytes, values }` (both
 * transferred: the pool reuses the values' memory), `{ id, bytes }` when the
 * bytes were written over the values (`inPlace`, BF16 bytes), or `{ id, error }`.
 *
 * It loads only the kernels' instance and the table of which kernel encodes
 * what (`_wasm_block_encoders.ts`): a job the module encodes, as every job of
 * a conversion where WebAssembly runs, needs nothing else. The TypeScript
 * encoders (`_block_encoders.ts`, ~40 modules and the i-quant grids) are
 * loaded on the first job that needs one: the TypeScript backend, importance
 * weights a plain kernel does not take, rows too long for the module.
 *
 * @module
 */

import type { KernelBackend } from "./kernels.ts";
import { KernelFallbackMissing, useKernelsModule } from "./wasm/_kernels_instance.ts";
import { encodeInWasm } from "./_wasm_block_encoders.ts";

interface Job {
  id: number;
  target: string;
  backend: KernelBackend;
  values: Float32Array | Uint8Array;
  importance?: Float32Array;
  inPlace?: boolean;
}

// deno-lint-ignore no-explicit-any
const scope = globalThis as any;

let encoders: Promise<typeof import("./_block_encoders.ts")> | undefined;

function reply(id: number, bytes: Uint8Array, values: Float32Array | Uint8Array): void {
  // Written over the values: one buffer back, none allocated here.
  if (bytes.buffer === values.buffer) {
    scope.postMessage({ id, bytes }, [bytes.buffer as ArrayBuffer]);
    return;
  }
  // The batch is done with: back to the pool by transfer, which reuses its
  // memory for a later batch (a fresh one per job costs page faults there,
  // and here megabytes per job pile up until this worker's GC runs).
  scope.postMessage({ id, bytes, values }, [
    bytes.buffer as ArrayBuffer,
    values.buffer as ArrayBuffer,
  ]);
}

/** A job the module cannot take alone: with the TypeScript encoders, loaded once. */
async function encodeWithTypeScript(job: Job): Promise<void> {
  const { id, target, backend, values, importance, inPlace } = job;
  try {
    encoders ??= import("./_block_encoders.ts");
    const { encodeBlocks } = await encoders;
    reply(id, encodeBlocks(target, values, importance, backend, inPlace), values);
  } catch (error) {
    scope.postMessage({ id, error: String(error) });
  }
}

scope.onmessage = (e: MessageEvent<Job | { module: WebAssembly.Module }>) => {
  if ("module" in e.data) {
    // The pool's compiled kernels: no base64 decoding and compiling here.
    useKernelsModule(e.data.module);
    return;
  }
  const job = e.data;
  let bytes: Uint8Array | undefined;
  try {
    // This worker's own WebAssembly instance, made on its first job.
    if (job.backend === "wasm") {
      bytes = encodeInWasm(job.target, job.values, job.importance, job.inPlace);
    }
  } catch (error) {
    if (!(error instanceof KernelFallbackMissing)) {
      scope.postMessage({ id: job.id, error: String(error) });
      return;
    }
  }
  if (bytes !== undefined) reply(job.id, bytes, job.values);
  else void encodeWithTypeScript(job);
};

// Tell the pool this module loaded: jobs are held (not transferred) until then,
// so a worker that cannot start loses none.
scope.postMessage({ ready: true });
