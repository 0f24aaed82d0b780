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
  // In a subprocess: Deno prints the worker's load failure itself, and a
  // passing run of the suite should print nothing red.
  const child = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./_pool_fallback_child.ts", import.meta.url).pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  const stderr = text.decode(child.stderr);
  assertEquals(child.code, 0, stderr);
  assertEquals(text.decode(child.stdout), "fallback ok\n");
  // The expected report of the missing module, and nothing else.
  if (!/Module not found .*_no_such_worker\.js/.test(stderr)) throw new Error(stderr);
});
