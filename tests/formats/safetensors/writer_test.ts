import assert from "node:assert/strict";
import { SafetensorsSink } from "../../../src/formats/safetensors/writer.ts";
import { openSafetensors } from "../../../src/formats/safetensors/reader.ts";
import { openSafetensorsModel } from "../../../src/formats/safetensors/sharded.ts";
import { encodeSafetensors } from "../../../src/formats/safetensors/encode.ts";
import { parseSafetensorsHeader } from "../../../src/formats/safetensors/header.ts";
import { UsageError } from "../../../src/errors.ts";
import { openFileSource } from "../../../src/io/file_source.ts";
import { LocalModelFiles } from "../../../src/io/model_files.ts";
import {
  type ModelChunk,
  modelChunks,
  type ModelReader,
  type ProgressEvent,
  type TensorInfo,
} from "../../../src/tensor.ts";
import type { DType } from "../../../src/dtype.ts";
import { collect, rejection, sourceOf } from "./_builder.ts";

const FIXTURE = "tests/testdata/safetensors/hf_samples/overall.safetensors";

/** A model held in memory, payloads yielded in chunks of `chunk` bytes. */
function memoryModel(
  tensors: { name: string; dtype: DType; shape: number[]; data: Uint8Array }[],
  metadata: Record<string, unknown> = {},
  chunk = 5,
): ModelReader {
  const infos: TensorInfo[] = tensors.map((t) => ({
    name: t.name,
    dtype: t.dtype,
    shape: t.shape,
    byteLength: t.data.length,
  }));
  return {
    header: { format: "test", metadata, tensors: infos },
    tensors: tensors.map((t, i) => ({
      info: infos[i]!,
      open: () => sourceOf(t.data).stream(0, t.data.length, chunk),
    })),
    close: () => Promise.resolve(),
  };
}

async function listDir(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) names.push(e.name);
  return names.sort();
}

async function tensorBytes(model: ModelReader): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  for (const t of model.tensors) out.set(t.info.name, await collect(t.open()));
  return out;
}

