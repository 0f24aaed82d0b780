import { deepStrictEqual as assertEquals, equal, ok, throws } from "node:assert/strict";
import { markReleasable, releaseChunk, shareChunk } from "../../src/io/byte_source.ts";
import { Bf16BlockEncoder } from "../../src/quant/_bf16_block_encoder.ts";
import { EncoderPool } from "../../src/quant/_encoder_pool.ts";
import { decodeBf16, encodeBf16 } from "../../src/quant/bf16.ts";
import { encodeBlocks } from "../../src/quant/_block_encoders.ts";
import { setKernelBackend } from "../../src/quant/kernels.ts";
import type { TensorInfo } from "../../src/tensor.ts";
import { kernelMix } from "./_kernel_mix.ts";

const TARGETS = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q1_0"] as const;
const K_TARGETS = ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"] as const;

/** Cut `payload` into chunks of the given sizes (cycled) for `enc`; its pieces, in order. */
function pieces(
  enc: Bf16BlockEncoder,
  payload: Uint8Array,
  sizes: number[],
): (Uint8Array | Promise<Uint8Array>)[] {
  const parts: (Uint8Array | Promise<Uint8Array>)[] = [];
  for (let off = 0, i = 0; off < payload.length; i++) {
    const n = Math.min(sizes[i % sizes.length]!, payload.length - off);
    enc.push(payload.subarray(off, off + n), (b) => parts.push(b));
    off += n;
  }
  enc.finish();
  return parts;
}

