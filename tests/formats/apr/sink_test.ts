import assert from "node:assert/strict";
import { type DType, tensorByteLength } from "../../../src/dtype.ts";
import { UsageError } from "../../../src/errors.ts";
import { encodeApr } from "../../../src/formats/apr/encode_apr.ts";
import { planAprLayout } from "../../../src/formats/apr/layout.ts";
import { openApr } from "../../../src/formats/apr/reader.ts";
import { AprSink, type AprSinkOptions } from "../../../src/formats/apr/sink.ts";
import { openFileSource } from "../../../src/io/file_source.ts";
import type {
  ModelChunk,
  ModelMetadata,
  ProgressEvent,
  TensorEntry,
  TensorInfo,
} from "../../../src/tensor.ts";
import { bytesOf, GOLDEN_METADATA, GOLDEN_SHA256, GOLDEN_TENSORS, sha256 } from "./_fixtures.ts";

interface TestTensor {
  name: string;
  dtype: DType;
  shape: number[];
  data: Uint8Array;
}

interface EntryOptions {
  chunkSize?: number;
  /** Error after this many bytes. */
  failAfter?: number;
  /** Called on each open(). */
  onOpen?: () => void;
}

function infoOf(t: TestTensor): TensorInfo {
  return { name: t.name, dtype: t.dtype, shape: t.shape, byteLength: t.data.length };
}

function entryOf(t: TestTensor, options: EntryOptions = {}): TensorEntry {
  const chunkSize = options.chunkSize ?? 1000;
  return {
    info: infoOf(t),
    open(): ReadableStream<Uint8Array> {
      options.onOpen?.();
      let at = 0;
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          if (options.failAfter !== undefined && at >= options.failAfter) {
            controller.error(new Error("connection reset"));
            return;
          }
          if (at >= t.data.length) {
            controller.close();
            return;
          }
          const end = Math.min(t.data.length, at + chunkSize);
          controller.enqueue(t.data.slice(at, end));
          at = end;
        },
      }, { highWaterMark: 0 });
    },
  };
}

function chunksOf(
  metadata: ModelMetadata,
  tensors: TestTensor[],
  entryOptions: (t: TestTensor, i: number) => EntryOptions = () => ({}),
): ReadableStream<ModelChunk> {
  const chunks: ModelChunk[] = [
    { type: "header", header: { format: "test", metadata, tensors: tensors.map(infoOf) } },
    ...tensors.map((t, i) => ({ type: "tensor" as const, tensor: entryOf(t, entryOptions(t, i)) })),
  ];
  let next = 0;
  return new ReadableStream<ModelChunk>({
    pull(controller) {
      if (next < chunks.length) controller.enqueue(chunks[next++]!);
      else controller.close();
    },
  }, { highWaterMark: 0 });
}

async function tempDir(): Promise<string> {
  return await Deno.makeTempDir({ prefix: "aprkit_sink_" });
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: number[] = [];
  for await (const c of stream) parts.push(...c);
  return new Uint8Array(parts);
}

/** A model with many small tensors and a few larger ones, in non-sorted arrival order. */
function sampleTensors(): TestTensor[] {
  const out: TestTensor[] = [];
  for (let i = 0; i < 12; i++) {
    const shape = [i + 1, 37];
    out.push({
      name: `layer.${(12 - i).toString().padStart(2, "0")}.weight`,
      dtype: "F32",
      shape,
      data: bytesOf(tensorByteLength("F32", shape), i + 1),
    });
  }
  out.push({ name: "empty", dtype: "F16", shape: [0, 4], data: new Uint8Array(0) });
  out.push({ name: "scalar", dtype: "F32", shape: [], data: bytesOf(4, 99) });
  return out;
}

Deno.test("AprSink writes the golden vector byte for byte", async () => {
  const dir = await tempDir();
  const out = `${dir}/golden.apr`;
  const sink = await AprSink.create(out);
  await chunksOf(GOLDEN_METADATA, GOLDEN_TENSORS).pipeTo(sink);
  assert.equal(sha256(await Deno.readFile(out)), GOLDEN_SHA256);
  assert.deepEqual(sink.result, {
    path: out,
    bytes: 516,
    tensors: 2,
    footerCrc: 0x550f3f35,
    resumedTensors: 0,
    resumedBytes: 0,
  });
  assert.ok(!(await exists(`${out}.partial`)));
  assert.ok(!(await exists(`${out}.partial.journal`)));
  await Deno.remove(dir, { recursive: true });
});

