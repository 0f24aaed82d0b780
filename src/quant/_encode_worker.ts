// This module is browser compatible.

/**
 * Internal: the worker side of {@linkcode EncoderPool}. Receives
 * `{ ready: true }` once loaded, then for each `{ id, target, values }` (values
 * transferred) answers `{ id, bytes }` or
 * `{ id, error }` (bytes transferred).
 *
 * @module
 */

import { encodeAprQ4 } from "./apr_q4.ts";
import { encodeQ4K } from "./q4_k.ts";
import { encodeQ6K } from "./q6_k.ts";

const ENCODERS: Record<string, (v: Float32Array) => Uint8Array> = {
  APR_Q4: (v) => encodeAprQ4(v),
  Q4_K: (v) => encodeQ4K(v),
  Q6_K: (v) => encodeQ6K(v),
};

// deno-lint-ignore no-explicit-any
const scope = globalThis as any;
scope.onmessage = (e: MessageEvent<{ id: number; target: string; values: Float32Array }>) => {
  const { id, target, values } = e.data;
  try {
    const fn = ENCODERS[target];
    if (fn === undefined) throw new TypeError(`Cannot encode ${target} in a worker`);
    const bytes = fn(values);
    // The batch was transferred to us and is done with: free it now, not when
    // this worker's GC gets to it (megabytes per job otherwise pile up).
    (values.buffer as ArrayBuffer).transfer?.(0);
    scope.postMessage({ id, bytes }, [bytes.buffer as ArrayBuffer]);
  } catch (error) {
    scope.postMessage({ id, error: String(error) });
  }
};

// Tell the pool this module loaded: jobs are held (not transferred) until then,
// so a worker that cannot start loses none.
scope.postMessage({ ready: true });
