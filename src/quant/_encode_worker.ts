// This module is browser compatible.

/**
 * Internal: the worker side of {@linkcode EncoderPool}. Receives
 * `{ ready: true }` once loaded, then for each `{ id, target, values,
 * importance? }` (values transferred) answers `{ id, bytes }` or
 * `{ id, error }` (bytes transferred).
 *
 * @module
 */

import { encodeBlocks } from "./_block_encoders.ts";

// deno-lint-ignore no-explicit-any
const scope = globalThis as any;
scope.onmessage = (
  e: MessageEvent<
    { id: number; target: string; values: Float32Array; importance?: Float32Array }
  >,
) => {
  const { id, target, values, importance } = e.data;
  try {
    const bytes = encodeBlocks(target, values, importance);
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
