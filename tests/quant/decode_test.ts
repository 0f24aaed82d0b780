import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import { decodeStream, decodeToFloat32 } from "../../src/quant/decode.ts";
import { encodeFromFloat32 } from "../../src/quant/encode.ts";
import { loadFixture, sha256 } from "./_gguf_fixtures.ts";
import type { TensorInfo } from "../../src/tensor.ts";

const FIXTURES = [
  "tiny-llama-q8_0",
  "tiny-llama-q4_k_m",
  "tiny-llama-q6_k",
  "tiny-llama-bf16",
  "llama-2-tiny-random",
];

for (const stem of FIXTURES) {
  Deno.test(`decodeToFloat32() matches llama.cpp's f32 output for every tensor of ${stem}.gguf`, async (t) => {
    const { bytes, manifest } = loadFixture(stem);
    for (const m of manifest.tensors) {
      await t.step(`${m.name} (${m.type})`, () => {
        const raw = bytes.subarray(m.abs_offset, m.abs_offset + m.n_bytes);
        assertEquals(sha256(raw), m.raw_sha256);
        const values = decodeToFloat32(m.type, raw, m.numpy_shape);
        assertEquals(sha256(values), m.f32_sha256);
      });
    }
  });
}

async function collect(stream: ReadableStream<Float32Array>): Promise<Float32Array> {
  const parts: Float32Array[] = [];
  let n = 0;
  for await (const p of stream) {
    parts.push(p);
    n += p.length;
  }
  const out = new Float32Array(n);
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

function chunked(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let pos = 0;
  return new ReadableStream({
    pull(c) {
      if (pos >= bytes.length) return c.close();
      // Copy at an odd offset so views are unaligned, as real chunks may be.
      const part = new Uint8Array(Math.min(size, bytes.length - pos) + 1).subarray(1);
      part.set(bytes.subarray(pos, pos + part.length));
      pos += part.length;
      c.enqueue(part);
    },
  });
}

Deno.test("decodeStream() matches the manifest for odd chunk sizes", async (t) => {
  const { bytes, manifest } = loadFixture("tiny-llama-q4_k_m");
  const picks = manifest.tensors.filter((m) => ["Q4_K", "Q6_K", "F32"].includes(m.type)).slice(
    0,
    4,
  );
  for (const m of picks) {
    for (const size of [1, 7, 1000]) {
      await t.step(`${m.name} in ${size}-byte chunks`, async () => {
        const raw = bytes.subarray(m.abs_offset, m.abs_offset + m.n_bytes);
        const info: TensorInfo = {
          name: m.name,
          dtype: m.type,
          shape: m.numpy_shape,
          byteLength: m.n_bytes,
        };
        const values = await collect(
          decodeStream(info, chunked(raw, size), { maxChunkElements: 300 }),
        );
        assertEquals(sha256(values), m.f32_sha256);
      });
    }
  }
});

Deno.test("decodeStream() drops row padding of K-quants and reads the APR_Q8 scale", async () => {
  // Two rows of 300 columns in Q8_0-like row layout: use APR_Q4 and Q4_0 shapes instead.
  const q8 = new Uint8Array([0, 0, 0, 0x40, 1, 0xff, 3]); // scale 2, values 1, -1, 3
  const info: TensorInfo = { name: "q", dtype: "APR_Q8", shape: [3], byteLength: 7 };
  assertEquals([...await collect(decodeStream(info, chunked(q8, 1)))], [2, -2, 6]);
  assertEquals([...decodeToFloat32("APR_Q8", q8, [3])], [2, -2, 6]);
  // Q4_0 rows of 40 columns are padded to 2 blocks (64 values); the padding is dropped.
  const block = new Uint8Array(18);
  block.set([0x00, 0x3c]); // d = 1
  block.fill(0x99, 2); // every nibble 9 → value 1
  const row = new Uint8Array(36);
  row.set(block, 0);
  row.set(block, 18);
  const payload = new Uint8Array(72);
  payload.set(row, 0);
  payload.set(row, 36);
  const v = decodeToFloat32("Q4_0", payload, [2, 40]);
  assertEquals(v.length, 80);
  assertEquals(v.every((x) => x === 1), true);
  const s = await collect(
    decodeStream({ name: "p", dtype: "Q4_0", shape: [2, 40], byteLength: 72 }, chunked(payload, 7)),
  );
  assertEquals(s, v);
});

Deno.test("decodeToFloat32() rejects C64 and wrong payload sizes", () => {
  throws(
    () => decodeToFloat32("C64", new Uint8Array(8), [1]),
    (e: unknown) => e instanceof TypeError && /complex values have no float32 form/.test(e.message),
  );
  throws(
    () => decodeToFloat32("F32", new Uint8Array(7), [2]),
    (e: unknown) => e instanceof RangeError && /payload has 7 bytes, expected 8/.test(e.message),
  );
});

Deno.test("decodeStream() rejects a truncated payload", async () => {
  const info: TensorInfo = { name: "t", dtype: "F32", shape: [4], byteLength: 16 };
  let err: unknown;
  try {
    await collect(decodeStream(info, chunked(new Uint8Array(10), 3)));
  } catch (e) {
    err = e;
  }
  assertEquals(err instanceof RangeError, true);
  assertEquals(/tensor "t": payload ended after 10 of 16 bytes/.test((err as Error).message), true);
});

Deno.test("decodeStream() equals decodeToFloat32() for padded and partial-block layouts", async (t) => {
  const values = new Float32Array(3 * 300).map((_, i) => Math.sin(i * 0.3));
  const cases = [
    { dtype: "APR_Q4" as const, shape: [33] },
    { dtype: "APR_Q4" as const, shape: [3, 300] },
    { dtype: "Q4_K" as const, shape: [3, 300] },
    { dtype: "Q6_K" as const, shape: [3, 300] },
    { dtype: "APR_Q8" as const, shape: [3, 300] },
    { dtype: "F16" as const, shape: [3, 300] },
  ];
  for (const c of cases) {
    const n = c.shape.reduce((a, b) => a * b, 1);
    const bytes = encodeFromFloat32(c.dtype, values.subarray(0, n), c.shape);
    const want = decodeToFloat32(c.dtype, bytes, c.shape);
    for (const size of [1, 7, 1000]) {
      await t.step(`${c.dtype} [${c.shape}] in ${size}-byte chunks`, async () => {
        const info: TensorInfo = {
          name: "t",
          dtype: c.dtype,
          shape: c.shape,
          byteLength: bytes.length,
        };
        assertEquals(
          await collect(decodeStream(info, chunked(bytes, size), { maxChunkElements: 100 })),
          want,
        );
      });
    }
  }
});
