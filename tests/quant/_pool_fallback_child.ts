/**
 * Child of encoder_pool_test.ts: an EncoderPool whose worker module is
 * missing (as in a compiled binary built without it) must still encode, here.
 * Deno reports the worker's failure on stderr whatever the pool does, so the
 * test runs this as a subprocess and captures that expected output.
 *
 * @module
 */

import { deepStrictEqual } from "node:assert/strict";
import { EncoderPool } from "../../src/quant/_encoder_pool.ts";
import { encodeAprQ4 } from "../../src/quant/apr_q4.ts";
import { encodeQ4K } from "../../src/quant/q4_k.ts";

const values = () => new Float32Array(512).map((_, i) => Math.sin(i * 0.37) * (1 + (i % 3)));
const missing = new URL("./_no_such_worker.js", import.meta.url).href;
const pool = new EncoderPool(2, 0, missing);
pool.acquire();
try {
  const pending = [pool.encode("Q4_K", values()), pool.encode("Q4_K", values())];
  deepStrictEqual(await Promise.all(pending), [encodeQ4K(values()), encodeQ4K(values())]);
  // Later jobs run here directly.
  deepStrictEqual(await pool.encode("APR_Q4", values()), encodeAprQ4(values()));
} finally {
  pool.release();
  pool.close();
}
console.log("fallback ok");
