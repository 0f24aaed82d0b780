import { deepStrictEqual as assertEquals, ok, rejects, throws } from "node:assert/strict";
import { QuantizeStream } from "../../src/quant/quantize_stream.ts";
import { planModel, planQuantization } from "../../src/quant/plan_quantization.ts";
import { encodeF16 } from "../../src/quant/f16.ts";
import { encodeBf16 } from "../../src/quant/bf16.ts";
import { encodeAprQ8Tensor } from "../../src/quant/apr_q8.ts";
import { encodeAprQ4 } from "../../src/quant/apr_q4.ts";
import { encodeQ4K } from "../../src/quant/q4_k.ts";
import { encodeQ6K } from "../../src/quant/q6_k.ts";
import type { ModelChunk, ModelHeader, TensorEntry, TensorInfo } from "../../src/tensor.ts";
import { loadFixture, sha256 } from "./_gguf_fixtures.ts";

/** A re-openable in-memory tensor that counts opens and serves `size`-byte chunks. */
function memoryEntry(info: TensorInfo, bytes: Uint8Array, size: number) {
  const counter = { opens: 0 };
  const entry: TensorEntry = {
    info,
    open() {
      counter.opens++;
      let pos = 0;
      return new ReadableStream<Uint8Array>({
        pull(c) {
          if (pos >= bytes.length) return c.close();
          // Fresh buffer at an odd offset: unaligned like real network chunks.
          const part = new Uint8Array(Math.min(size, bytes.length - pos) + 1).subarray(1);
          part.set(bytes.subarray(pos, pos + part.length));
          pos += part.length;
          c.enqueue(part);
        },
      });
    },
  };
  return { entry, counter };
}

function modelStream(header: ModelHeader, entries: TensorEntry[]): ReadableStream<ModelChunk> {
  return ReadableStream.from<ModelChunk>([
    { type: "header", header },
    ...entries.map((tensor) => ({ type: "tensor" as const, tensor })),
  ]);
}