/** Run the encoder over `payload` cut into chunks of the given sizes (cycled). */
function run(enc: Bf16BlockEncoder, payload: Uint8Array, sizes: number[]): Uint8Array {
  return concat(pieces(enc, payload, sizes) as Uint8Array[]);
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function info(rows: number, cols: number): TensorInfo {
  return { name: "w", dtype: "BF16", shape: [rows, cols], byteLength: 2 * rows * cols };
}

Deno.test("BF16 straight to Q8_0/Q4_0/Q4_1/Q5_0/Q5_1/Q1_0 gives the bytes of decoding, then the TypeScript encoder", () => {
  // Every kind of value (NaN, ±inf, subnormals, ties, zeros of both signs),
  // in chunks that split blocks anywhere, and batches smaller than a chunk.
  const payload = encodeBf16(kernelMix(96 * 4096, 41));
  const expectedFrom = decodeBf16(payload);
  for (const target of TARGETS) {
    const expected = encodeBlocks(target, expectedFrom, undefined, "typescript");
    for (const sizes of [[1 << 20], [1, 63, 65, 4097, 100_000], [64 * 3000]]) {
      const enc = Bf16BlockEncoder.for(info(96, 4096), target, 1 << 12);
      ok(enc !== undefined, target);
      assertEquals(run(enc, payload, sizes), expected, `${target} chunks ${sizes}`);
    }
  }
});

Deno.test("BF16 straight to a block type: only for whole-block rows, legacy targets and the wasm kernels", () => {
  assertEquals(Bf16BlockEncoder.for(info(4, 48), "Q8_0", 1024), undefined);
  // Q1_0's blocks are 128 values: rows of 96 take the generic path.
  assertEquals(Bf16BlockEncoder.for(info(4, 96), "Q1_0", 1024), undefined);
  // K-quant rows of 128 are padded to a super-block: the generic path.
  assertEquals(Bf16BlockEncoder.for(info(4, 128), "Q4_K", 1024), undefined);
  // Not (yet) encoded from BF16.
  assertEquals(Bf16BlockEncoder.for(info(4, 256), "IQ4_XS", 1024), undefined);
  assertEquals(
    Bf16BlockEncoder.for({ ...info(4, 256), dtype: "F16" }, "Q8_0", 1024),
    undefined,
  );
  setKernelBackend("typescript");
  try {
    assertEquals(Bf16BlockEncoder.for(info(4, 256), "Q8_0", 1024), undefined);
  } finally {
    setKernelBackend("wasm");
  }
});

Deno.test("BF16 straight to Q2_K…Q6_K, in this thread and in workers, gives the bytes of decoding, then the TypeScript encoder", async () => {
  // 40 rows of 768: jobs of 64 super-blocks (the smallest), so the last job
  // is shorter (120 = 64 + 56); chunks that split super-blocks anywhere.
  const payload = encodeBf16(kernelMix(40 * 768, 43));
  const decoded = decodeBf16(payload);
  const pool = new EncoderPool(1, 0, undefined, true);
  pool.acquire();
  try {
    for (const target of K_TARGETS) {
      const expected = encodeBlocks(target, decoded, undefined, "typescript");
      for (const sizes of [[1 << 20], [1, 511, 513, 4097, 10_000]]) {
        const alone = Bf16BlockEncoder.for(info(40, 768), target, 1 << 12)!;
        assertEquals(run(alone, payload, sizes), expected, `${target} chunks ${sizes}`);
        const pooled = Bf16BlockEncoder.for(info(40, 768), target, 1 << 12, pool, "w")!;
        const parts = await Promise.all(pieces(pooled, payload, sizes));
        ok(parts.length === 2, `${target}: ${parts.length} jobs`);
        assertEquals(concat(parts), expected, `${target} in jobs, chunks ${sizes}`);
      }
    }
  } finally {
    pool.release();
    pool.close();
  }
});

Deno.test("BF16 straight to Q6_K in jobs: a file's read chunk that is exactly a job is the job, its bytes written over it", async () => {
  // 120 super-blocks: jobs of 64 and 56 (32,768 and 28,672 bytes), one for
  // the worker and one for this thread.
  const payload = encodeBf16(kernelMix(40 * 768, 44));
  const expected = encodeBlocks("Q6_K", decodeBf16(payload), undefined, "typescript");
  const pool = new EncoderPool(1, 0, undefined, true);
  pool.acquire();
  try {
    const read = (from: number, to: number) => markReleasable(payload.slice(from, to));
    const chunks = [read(0, 32_768), read(32_768, payload.length)];
    const enc = Bf16BlockEncoder.for(info(40, 768), "Q6_K", 1 << 12, pool)!;
    const parts: (Uint8Array | Promise<Uint8Array>)[] = [];
    for (const chunk of chunks) {
      enc.push(chunk, (b) => parts.push(b));
      // As the stream does after each push: a taken chunk is not freed.
      releaseChunk(chunk);
    }
    enc.finish();
    const got = await Promise.all(parts);
    assertEquals(concat(got), expected);
    // Not copied: each chunk's memory moved to its job (the chunk is left
    // detached), and this thread's bytes (the second job) are written over it.
    for (const chunk of chunks) ok((chunk.buffer as ArrayBuffer).detached);
    equal(got[1]!.buffer.byteLength, payload.length - 32_768);

    // A chunk shared with another output (several outputs of one read) is copied.
    const shared = read(0, 32_768);
    shareChunk(shared, 2);
    const copy = shared.slice();
    const again = Bf16BlockEncoder.for(info(40, 768), "Q6_K", 1 << 12, pool)!;
    const first: (Uint8Array | Promise<Uint8Array>)[] = [];
    again.push(shared, (b) => first.push(b));
    ok(!(shared.buffer as ArrayBuffer).detached);
    assertEquals(shared, copy);
    assertEquals(await first[0], expected.subarray(0, 64 * 210));
  } finally {
    pool.release();
    pool.close();
  }
});

Deno.test("BF16 straight to a block type: a payload too short or too long is refused", () => {
  const payload = encodeBf16(kernelMix(4 * 256, 42));
  const short = Bf16BlockEncoder.for(info(4, 256), "Q8_0", 1024)!;
  short.push(payload.subarray(0, payload.length - 2), () => {});
  throws(() => short.finish(), /payload ended after 2046 of 2048 bytes/);
  const long = Bf16BlockEncoder.for(info(4, 256), "Q4_0", 1024)!;
  throws(
    () => long.push(new Uint8Array(payload.length + 64), () => {}),
    /payload exceeds its 2048 bytes/,
  );
});

Deno.test("BF16 straight to a block type: every bf16 value under a block maximum of 127, 8 or 31 (each tie of the short roundings), and x with −x as the largest", () => {
  // Blocks of [M, then 31 values], the values every bf16 pattern with |x| <= M:
  // with Q8_0's d = 127/127 = 1 (M = 127), Q4_0's id = −8/M, Q5_1's 31/(M − min)
  // the products land on each half-integer the fast paths round; then blocks
  // whose largest magnitude is both x and −x (which comes first decides Q4_0/Q5_0's d).
  for (const top of [127, 8, 31]) {
    const values: number[] = [];
    for (let bits = 0; bits < 0x10000; bits++) {
      const x = new Float32Array(new Uint32Array([bits << 16]).buffer)[0]!;
      if (!(Math.abs(x) <= top)) continue;
      if (values.length % 32 === 0) values.push(top);
      values.push(x);
    }
    for (let i = 0; i < 64; i++) {
      const block = Array.from({ length: 32 }, (_, j) => ((j * 7 + i) % 13) - 6);
      block[(i * 5) % 32] = i % 2 === 0 ? 9 : -9;
      block[(i * 11 + 3) % 32] = i % 2 === 0 ? -9 : 9;
      values.push(...block);
    }
    // Whole rows of 128 (Q1_0's blocks), and a row count that is not a
    // multiple of four (Q1_0's kernel takes four blocks at a time).
    while (values.length % 128 !== 0 || (values.length / 128) % 4 === 0) values.push(0);
    const f = new Float32Array(values);
    const payload = encodeBf16(f);
    const decoded = decodeBf16(payload);
    for (const target of TARGETS) {
      const expected = encodeBlocks(target, decoded, undefined, "typescript");
      const enc = Bf16BlockEncoder.for(info(f.length / 128, 128), target, 1 << 12)!;
      assertEquals(run(enc, payload, [1 << 20]), expected, `${target} under ${top}`);
    }
  }
});