Deno.test("SafetensorsSink writes one file that reads back byte-identically", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const source = await openSafetensors(await openFileSource(FIXTURE), { chunkSize: 7 });
    const events: ProgressEvent[] = [];
    const out = `${dir}/model.safetensors`;
    const sink = await SafetensorsSink.create(out, { onProgress: (e) => events.push(e) });
    await modelChunks(source).pipeTo(sink);
    assert.deepStrictEqual(sink.outputs, [out]);
    assert.deepStrictEqual(await listDir(dir), ["model.safetensors"]);

    const back = await openSafetensors(await openFileSource(out));
    assert.deepStrictEqual(back.header.tensors, source.header.tensors);
    assert.deepStrictEqual(back.header.metadata, {
      original_format: "safetensors",
      source_metadata: { test: "a", format: "pt" },
    });
    // Data starts 8-aligned, like the official writer.
    assert.equal(back.safetensorsHeader.dataOffset % 8, 0);
    assert.deepStrictEqual(await tensorBytes(back), await tensorBytes(source));
    // The streaming writer and the in-memory encoder agree byte for byte.
    const bytes = await tensorBytes(source);
    const encoded = encodeSafetensors({
      metadata: { test: "a", format: "pt" },
      tensors: source.header.tensors.map((t) => ({ ...t, data: bytes.get(t.name)! })),
    });
    assert.deepStrictEqual(await Deno.readFile(out), encoded);
    assert.equal(events.at(-1)!.itemsDone, 9);
    assert.equal(events.at(-1)!.bytesDone, 168);
    assert.equal(events.at(-1)!.bytesTotal, 168);
    assert.equal(events.at(-1)!.phase, "export");
    await back.close();
    await source.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("SafetensorsSink shards with maxShardSize and writes the index transformers reads", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const source = await openSafetensors(
      await openFileSource("tests/testdata/safetensors/burn/mnist.safetensors"),
      { chunkSize: 65536 },
    );
    const out = `${dir}/model.safetensors`;
    await modelChunks(source).pipeTo(await SafetensorsSink.create(out, { maxShardSize: 500_000 }));
    const names = await listDir(dir);
    const shards = names.filter((n) => n.endsWith(".safetensors"));
    assert.ok(shards.length > 1);
    assert.deepStrictEqual(names, [...shards, "model.safetensors.index.json"].sort());
    shards.forEach((n, i) =>
      assert.equal(
        n,
        `model-${String(i + 1).padStart(5, "0")}-of-${
          String(shards.length).padStart(5, "0")
        }.safetensors`,
      )
    );
    const index = JSON.parse(await Deno.readTextFile(`${dir}/model.safetensors.index.json`));
    const total = source.header.tensors.reduce((n, t) => n + t.byteLength, 0);
    assert.equal(index.metadata.total_size, total);
    const keys = Object.keys(index.weight_map);
    assert.deepStrictEqual(keys, [...keys].sort());
    for (const shard of shards) {
      const size = (await Deno.stat(`${dir}/${shard}`)).size;
      const src = await openFileSource(`${dir}/${shard}`);
      const h = await parseSafetensorsHeader(src);
      await src.close();
      // Each shard holds at most maxShardSize bytes of data unless one tensor is larger.
      assert.ok(h.dataByteLength <= 500_000 || h.tensors.length === 1, `${shard}: ${size}`);
    }

    const warnings: string[] = [];
    const back = await openSafetensorsModel(new LocalModelFiles(dir), {
      onWarning: (m) => warnings.push(m),
    });
    assert.deepStrictEqual(warnings, []);
    assert.deepStrictEqual(back.header.tensors, source.header.tensors);
    assert.deepStrictEqual(await tensorBytes(back), await tensorBytes(source));
    await back.close();
    await source.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("SafetensorsSink writes one file when everything fits in one shard, and names shards after the path", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const tensors = [
      { name: "a", dtype: "F32" as const, shape: [2], data: new Uint8Array(8).fill(1) },
      { name: "b", dtype: "BF16" as const, shape: [], data: new Uint8Array(2).fill(2) },
    ];
    await modelChunks(memoryModel(tensors)).pipeTo(
      await SafetensorsSink.create(`${dir}/one.safetensors`, { maxShardSize: 1000 }),
    );
    assert.deepStrictEqual(await listDir(dir), ["one.safetensors"]);
    const sink = await SafetensorsSink.create(`${dir}/sub/x.safetensors`, { maxShardSize: 8 });
    await Deno.mkdir(`${dir}/sub`);
    await modelChunks(memoryModel(tensors)).pipeTo(sink);
    assert.deepStrictEqual(await listDir(`${dir}/sub`), [
      "x-00001-of-00002.safetensors",
      "x-00002-of-00002.safetensors",
      "x.safetensors.index.json",
    ]);
    const back = await openSafetensorsModel(new LocalModelFiles(`${dir}/sub`), {
      indexPath: "x.safetensors.index.json",
    });
    assert.deepStrictEqual(await collect(back.tensors[1]!.open()), new Uint8Array(2).fill(2));
    await back.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("SafetensorsSink writes a model without tensors as a valid file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await modelChunks(memoryModel([], { source_metadata: { format: "pt", n: 1 } })).pipeTo(
      await SafetensorsSink.create(`${dir}/empty.safetensors`),
    );
    const back = await openSafetensors(await openFileSource(`${dir}/empty.safetensors`));
    assert.equal(back.tensors.length, 0);
    // Only string values survive: __metadata__ is string → string.
    assert.deepStrictEqual(back.header.metadata["source_metadata"], { format: "pt" });
    await back.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("SafetensorsSink refuses what it cannot write and leaves no file behind", async (t) => {
  const dir = await Deno.makeTempDir();
  const ok = { name: "ok", dtype: "F32" as const, shape: [1], data: new Uint8Array(4) };
  try {
    await t.step("a dtype SafeTensors lacks", async () => {
      const model = memoryModel([ok, {
        name: "blk.0.q",
        dtype: "Q4_K",
        shape: [256],
        data: new Uint8Array(144),
      }]);
      await rejection(
        async () => modelChunks(model).pipeTo(await SafetensorsSink.create(`${dir}/q.safetensors`)),
        TypeError,
        'Cannot write tensor "blk.0.q" as SafeTensors: it is Q4_K, which SafeTensors cannot hold; export with float32: true',
      );
      assert.deepStrictEqual(await listDir(dir), []);
    });
    await t.step("a payload shorter than its byteLength", async () => {
      const model = memoryModel([ok]);
      const short: ModelReader = {
        ...model,
        tensors: [{
          info: model.tensors[0]!.info,
          open: () => sourceOf(new Uint8Array(3)).stream(0, 3),
        }],
      };
      await rejection(
        async () => modelChunks(short).pipeTo(await SafetensorsSink.create(`${dir}/s.safetensors`)),
        RangeError,
        'tensor "ok" yielded 3 of its 4 bytes',
      );
      assert.deepStrictEqual(await listDir(dir), []);
    });
    await t.step("a payload longer than its byteLength, in a sharded export", async () => {
      const model = memoryModel([ok, { ...ok, name: "ok2" }]);
      const long: ModelReader = {
        ...model,
        tensors: [model.tensors[0]!, {
          info: model.tensors[1]!.info,
          open: () => sourceOf(new Uint8Array(9)).stream(0, 9),
        }],
      };
      await rejection(
        async () =>
          modelChunks(long).pipeTo(
            await SafetensorsSink.create(`${dir}/l.safetensors`, { maxShardSize: 4 }),
          ),
        RangeError,
        'tensor "ok2" yields more than its 4 bytes',
      );
      assert.deepStrictEqual(await listDir(dir), []);
    });
    await t.step("tensors out of header order", async () => {
      const model = memoryModel([ok, { ...ok, name: "ok2" }]);
      const chunks: ModelChunk[] = [
        { type: "header", header: model.header },
        { type: "tensor", tensor: model.tensors[1]! },
      ];
      await rejection(
        async () =>
          ReadableStream.from(chunks).pipeTo(await SafetensorsSink.create(`${dir}/o.safetensors`)),
        TypeError,
        'tensor "ok2" arrived, expected "ok"',
      );
      assert.deepStrictEqual(await listDir(dir), []);
    });
    await t.step("a stream that ends early", async () => {
      const model = memoryModel([ok]);
      await rejection(
        async () =>
          ReadableStream.from<ModelChunk>([{ type: "header", header: model.header }]).pipeTo(
            await SafetensorsSink.create(`${dir}/e.safetensors`),
          ),
        TypeError,
        "the stream ended after 0 of 1 tensors",
      );
      assert.deepStrictEqual(await listDir(dir), []);
    });
    await t.step("a tensor named __metadata__", async () => {
      await rejection(
        async () =>
          modelChunks(memoryModel([{ ...ok, name: "__metadata__" }])).pipeTo(
            await SafetensorsSink.create(`${dir}/m.safetensors`),
          ),
        TypeError,
        'Cannot write tensor "__metadata__" as SafeTensors: the name is reserved',
      );
    });
    await t.step("an existing output without force, then with force", async () => {
      await Deno.writeTextFile(`${dir}/x.safetensors`, "old");
      await rejection(
        () => SafetensorsSink.create(`${dir}/x.safetensors`),
        UsageError,
        "it exists; use force: true to overwrite it",
      );
      await modelChunks(memoryModel([ok])).pipeTo(
        await SafetensorsSink.create(`${dir}/x.safetensors`, { force: true }),
      );
      const back = await openSafetensors(await openFileSource(`${dir}/x.safetensors`));
      assert.equal(back.tensors.length, 1);
      await back.close();
    });
    await t.step("an existing shard without force", async () => {
      await Deno.writeTextFile(`${dir}/y.safetensors.index.json`, "old");
      await rejection(
        async () =>
          modelChunks(memoryModel([ok, { ...ok, name: "ok2" }])).pipeTo(
            await SafetensorsSink.create(`${dir}/y.safetensors`, { maxShardSize: 4 }),
          ),
        UsageError,
        `Cannot write "${dir}/y.safetensors.index.json": it exists; use force: true to overwrite it`,
      );
    });
    await t.step("a bad maxShardSize, before any I/O", async () => {
      await rejection(
        () => SafetensorsSink.create(`${dir}/z.safetensors`, { maxShardSize: 0 }),
        RangeError,
        "shard size 0 is not a positive integer",
      );
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("encodeSafetensors() checks its input and writes what the reader reads", async () => {
  assert.throws(
    () =>
      encodeSafetensors({
        tensors: [{ name: "a", dtype: "F32", shape: [2], data: new Uint8Array(4) }],
      }),
    { name: "RangeError", message: /F32 \[2\] is 8 bytes, not 4/ },
  );
  assert.throws(
    () =>
      encodeSafetensors({
        tensors: [
          { name: "a", dtype: "U8", shape: [1], data: new Uint8Array(1) },
          { name: "a", dtype: "U8", shape: [1], data: new Uint8Array(1) },
        ],
      }),
    { name: "TypeError", message: /tensor "a" appears twice/ },
  );
  const bytes = encodeSafetensors({
    metadata: { k: "v" },
    tensors: [
      { name: "s", dtype: "F4", shape: [2, 2], data: new Uint8Array([0x12, 0x34]) },
      { name: "z", dtype: "F32", shape: [0, 3], data: new Uint8Array(0) },
    ],
  });
  const reader = await openSafetensors(sourceOf(bytes));
  assert.deepStrictEqual(reader.header.tensors.map((t) => [t.name, t.byteLength]), [["s", 2], [
    "z",
    0,
  ]]);
  assert.deepStrictEqual(await collect(reader.tensors[0]!.open()), new Uint8Array([0x12, 0x34]));
  assert.deepStrictEqual(reader.safetensorsHeader.metadata, { k: "v" });
  await reader.close();
});