async function readAll(s: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts = await Array.fromAsync(s);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

function f32Info(name: string, shape: number[]): TensorInfo {
  return { name, dtype: "F32", shape, byteLength: 4 * shape.reduce((a, b) => a * b, 1) };
}

function padRows(values: Float32Array, cols: number, block: number): Float32Array {
  const rows = values.length / cols;
  const padded = Math.ceil(cols / block) * block;
  const out = new Float32Array(rows * padded);
  for (let r = 0; r < rows; r++) out.set(values.subarray(r * cols, (r + 1) * cols), r * padded);
  return out;
}

Deno.test("planQuantization() applies aprender's policy and makes every tensor APR-storable", async (t) => {
  const header: ModelHeader = {
    format: "test",
    metadata: { total_size: 0 },
    tensors: [
      f32Info("blk.0.attn_q.weight", [64, 256]),
      f32Info("blk.0.attn_norm.weight", [4096]),
      f32Info("blk.0.attn_q.bias", [4096]),
      f32Info("small.weight", [10, 100]),
      { name: "q8", dtype: "Q8_0", shape: [32, 64], byteLength: 32 * 2 * 34 },
      { name: "q4k", dtype: "Q4_K", shape: [4, 256], byteLength: 4 * 144 },
      { name: "mask", dtype: "BOOL", shape: [8], byteLength: 8 },
      { name: "ids", dtype: "U64", shape: [2], byteLength: 16 },
      { name: "i16", dtype: "I16", shape: [2], byteLength: 4 },
      { name: "u32", dtype: "U32", shape: [2], byteLength: 8 },
      { name: "fp8", dtype: "F8_E4M3", shape: [2048], byteLength: 2048 },
      { name: "e8", dtype: "F8_E8M0", shape: [4], byteLength: 4 },
      { name: "f64", dtype: "F64", shape: [2], byteLength: 16 },
    ],
  };
  await t.step("to q4_k quantizes only large non-norm floats", () => {
    const out = planQuantization(header, { to: "q4_k" });
    const types = out.tensors.map((x) => `${x.name}:${x.dtype}:${x.byteLength}`);
    assertEquals(types, [
      "blk.0.attn_q.weight:Q4_K:9216",
      "blk.0.attn_norm.weight:F32:16384",
      "blk.0.attn_q.bias:F32:16384",
      "small.weight:F32:4000",
      // Rows of 64 values are not whole super-blocks: APR's row fallback.
      "q8:APR_Q8:2052",
      "q4k:Q4_K:576",
      "mask:U8:8",
      "ids:I64:16",
      "i16:I32:8",
      "u32:I64:16",
      "fp8:Q4_K:1152",
      "e8:BF16:8",
      "f64:F32:8",
    ]);
    assertEquals(out.metadata.quantization, {
      quant_type: "q4_k",
      bits: 4,
      block_size: 256,
      symmetric: false,
    });
    assertEquals(out.metadata.total_size, out.tensors.reduce((s, x) => s + x.byteLength, 0));
    assertEquals(header.tensors[0]!.dtype, "F32");
  });
  await t.step("to none only makes tensors storable", () => {
    const out = planQuantization(header, {});
    assertEquals(out.tensors.map((x) => x.dtype), [
      "F32",
      "F32",
      "F32",
      "F32",
      "F32",
      "Q4_K",
      "U8",
      "I64",
      "I32",
      "I64",
      "F16",
      "BF16",
      "F32",
    ]);
    assertEquals(out.metadata.quantization, undefined);
  });
  await t.step("all: true quantizes norms and small tensors too", () => {
    const out = planQuantization(header, { to: "q8", all: true });
    assertEquals(out.tensors.slice(0, 4).map((x) => x.dtype), [
      "APR_Q8",
      "APR_Q8",
      "APR_Q8",
      "APR_Q8",
    ]);
    assertEquals(out.tensors[3]!.byteLength, 4 + 1000);
    assertEquals(out.metadata.quantization?.quant_type, "q8");
  });
  await t.step("f16 does not claim quantization; keepF64 keeps F64", () => {
    const out = planQuantization(header, { to: "f16", keepF64: true });
    assertEquals(out.tensors[0]!.dtype, "F16");
    assertEquals(out.tensors[12]!.dtype, "F64");
    assertEquals(out.metadata.quantization, undefined);
  });
  await t.step("C64 is rejected naming the tensor", () => {
    const bad: ModelHeader = {
      ...header,
      tensors: [{ name: "spectrum", dtype: "C64", shape: [2], byteLength: 16 }],
    };
    throws(
      () => planQuantization(bad, {}),
      (e: unknown) => e instanceof TypeError && /tensor "spectrum".*C64/.test(e.message),
    );
  });
  await t.step("an unknown target is rejected", () => {
    throws(
      () => new QuantizeStream({ to: "q3" as "q4" }),
      (e: unknown) => e instanceof TypeError && /Cannot quantize to "q3"/.test(e.message),
    );
  });
});

const TARGETS = [
  { to: "f16", kernel: (v: Float32Array) => encodeF16(v) },
  { to: "bf16", kernel: (v: Float32Array) => encodeBf16(v) },
  { to: "q8", kernel: (v: Float32Array) => encodeAprQ8Tensor(v) },
  { to: "q4", kernel: (v: Float32Array) => encodeAprQ4(v) },
  { to: "q4_k", kernel: (v: Float32Array) => encodeQ4K(padRows(v, 300, 256)) },
  { to: "q6_k", kernel: (v: Float32Array) => encodeQ6K(padRows(v, 300, 256)) },
] as const;

Deno.test("QuantizeStream payloads equal the kernels' output for odd chunk sizes", async (t) => {
  // 3 rows of 300 columns: K-quant rows pad to 512; 900 is not a multiple of 32.
  const values = new Float32Array(900).map((_, i) => Math.sin(i * 0.37) * (1 + (i % 7)));
  values[5] = 2.5;
  const bytes = new Uint8Array(values.buffer);
  const info = f32Info("w", [3, 300]);
  for (const target of TARGETS) {
    const want = target.kernel(values);
    for (const size of [1, 7, 1000]) {
      await t.step(`${target.to} in ${size}-byte chunks`, async () => {
        const { entry, counter } = memoryEntry(info, bytes, size);
        const out = await Array.fromAsync(
          modelStream({ format: "t", metadata: {}, tensors: [info] }, [entry])
            .pipeThrough(
              // The row-padded K-quant layout, asked for (rows of 300 values).
              new QuantizeStream({
                to: target.to,
                all: true,
                maxChunkElements: 64,
                rowFallback: "padded",
              }),
            ),
        );
        const header = out[0]!.type === "header" ? out[0]!.header : undefined;
        const tensor = out[1]!.type === "tensor" ? out[1]!.tensor : undefined;
        ok(header !== undefined && tensor !== undefined);
        assertEquals(header.tensors[0]!.byteLength, want.length);
        assertEquals(tensor.info, header.tensors[0]);
        assertEquals(counter.opens, 0);
        const got = await readAll(tensor.open());
        assertEquals(got, want);
        assertEquals(counter.opens, target.to === "q8" ? 2 : 1);
      });
    }
  }
});

Deno.test("QuantizeStream of one of several streams: smaller pieces, the same bytes", async () => {
  // 256 rows of 4096 columns in one 4 MiB chunk: alone, a stream decodes and
  // encodes the 1 Mi values at once; one of four (convert_many.ts), a
  // quarter of them at a time.
  const info = f32Info("w", [256, 4096]);
  const values = new Float32Array(256 * 4096).map((_, i) => Math.sin(i * 0.011) * (1 + (i % 5)));
  const bytes = new Uint8Array(values.buffer);
  const want = encodeQ4K(values);
  const pieces = async (streams?: number) => {
    const { entry } = memoryEntry(info, bytes, 4 << 20);
    const out = await Array.fromAsync(
      modelStream({ format: "t", metadata: {}, tensors: [info] }, [entry])
        .pipeThrough(
          new QuantizeStream({
            to: "q4_k",
            all: true,
            workers: 0,
            ...(streams === undefined ? {} : { streams }),
          }),
        ),
    );
    const tensor = out[1]!.type === "tensor" ? out[1]!.tensor : undefined;
    const parts = await Array.fromAsync(tensor!.open());
    assertEquals(await readAll(ReadableStream.from(parts)), want);
    return Math.max(...parts.map((p) => p.length));
  };
  // 1 Mi values of Q4_K are 576 KiB; a quarter, 144 KiB.
  assertEquals(await pieces(), 589824);
  assertEquals(await pieces(4), 147456);
  throws(() => new QuantizeStream({ to: "q4_k", streams: 0 }), /streams 0/);
});

Deno.test("QuantizeStream opens nothing when the sink never opens a tensor", async () => {
  const info = f32Info("w", [2048]);
  const { entry, counter } = memoryEntry(info, new Uint8Array(8192), 1000);
  const out = await Array.fromAsync(
    modelStream({ format: "t", metadata: {}, tensors: [info] }, [entry])
      .pipeThrough(new QuantizeStream({ to: "q8" })),
  );
  assertEquals(out.length, 2);
  assertEquals(counter.opens, 0);
});

Deno.test("QuantizeStream passes Q4_K through verbatim and dequantizes Q8_0 exactly", async () => {
  const { bytes, manifest } = loadFixture("tiny-llama-q4_k_m");
  const q8 = loadFixture("tiny-llama-q8_0");
  const mk = manifest.tensors.find((m) => m.type === "Q4_K")!;
  const m8 = q8.manifest.tensors.find((m) => m.type === "Q8_0")!;
  const k: TensorInfo = {
    name: mk.name,
    dtype: "Q4_K",
    shape: mk.numpy_shape,
    byteLength: mk.n_bytes,
  };
  const z: TensorInfo = {
    name: m8.name,
    dtype: "Q8_0",
    shape: m8.numpy_shape,
    byteLength: m8.n_bytes,
  };
  const a = memoryEntry(k, bytes.subarray(mk.abs_offset, mk.abs_offset + mk.n_bytes), 7);
  const b = memoryEntry(z, q8.bytes.subarray(m8.abs_offset, m8.abs_offset + m8.n_bytes), 7);
  const out = await Array.fromAsync(
    modelStream({ format: "gguf", metadata: {}, tensors: [k, z] }, [a.entry, b.entry])
      .pipeThrough(new QuantizeStream({ to: "q6_k" })),
  );
  const header = out[0]!.type === "header" ? out[0]!.header : undefined;
  assertEquals(header?.tensors.map((x) => x.dtype), ["Q4_K", "Q6_K"]);
  const [t1, t2] = out.slice(1).map((c) => c.type === "tensor" ? c.tensor : undefined);
  assertEquals(sha256(await readAll(t1!.open())), mk.raw_sha256);
  // to: "none" dequantizes Q8_0 to F32, bit-exact with llama.cpp.
  const plain = await Array.fromAsync(
    modelStream({ format: "gguf", metadata: {}, tensors: [z] }, [b.entry])
      .pipeThrough(new QuantizeStream()),
  );
  const f32 = plain[1]!.type === "tensor" ? plain[1]!.tensor : undefined;
  assertEquals(f32?.info.dtype, "F32");
  assertEquals(sha256(await readAll(f32!.open())), m8.f32_sha256);
  ok(t2 !== undefined);
});

Deno.test("QuantizeStream widens integers and rejects U64 values above 2^63 - 1", async () => {
  const i16: TensorInfo = { name: "i16", dtype: "I16", shape: [3], byteLength: 6 };
  const u64: TensorInfo = { name: "ids", dtype: "U64", shape: [2], byteLength: 16 };
  const big = new Uint8Array(16);
  new DataView(big.buffer).setBigUint64(8, 2n ** 63n, true);
  const a = memoryEntry(i16, new Uint8Array(new Int16Array([-2, 7, -32768]).buffer), 1);
  const b = memoryEntry(u64, big, 3);
  const out = await Array.fromAsync(
    modelStream({ format: "t", metadata: {}, tensors: [i16, u64] }, [a.entry, b.entry])
      .pipeThrough(new QuantizeStream()),
  );
  const [t1, t2] = out.slice(1).map((c) => c.type === "tensor" ? c.tensor : undefined);
  assertEquals(t1!.info.dtype, "I32");
  assertEquals([...new Int32Array((await readAll(t1!.open())).buffer)], [-2, 7, -32768]);
  assertEquals(t2!.info.dtype, "I64");
  await rejects(readAll(t2!.open()), (e: unknown) =>
    e instanceof RangeError &&
    /tensor "ids" as I64: value 9223372036854775808 at element 1 exceeds 2\^63 - 1/.test(
      e.message,
    ));
});

Deno.test("QuantizeStream rejects a tensor that does not match the header", async () => {
  const info = f32Info("w", [4]);
  const other = memoryEntry(f32Info("x", [4]), new Uint8Array(16), 4);
  await rejects(
    Array.fromAsync(
      modelStream({ format: "t", metadata: {}, tensors: [info] }, [other.entry])
        .pipeThrough(new QuantizeStream()),
    ),
    (e: unknown) =>
      e instanceof TypeError &&
      /tensor "x": it does not match the header's tensor 0/.test(e.message),
  );
});

Deno.test("QuantizeStream with workers gives the same bytes and stops its workers", async (t) => {
  const values = new Float32Array(3 * 700).map((_, i) => Math.cos(i * 0.11) * (1 + (i % 5)));
  const bytes = new Uint8Array(values.buffer);
  const info = f32Info("w", [3, 700]);
  for (const target of TARGETS.filter((x) => ["q4", "q4_k", "q6_k"].includes(x.to))) {
    await t.step(target.to, async () => {
      const want = target.to === "q4"
        ? encodeAprQ4(values)
        : target.to === "q4_k"
        ? encodeQ4K(padRows(values, 700, 256))
        : encodeQ6K(padRows(values, 700, 256));
      const { entry } = memoryEntry(info, bytes, 1000);
      // Rows of 700 values: 2 whole blocks per row go to workers, the padded third in-thread.
      const out = await Array.fromAsync(
        modelStream({ format: "t", metadata: {}, tensors: [info, info] }, [entry, entry])
          .pipeThrough(
            new QuantizeStream({
              to: target.to,
              workers: 2,
              maxChunkElements: 512,
              rowFallback: "padded",
            }),
          ),
      );
      for (const c of out.slice(1)) {
        const tensor = c.type === "tensor" ? c.tensor : undefined;
        assertEquals(await readAll(tensor!.open()), want);
      }
    });
  }
});

Deno.test("QuantizeStream payloads propagate cancellation to the source and source errors to the sink", async (t) => {
  const info = f32Info("w", [4096]);
  await t.step("cancel reaches the source", async () => {
    let cancelled: unknown;
    const entry: TensorEntry = {
      info,
      open: () =>
        new ReadableStream<Uint8Array>({
          pull(c) {
            c.enqueue(new Uint8Array(1024));
          },
          cancel(reason) {
            cancelled = reason;
          },
        }),
    };
    const out = await Array.fromAsync(
      modelStream({ format: "t", metadata: {}, tensors: [info] }, [entry])
        .pipeThrough(new QuantizeStream({ to: "f16" })),
    );
    const tensor = out[1]!.type === "tensor" ? out[1]!.tensor : undefined;
    const reader = tensor!.open().getReader();
    const first = await reader.read();
    ok(first.value !== undefined && first.value.length > 0);
    await reader.cancel("stop");
    assertEquals(cancelled, "stop");
  });
  await t.step("a source error reaches the reader", async () => {
    const entry: TensorEntry = {
      info,
      open: () =>
        new ReadableStream<Uint8Array>({
          pull(c) {
            c.error(new Error("disk gone"));
          },
        }),
    };
    const out = await Array.fromAsync(
      modelStream({ format: "t", metadata: {}, tensors: [info] }, [entry])
        .pipeThrough(new QuantizeStream({ to: "q8" })),
    );
    const tensor = out[1]!.type === "tensor" ? out[1]!.tensor : undefined;
    await rejects(
      readAll(tensor!.open()),
      (e: unknown) => e instanceof Error && e.message === "disk gone",
    );
  });
  await t.step("a truncated source is reported with the tensor name", async () => {
    const { entry } = memoryEntry(info, new Uint8Array(100), 7);
    const out = await Array.fromAsync(
      modelStream({ format: "t", metadata: {}, tensors: [info] }, [entry])
        .pipeThrough(new QuantizeStream({ to: "bf16" })),
    );
    const tensor = out[1]!.type === "tensor" ? out[1]!.tensor : undefined;
    await rejects(
      readAll(tensor!.open()),
      (e: unknown) =>
        e instanceof RangeError &&
        /tensor "w": payload ended after 100 of 16384 bytes/.test(e.message),
    );
  });
});

Deno.test("planModel() gives K-quant rows that are not whole super-blocks APR's row fallback", () => {
  const header = {
    format: "t",
    metadata: { architecture: "llama" },
    tensors: [f32Info("blk.0.attn_q.weight", [64, 288]), f32Info("blk.0.attn_k.weight", [64, 512])],
  };
  const plan = (options: Parameters<typeof planModel>[1]) =>
    planModel(header, options).plans.map((p) =>
      `${p.info.dtype}:${p.info.byteLength}:${p.rowFallbackFrom ?? "-"}`
    );
  // Rows of 288 fall back; rows of 512 are whole super-blocks and stay K-quants.
  assertEquals(plan({ to: "q4_k" }), ["APR_Q8:18436:Q4_K", "Q4_K:18432:-"]);
  assertEquals(plan({ to: "q6_k", rowFallback: "f16" }), ["F16:36864:Q6_K", "Q6_K:26880:-"]);
  assertEquals(plan({ to: "q4_k", rowFallback: "padded" }), ["Q4_K:18432:-", "Q4_K:18432:-"]);
  assertEquals(plan({ to: "q4_k_m" }), ["APR_Q8:18436:Q4_K", "Q4_K:18432:-"]);
  // GGUF output gets llama.cpp's own fallback types instead (llama_presets.ts).
  assertEquals(plan({ to: "q4_k_m", ggufTypes: true }), ["Q5_0:12672:-", "Q4_K:18432:-"]);
});

Deno.test("planModel() counts a fallback the source's type already is (F16 rows under --row-fallback f16)", () => {
  const info: TensorInfo = {
    name: "blk.0.attn_q.weight",
    dtype: "F16",
    shape: [64, 288],
    byteLength: 64 * 288 * 2,
  };
  const header = { format: "t", metadata: { architecture: "llama" }, tensors: [info] };
  for (const to of ["q4_k", "q4_k_m"] as const) {
    const [p] = planModel(header, { to, rowFallback: "f16" }).plans;
    assertEquals([p!.action, p!.info.dtype, p!.rowFallbackFrom], ["copy", "F16", "Q4_K"], to);
  }
});

Deno.test("planQuantization's quantization record is the target's only when some tensor has its type", () => {
  const header: ModelHeader = {
    format: "t",
    metadata: {},
    tensors: [f32Info("a.weight", [8, 128]), f32Info("b.weight", [8, 256])],
  };
  const record = (tensors: TensorInfo[], options: Parameters<typeof planQuantization>[1]) =>
    planQuantization({ ...header, tensors }, options).metadata.quantization?.quant_type;
  const [rows128, rows256] = header.tensors;
  // Rows of 256 keep Q4_K: the file holds Q4_K, whatever the other tensor fell back to.
  assertEquals(record([rows128!, rows256!], { to: "q4_k" }), "q4_k");
  // Every quantized tensor fell back: the record names the type written.
  assertEquals(record([rows128!], { to: "q4_k" }), "q8");
  assertEquals(record([rows128!], { to: "q6_k" }), "q8");
  assertEquals(record([rows128!], { to: "q4_k", rowFallback: "f16" }), undefined);
  assertEquals(record([rows128!], { to: "q4_k", rowFallback: "padded" }), "q4_k");
  assertEquals(record([rows128!], { to: "q4_k_m" }), "q8");
});

Deno.test("planQuantization() with sourceFloats keeps F32 tensors F32 and BF16 matrices BF16 under the converter's --outtype values, as DeepSeek-V4's converter does", async (t) => {
  const info = (name: string, dtype: "F32" | "BF16" | "F16", shape: number[]): TensorInfo => ({
    name,
    dtype,
    shape,
    byteLength: shape.reduce((a, b) => a * b, 1) * (dtype === "F32" ? 4 : 2),
  });
  const header: ModelHeader = {
    format: "gguf",
    metadata: {},
    tensors: [
      info("blk.0.attn_q_a.weight", "F32", [64, 256]),
      info("blk.0.attn_kv.weight", "BF16", [64, 256]),
      info("blk.0.attn_norm.weight", "BF16", [256]),
      info("blk.0.attn_q_b.weight", "F16", [64, 256]),
    ],
  };
  for (
    const [to, f16Becomes] of [["bf16", "BF16"], ["q8_0", "Q8_0"], ["f16", "F16"]] as const
  ) {
    await t.step(to, () => {
      const out = planQuantization(header, { to, ggufTypes: true, sourceFloats: true });
      assertEquals(out.tensors.map((x) => x.dtype), ["F32", "BF16", "F32", f16Becomes]);
      // Without it, the --outtype takes the matrices.
      const plain = planQuantization(header, { to, ggufTypes: true });
      ok(plain.tensors[0]!.dtype !== "F32");
    });
  }
});
