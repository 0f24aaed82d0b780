import { deepStrictEqual as assertEquals, rejects } from "node:assert/strict";
import { EncoderPool } from "../../src/quant/_encoder_pool.ts";
import { encodeQ4K } from "../../src/quant/q4_k.ts";
import { encodeAprQ4 } from "../../src/quant/apr_q4.ts";
import { encodeQ2K } from "../../src/quant/q2_k.ts";
import { encodeQ3K } from "../../src/quant/q3_k.ts";
import { encodeQ4_1 } from "../../src/quant/q4_0.ts";
import { encodeQ6K } from "../../src/quant/q6_k.ts";
import { setKernelBackend } from "../../src/quant/kernels.ts";

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

Deno.test("EncoderPool's workers run the Q2_K, Q3_K and Q4_1 encoders, importance weights included", async () => {
  const pool = new EncoderPool(2);
  pool.acquire();
  try {
    const w = () => new Float32Array(256).map((_, i) => 0.5 + (i % 5));
    const got = await Promise.all([
      pool.encode("Q2_K", values(), w()),
      pool.encode("Q3_K", values(), w()),
      pool.encode("Q4_1", values(), w()),
      pool.encode("Q3_K", values()),
    ]);
    assertEquals(got, [
      encodeQ2K(values(), undefined, w()),
      encodeQ3K(values(), undefined, w()),
      encodeQ4_1(values(), undefined, w()),
      encodeQ3K(values()),
    ]);
  } finally {
    pool.release();
    pool.close();
  }
});

Deno.test("EncoderPool's workers load the TypeScript encoders for the jobs the module cannot take alone", async () => {
  // A worker loads the kernels' instance only; these jobs need a TypeScript
  // encoder or fallback, which it loads on the first (the same bytes).
  const pool = new EncoderPool(1);
  pool.acquire();
  try {
    // A row longer than half the module's slice, with importance weights.
    const cols = 65_536;
    const row = () => new Float32Array(cols).map((_, i) => Math.sin(i * 0.011) * (1 + (i % 7)));
    const w = new Float32Array(cols).map((_, i) => 0.25 + (i % 9));
    // APR_Q4 with a partial last block (the module writes the whole ones first).
    const tail = () => values().subarray(0, 500);
    const got = await Promise.all([
      pool.encode("Q6_K", row(), w),
      pool.encode("APR_Q4", tail()),
      pool.encode("Q4_K", values()),
    ]);
    assertEquals(got, [encodeQ6K(row(), undefined, w), encodeAprQ4(tail()), encodeQ4K(values())]);
    // And the TypeScript backend, chosen in the calling thread, is followed.
    setKernelBackend("typescript");
    try {
      assertEquals(await pool.encode("Q4_K", values()), encodeQ4K(values()));
    } finally {
      setKernelBackend("wasm");
    }
    await rejects(pool.encode("NO_SUCH", values()), /Cannot encode NO_SUCH/);
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

Deno.test("a closed EncoderPool keeps its workers for the users it expects, then stops them", async () => {
  const pool = new EncoderPool(2);
  // Three payloads to come; the stream has ended (closed) before they are read.
  pool.expect(3);
  pool.close();
  for (let i = 0; i < 3; i++) {
    pool.acquire();
    assertEquals(await pool.encode("Q4_K", values()), encodeQ4K(values()));
    pool.release();
    // Between payloads (a tensor encoded in-thread, say) the workers stay.
    if (i < 2) assertEquals(pool.running, 2);
  }
  // The last expected user is gone: stopped at once, after one start in all.
  assertEquals(pool.running, 0);
  assertEquals(pool.starts, 1);
});

Deno.test("a closed EncoderPool stops its workers after a short idle time when an expected user never comes", async () => {
  const pool = new EncoderPool(1);
  pool.expect(2);
  pool.close();
  pool.acquire();
  await pool.encode("Q4_K", values());
  pool.release();
  assertEquals(pool.running, 1);
  // The second payload is never read (e.g. skipped on resume): the idle timer
  // stops the worker, so the process can exit (the test's leak check fails otherwise).
  const until = Date.now() + 10_000;
  while (pool.running > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  assertEquals(pool.running, 0);
});

Deno.test("an EncoderPool user that fails or is cancelled stops the idle workers at once", async () => {
  const pool = new EncoderPool(1);
  pool.expect(3);
  pool.close();
  pool.acquire();
  await pool.encode("Q4_K", values());
  // The payload was cancelled: the run is over, the other two will not come.
  pool.release(true);
  assertEquals(pool.running, 0);
});

Deno.test("EncoderPool shared by several streams encodes a job named as a recent one once, and gives each its own copy", async () => {
  const pool = new EncoderPool(1, 0, undefined, true);
  pool.open(); // a second stream
  pool.acquire();
  try {
    // One stream alone would encode both; two name the same tensor range.
    const [a, b, c] = await Promise.all([
      pool.encode("Q4_K", values(), undefined, "output.weight@0+512"),
      pool.encode("Q4_K", values(), undefined, "output.weight@0+512"),
      pool.encode("Q6_K", values(), undefined, "output.weight@0+512"),
    ]);
    assertEquals(pool.sharedJobs, 1);
    assertEquals(a, encodeQ4K(values()));
    assertEquals(b, a);
    // Copies: freeing one leaves the other whole.
    (a!.buffer as ArrayBuffer).transfer(0);
    assertEquals(b, encodeQ4K(values()));
    assertEquals(c!.length, 2 * 210);
  } finally {
    pool.release();
    pool.close();
    pool.close();
  }
});

Deno.test("EncoderPool drops a shared job once every stream has taken it, so a later one is encoded anew", async () => {
  const pool = new EncoderPool(1, 0, undefined, true);
  pool.open(); // a second stream
  pool.acquire();
  try {
    const first = pool.encode("Q4_K", values(), undefined, "t@0+512");
    const second = pool.encode("Q4_K", values(), undefined, "t@0+512");
    const [a, b] = await Promise.all([first, second]);
    assertEquals(pool.sharedJobs, 1);
    // The first taker's copy and the last taker's bytes are distinct arrays.
    (a!.buffer as ArrayBuffer).transfer(0);
    assertEquals(b, encodeQ4K(values()));
    // Both streams took it: nothing is held for a third (a second pass encodes again).
    assertEquals(await pool.encode("Q4_K", values(), undefined, "t@0+512"), encodeQ4K(values()));
    assertEquals(pool.sharedJobs, 1);
  } finally {
    pool.release();
    pool.close();
    pool.close();
  }
});

Deno.test("EncoderPool used by one stream never shares: each job is encoded", async () => {
  const pool = new EncoderPool(1, 0, undefined, true);
  pool.acquire();
  try {
    await Promise.all([
      pool.encode("Q4_K", values(), undefined, "t@0+512"),
      pool.encode("Q4_K", values(), undefined, "t@0+512"),
    ]);
    assertEquals(pool.sharedJobs, 0);
  } finally {
    pool.release();
    pool.close();
  }
});
