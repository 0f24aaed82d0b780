import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { EncoderPool } from "../../src/quant/_encoder_pool.ts";
import { encodeQ4K } from "../../src/quant/q4_k.ts";
import { encodeAprQ4 } from "../../src/quant/apr_q4.ts";

const values = () => new Float32Array(512).map((_, i) => Math.sin(i * 0.37) * (1 + (i % 3)));

Deno.test("EncoderPool encodes in workers, results in order", async () => {
  const pool = new EncoderPool(2);
  pool.acquire();
  try {
    const got = await Promise.all([pool.encode("Q4_K", values()), pool.encode("APR_Q4", values())]);
    assertEquals(got, [encodeQ4K(values()), encodeAprQ4(values())]);
  } finally {
    pool.release();
    pool.close();
  }
});

Deno.test("EncoderPool falls back to this thread when its workers cannot start", async () => {
  // As in a compiled binary built without the worker module.
  const missing = new URL("./_no_such_worker.ts", import.meta.url).href;
  const pool = new EncoderPool(2, 0, missing);
  pool.acquire();
  try {
    const pending = [pool.encode("Q4_K", values()), pool.encode("Q4_K", values())];
    assertEquals(await Promise.all(pending), [encodeQ4K(values()), encodeQ4K(values())]);
    // Later jobs run here directly.
    assertEquals(await pool.encode("APR_Q4", values()), encodeAprQ4(values()));
  } finally {
    pool.release();
    pool.close();
  }
});