Deno.test("AprSink → AprReader round-trips every dtype, empty, scalar and 8-dim tensors", async () => {
  const tensors: TestTensor[] = [];
  const dtypes: [DType, number[]][] = [
    ["F32", [3, 5]],
    ["F16", [7]],
    ["BF16", [2, 3]],
    ["F64", [2]],
    ["I32", [4]],
    ["I64", [1, 1]],
    ["I8", [5]],
    ["U8", [65]],
    ["APR_Q4", [40]],
    ["APR_Q8", [9]],
    ["Q4_K", [2, 256]],
    ["Q6_K", [1, 512]],
    ["F32", [0]],
    ["APR_Q8", [0]],
    ["F32", []],
    ["U8", [1, 2, 1, 2, 1, 2, 1, 2]],
  ];
  dtypes.forEach(([dtype, shape], i) => {
    tensors.push({
      name: `t${i}.${dtype}`,
      dtype,
      shape,
      data: bytesOf(tensorByteLength(dtype, shape), i + 3),
    });
  });
  tensors.push({ name: "\u{1D538}", dtype: "U8", shape: [1], data: new Uint8Array([1]) });
  tensors.push({ name: "\uFB00", dtype: "U8", shape: [1], data: new Uint8Array([2]) });
  const metadata: ModelMetadata = { model_type: "test", n_embd: 16, "tokenizer.merges": ["a b"] };
  const dir = await tempDir();
  const out = `${dir}/all.apr`;
  await chunksOf(metadata, tensors, () => ({ chunkSize: 7 })).pipeTo(await AprSink.create(out));
  const written = await Deno.readFile(out);
  assert.deepEqual(written, encodeApr({ metadata, tensors }), "sink and encodeApr agree");
  const reader = await openApr(await openFileSource(out));
  try {
    const names = reader.header.tensors.map((t) => t.name);
    assert.ok(names.indexOf("\uFB00") < names.indexOf("\u{1D538}"), "UTF-8 byte order");
    assert.equal(reader.header.metadata.hidden_size, 16);
    assert.equal(reader.header.metadata.n_embd, undefined);
    assert.equal(reader.header.metadata.total_size, tensors.reduce((n, t) => n + t.data.length, 0));
    for (const t of tensors) {
      const e = reader.tensor(t.name)!;
      assert.deepEqual(e.info, infoOf(t));
      assert.equal(e.fileOffset % 64, 0);
      assert.deepEqual(await collect(e.open()), t.data, t.name);
    }
    await reader.checkFooter();
  } finally {
    await reader.close();
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("AprSink.create() refuses an existing output without force", async () => {
  const dir = await tempDir();
  const out = `${dir}/exists.apr`;
  await Deno.writeTextFile(out, "keep me");
  await assert.rejects(
    () => AprSink.create(out),
    (e) =>
      e instanceof UsageError &&
      e.message === `Cannot write "${out}": it exists; use force: true to overwrite it`,
  );
  assert.equal(await Deno.readTextFile(out), "keep me");
  await chunksOf(GOLDEN_METADATA, GOLDEN_TENSORS).pipeTo(
    await AprSink.create(out, { force: true }),
  );
  assert.equal(sha256(await Deno.readFile(out)), GOLDEN_SHA256);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("AprSink removes the partial output on bad input", async (t) => {
  const dir = await tempDir();
  const cases: [string, ReadableStream<ModelChunk>, ErrorConstructor, string][] = [
    [
      "dtype without APR code",
      chunksOf({}, [{ name: "b", dtype: "BOOL", shape: [2], data: new Uint8Array(2) }]),
      TypeError,
      "dtype BOOL has no APR v2 code",
    ],
    [
      "duplicate names",
      chunksOf({}, [GOLDEN_TENSORS[0]!, GOLDEN_TENSORS[0]!]),
      TypeError,
      'tensor name "weights" appears twice',
    ],
    [
      "name over 256 bytes",
      chunksOf({}, [{ name: "é".repeat(129), dtype: "U8", shape: [1], data: new Uint8Array(1) }]),
      RangeError,
      "258 UTF-8 bytes exceeds the 256-byte limit",
    ],
    [
      "more than 8 dims",
      chunksOf({}, [{ name: "d", dtype: "U8", shape: Array(9).fill(1), data: new Uint8Array(1) }]),
      RangeError,
      "9 dimensions exceed the limit of 8",
    ],
    [
      // Stream shorter than its header says, after earlier tensors were committed.
      "short stream after commits",
      chunksOf({}, sampleTensors())
        .pipeThrough(
          new TransformStream<ModelChunk, ModelChunk>({
            transform(chunk, controller) {
              if (chunk.type === "tensor" && chunk.tensor.info.name === "layer.07.weight") {
                const original = chunk.tensor;
                controller.enqueue({
                  type: "tensor",
                  tensor: {
                    info: original.info,
                    open: () =>
                      original.open().pipeThrough(
                        new TransformStream({
                          transform(c, ctl) {
                            ctl.enqueue(c.subarray(1));
                          },
                        }),
                      ),
                  },
                });
              } else controller.enqueue(chunk);
            },
          }),
        ),
      RangeError,
      'tensor "layer.07.weight"',
    ],
  ];
  for (const [label, stream, cls, message] of cases) {
    await t.step(label, async () => {
      const out = `${dir}/bad.apr`;
      const sink = await AprSink.create(out, { commitBytes: 0 });
      await assert.rejects(() => stream.pipeTo(sink), (e) => {
        assert.ok(e instanceof cls, String(e));
        assert.ok((e as Error).message.includes(message), (e as Error).message);
        return true;
      });
      assert.ok(!(await exists(out)), "no file at OUT");
      assert.ok(!(await exists(`${out}.partial`)), "partial removed");
      assert.ok(!(await exists(`${out}.partial.journal`)), "journal removed");
    });
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("AprSink removes the partial when an interruption leaves nothing committed", async () => {
  const dir = await tempDir();
  const out = `${dir}/m.apr`;
  await assert.rejects(
    async () =>
      await chunksOf({}, sampleTensors(), (_, i) => (i === 0 ? { failAfter: 100 } : {}))
        .pipeTo(await AprSink.create(out)),
    /connection reset/,
  );
  assert.ok(!(await exists(`${out}.partial`)));
  assert.ok(!(await exists(`${out}.partial.journal`)));
  assert.ok(!(await exists(out)));
  await Deno.remove(dir, { recursive: true });
});

async function uninterrupted(dir: string, tensors: TestTensor[], options: AprSinkOptions = {}) {
  const out = `${dir}/reference.apr`;
  await chunksOf({ model_type: "m" }, tensors).pipeTo(await AprSink.create(out, options));
  return await Deno.readFile(out);
}

Deno.test("AprSink resumes after an interruption with identical bytes, skipping committed tensors", async () => {
  const dir = await tempDir();
  const tensors = sampleTensors();
  const reference = await uninterrupted(dir, tensors);
  const out = `${dir}/m.apr`;
  // Run 1: the 7th tensor's stream fails mid-way (a network error, not bad input).
  await assert.rejects(
    async () =>
      await chunksOf({ model_type: "m" }, tensors, (_, i) => (i === 6 ? { failAfter: 500 } : {}))
        .pipeTo(await AprSink.create(out, { planKey: "q=none", commitBytes: 2000 })),
    /connection reset/,
  );
  assert.ok(!(await exists(out)), "no file at OUT after failure");
  assert.ok(await exists(`${out}.partial`));
  const journal = (await Deno.readTextFile(`${out}.partial.journal`)).trim().split("\n");
  assert.equal(journal.length, 1 + 6, "the six finished tensors are committed");
  // Run 2: resume; committed tensors must not be opened.
  const opened: string[] = [];
  const events: ProgressEvent[] = [];
  const sink = await AprSink.create(out, {
    resume: true,
    planKey: "q=none",
    onProgress: (e) => events.push(e),
  });
  await chunksOf({ model_type: "m" }, tensors, (t) => ({ onOpen: () => opened.push(t.name) }))
    .pipeTo(sink);
  assert.deepEqual(await Deno.readFile(out), reference);
  assert.deepEqual(opened, tensors.slice(6).map((t) => t.name));
  assert.equal(sink.result!.resumedTensors, 6);
  const resumedBytes = tensors.slice(0, 6).reduce((n, t) => n + t.data.length, 0);
  assert.equal(events[0]!.bytesDone, resumedBytes);
  assert.equal(events[0]!.itemsDone, 6);
  assert.equal(events.at(-1)!.bytesDone, events.at(-1)!.bytesTotal);
  assert.equal(events.at(-1)!.itemsDone, tensors.length);
  assert.ok(events.every((e) => e.phase === "write"));
  assert.ok(!(await exists(`${out}.partial`)));
  assert.ok(!(await exists(`${out}.partial.journal`)));
  await Deno.remove(dir, { recursive: true });
});

Deno.test("AprSink resumes after the producer aborts, and re-writes a corrupted commit", async () => {
  const dir = await tempDir();
  const tensors = sampleTensors();
  const reference = await uninterrupted(dir, tensors, { dataOrder: "arrival" });
  const out = `${dir}/m.apr`;
  const sink = await AprSink.create(out, { dataOrder: "arrival", commitIntervalMs: 0 });
  const writer = sink.getWriter();
  await writer.write({
    type: "header",
    header: { format: "t", metadata: { model_type: "m" }, tensors: tensors.map(infoOf) },
  });
  for (const t of tensors.slice(0, 4)) await writer.write({ type: "tensor", tensor: entryOf(t) });
  await writer.abort(new Error("interrupted by the user"));
  assert.ok(await exists(`${out}.partial`));
  // Corrupt the second tensor's bytes in the partial: the resume must notice and re-write it.
  const layout = planAprLayout({ model_type: "m" }, tensors.map(infoOf), { dataOrder: "arrival" });
  const f = await Deno.open(`${out}.partial`, { write: true });
  await f.seek(layout.tensors[1]!.fileOffset, Deno.SeekMode.Start);
  await f.write(new Uint8Array([0xde, 0xad]));
  f.close();
  const opened: string[] = [];
  const resumed = await AprSink.create(out, { resume: true, dataOrder: "arrival" });
  await chunksOf({ model_type: "m" }, tensors, (t) => ({ onOpen: () => opened.push(t.name) }))
    .pipeTo(resumed);
  assert.deepEqual(await Deno.readFile(out), reference);
  // The corrupted tensor is written again when it arrives, or at the end if
  // its check (beside the writes) had not finished by then: either order.
  assert.deepEqual(
    [...opened].sort(),
    [tensors[1]!, ...tensors.slice(4)].map((t) => t.name).sort(),
  );
  assert.equal(resumed.result!.resumedTensors, 3);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("AprSink refuses to resume a partial planned differently", async () => {
  const dir = await tempDir();
  const tensors = sampleTensors();
  const out = `${dir}/m.apr`;
  await assert.rejects(
    async () =>
      await chunksOf({ model_type: "m" }, tensors, (_, i) => (i === 3 ? { failAfter: 0 } : {}))
        .pipeTo(await AprSink.create(out, { planKey: "quantize=f16", commitBytes: 0 })),
    /connection reset/,
  );
  const before = await Deno.readFile(`${out}.partial`);
  await assert.rejects(
    async () =>
      await chunksOf({ model_type: "m" }, tensors).pipeTo(
        await AprSink.create(out, { resume: true, planKey: "quantize=q4_k" }),
      ),
    (e) =>
      e instanceof UsageError &&
      e.message.includes("was planned from a different input or options") &&
      e.message.includes("run without resume: true"),
  );
  assert.deepEqual(await Deno.readFile(`${out}.partial`), before, "partial left alone");
  assert.ok(await exists(`${out}.partial.journal`));
  // Without --resume, the stale partial is replaced.
  await chunksOf({ model_type: "m" }, tensors).pipeTo(
    await AprSink.create(out, { planKey: "quantize=q4_k" }),
  );
  assert.deepEqual(await Deno.readFile(out), await uninterrupted(dir, tensors));
  assert.ok(!(await exists(`${out}.partial.journal`)));
  await Deno.remove(dir, { recursive: true });
});

Deno.test("AprSink with resume and no partial starts fresh", async () => {
  const dir = await tempDir();
  const out = `${dir}/golden.apr`;
  const sink = await AprSink.create(out, { resume: true });
  await chunksOf(GOLDEN_METADATA, GOLDEN_TENSORS).pipeTo(sink);
  assert.equal(sha256(await Deno.readFile(out)), GOLDEN_SHA256);
  assert.equal(sink.result!.resumedTensors, 0);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("AprSink streams a large tensor chunk by chunk without buffering it", async () => {
  const dir = await tempDir();
  const out = `${dir}/big.apr`;
  const chunk = 64 * 1024;
  const chunks = 24;
  const big: TestTensor = {
    name: "big",
    dtype: "U8",
    shape: [chunk * chunks],
    data: new Uint8Array(0),
  };
  const small: TestTensor = { name: "a", dtype: "U8", shape: [3], data: new Uint8Array([1, 2, 3]) };
  const layout = planAprLayout({}, [
    infoOf({ ...big, data: new Uint8Array(chunk * chunks) }),
    infoOf(small),
  ]);
  const bigOffset = layout.tensors[0]!.fileOffset;
  let produced = 0;
  let maxAhead = 0;
  // Opened once the sink has created it (a fresh file, see partial_file.ts).
  let partial: Deno.FsFile | undefined;
  const entry: TensorEntry = {
    info: { name: "big", dtype: "U8", shape: big.shape, byteLength: chunk * chunks },
    open: () =>
      new ReadableStream<Uint8Array>({
        async pull(controller) {
          partial ??= await Deno.open(`${out}.partial`, { read: true });
          if (produced > 0) {
            // Every chunk handed out before the previous one is already in the file.
            const check = new Uint8Array(1);
            await partial.seek(bigOffset + (produced - 1) * chunk, Deno.SeekMode.Start);
            await partial.read(check);
            const written = check[0] === ((produced - 1) & 0xff) + 1 ? produced : produced - 1;
            maxAhead = Math.max(maxAhead, produced - written);
          }
          if (produced === chunks) {
            controller.close();
            return;
          }
          controller.enqueue(new Uint8Array(chunk).fill((produced & 0xff) + 1));
          produced++;
        },
      }, { highWaterMark: 0 }),
  };
  const stream = new ReadableStream<ModelChunk>({
    start(controller) {
      controller.enqueue({
        type: "header",
        header: { format: "t", metadata: {}, tensors: [entry.info, infoOf(small)] },
      });
      controller.enqueue({ type: "tensor", tensor: entry });
      controller.enqueue({ type: "tensor", tensor: entryOf(small) });
      controller.close();
    },
  });
  await stream.pipeTo(await AprSink.create(out));
  partial?.close();
  assert.equal(produced, chunks);
  assert.equal(maxAhead, 0, "each chunk is in the file before the next is pulled");
  const reader = await openApr(await openFileSource(out));
  let at = 0;
  for await (const c of reader.tensor("big")!.open()) {
    for (let i = 0; i < c.length; i++) {
      assert.equal(c[i], (Math.floor((at + i) / chunk) & 0xff) + 1);
    }
    at += c.length;
  }
  assert.equal(at, chunk * chunks);
  await reader.checkFooter();
  await reader.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("AprSink keeps the partial when the stream ends early after commits", async () => {
  const dir = await tempDir();
  const out = `${dir}/m.apr`;
  const tensors = sampleTensors();
  const sink = await AprSink.create(out, { commitBytes: 0 });
  const writer = sink.getWriter();
  await writer.write({
    type: "header",
    header: { format: "t", metadata: {}, tensors: tensors.map(infoOf) },
  });
  await writer.write({ type: "tensor", tensor: entryOf(tensors[0]!) });
  await assert.rejects(() => writer.close(), /stream ended after 1 of 14 tensors/);
  assert.ok(await exists(`${out}.partial`));
  assert.ok(await exists(`${out}.partial.journal`));
  assert.ok(!(await exists(out)));
  await Deno.remove(dir, { recursive: true });
});

Deno.test("AprSink rejects chunks that do not match the header", async (t) => {
  const dir = await tempDir();
  const [w, b] = GOLDEN_TENSORS as [TestTensor, TestTensor];
  const cases: [string, ModelChunk[], string][] = [
    ["tensor before header", [{ type: "tensor", tensor: entryOf(w) }], "before the header"],
    [
      "unknown tensor",
      [
        { type: "header", header: { format: "t", metadata: {}, tensors: [infoOf(w)] } },
        { type: "tensor", tensor: entryOf(b) },
      ],
      'tensor "bias" is not in the header',
    ],
    [
      "tensor twice",
      [
        { type: "header", header: { format: "t", metadata: {}, tensors: [infoOf(w)] } },
        { type: "tensor", tensor: entryOf(w) },
        { type: "tensor", tensor: entryOf(w) },
      ],
      'tensor "weights" arrived twice',
    ],
    [
      "changed dtype",
      [
        { type: "header", header: { format: "t", metadata: {}, tensors: [infoOf(w)] } },
        { type: "tensor", tensor: entryOf({ ...w, dtype: "I32" }) },
      ],
      'tensor "weights" arrived as I32 [8] (32 bytes), the header said F32 [8] (32 bytes)',
    ],
  ];
  for (const [label, chunks, message] of cases) {
    await t.step(label, async () => {
      const out = `${dir}/x.apr`;
      const stream = ReadableStream.from(chunks);
      await assert.rejects(
        async () => await stream.pipeTo(await AprSink.create(out)),
        (e) => e instanceof TypeError && e.message.includes(message),
      );
      assert.ok(!(await exists(out)));
      assert.ok(!(await exists(`${out}.partial`)));
    });
  }
  await Deno.remove(dir, { recursive: true });
});
