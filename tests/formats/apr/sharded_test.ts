import assert from "node:assert/strict";
import { ModelFormatError, UsageError } from "../../../src/errors.ts";
import { encodeApr } from "../../../src/formats/apr/encode_apr.ts";
import { APR_FLAGS } from "../../../src/formats/apr/header.ts";
import { APR_MAX_TENSORS, openApr } from "../../../src/formats/apr/reader.ts";
import {
  aprShardNames,
  parseAprManifest,
  planAprShards,
} from "../../../src/formats/apr/sharded_manifest.ts";
import { openShardedApr } from "../../../src/formats/apr/sharded_reader.ts";
import { ShardedAprSink } from "../../../src/formats/apr/sharded_sink.ts";
import { openFileSource } from "../../../src/io/file_source.ts";
import { openModel } from "../../../src/pipeline/open_model.ts";
import { LocalModelFiles } from "../../../src/io/model_files.ts";
import type { ModelChunk, ModelMetadata, TensorEntry } from "../../../src/tensor.ts";
import { bytesOf } from "./_fixtures.ts";

interface T {
  name: string;
  shape: number[];
  data: Uint8Array;
}

/** Five F32 tensors: 1 KiB, 1 KiB, 3 KiB (over the 2 KiB limit), 1 KiB, 64 B. */
function model(): T[] {
  return [
    { name: "a", shape: [256], data: bytesOf(1024, 1) },
    { name: "b", shape: [16, 16], data: bytesOf(1024, 2) },
    { name: "big", shape: [3, 256], data: bytesOf(3072, 3) },
    { name: "c", shape: [256], data: bytesOf(1024, 4) },
    { name: "d", shape: [16], data: bytesOf(64, 5) },
  ].map((t) => ({ ...t, data: fixNaN(t.data) }));
}

/** Random bytes, made into finite f32 values so decoders never see odd patterns. */
function fixNaN(bytes: Uint8Array): Uint8Array {
  for (let i = 3; i < bytes.length; i += 4) bytes[i] = bytes[i]! & 0x3f;
  return bytes;
}

const METADATA: ModelMetadata = { model_type: "llama", name: "sharded-test" };

function chunks(tensors: T[]): ReadableStream<ModelChunk> {
  const entries: TensorEntry[] = tensors.map((t) => ({
    info: { name: t.name, dtype: "F32", shape: t.shape, byteLength: t.data.length },
    open: () => ReadableStream.from([t.data.slice(0, 100), t.data.slice(100)]),
  }));
  return ReadableStream.from<ModelChunk>([
    {
      type: "header",
      header: { format: "test", metadata: METADATA, tensors: entries.map((e) => e.info) },
    },
    ...entries.map((tensor) => ({ type: "tensor" as const, tensor })),
  ]);
}

async function writeSet(dir: string, tensors = model(), maxShardSize = 2048): Promise<void> {
  const sink = await ShardedAprSink.create(`${dir}/m.apr`, { maxShardSize, force: true });
  await chunks(tensors).pipeTo(sink);
}

async function bytesOfStream(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

Deno.test("planAprShards() fills shards up to the limit; a bigger tensor goes alone", () => {
  const infos = model().map((t) => ({
    name: t.name,
    dtype: "F32" as const,
    shape: t.shape,
    byteLength: t.data.length,
  }));
  assert.deepEqual(planAprShards(infos, 2048), [[0, 1], [2], [3, 4]]);
  assert.deepEqual(planAprShards(infos, 1 << 30), [[0, 1, 2, 3, 4]]);
  assert.deepEqual(planAprShards(infos, 1), [[0], [1], [2], [3], [4]]);
  assert.throws(() => planAprShards(infos, 0), RangeError);
  assert.deepEqual(aprShardNames("m.apr", 3).files, [
    "m-00001-of-00003.apr",
    "m-00002-of-00003.apr",
    "m-00003-of-00003.apr",
  ]);
});

Deno.test("ShardedAprSink writes complete SHARDED APR files and the manifest", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await writeSet(dir);
    const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    assert.deepEqual(names, [
      "m-00001-of-00003.apr",
      "m-00002-of-00003.apr",
      "m-00003-of-00003.apr",
      "m.apr.manifest.json",
    ]);
    const manifest = parseAprManifest(
      await Deno.readTextFile(`${dir}/m.apr.manifest.json`),
      "m.apr.manifest.json",
    );
    assert.equal(manifest.version, "2.0");
    assert.equal(manifest.shard_count, 3);
    assert.equal(manifest.tensor_count, 5);
    assert.equal(manifest.total_size, 1024 * 3 + 3072 + 64);
    assert.deepEqual(manifest.shards.map((s) => s.tensors), [["a", "b"], ["big"], ["c", "d"]]);
    assert.deepEqual(manifest.weight_map, { a: 0, b: 0, big: 1, c: 2, d: 2 });
    for (const [i, s] of manifest.shards.entries()) {
      const shard = await openApr(await openFileSource(`${dir}/${s.filename}`));
      try {
        assert.equal(shard.fileSize, s.size);
        assert.equal(shard.aprHeader.flags, APR_FLAGS.LAYOUT_ROW_MAJOR | APR_FLAGS.SHARDED);
        assert.deepEqual(shard.header.metadata.sharding, {
          shard_count: 3,
          shard_index: i,
          total_size: manifest.total_size,
          pattern: "m-{index}-of-00003.apr",
        });
        assert.equal(shard.header.metadata.name, "sharded-test");
        assert.ok((await shard.verifyFooter()).ok);
      } finally {
        await shard.close();
      }
    }
    // Existing output is refused without force.
    await assert.rejects(
      async () =>
        chunks(model()).pipeTo(
          await ShardedAprSink.create(`${dir}/m.apr`, { maxShardSize: 2048 }),
        ),
      UsageError,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openShardedApr() reads the set as one model from the manifest or any shard", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    await writeSet(dir);
    const files = new LocalModelFiles(dir);
    const expected = model();
    for (const path of ["m.apr.manifest.json", "m-00002-of-00003.apr"]) {
      await t.step(path, async () => {
        const set = await openShardedApr(files, path);
        try {
          assert.equal(set.header.format, "apr");
          assert.equal(set.shards.length, 3);
          assert.equal(set.header.metadata.sharding, undefined);
          assert.equal(set.header.metadata.total_size, 1024 * 3 + 3072 + 64);
          assert.equal(set.header.metadata.param_count, (1024 * 3 + 3072 + 64) / 4);
          assert.deepEqual(set.header.tensors.map((i) => i.name), ["a", "b", "big", "c", "d"]);
          for (const e of set.tensors) {
            const want = expected.find((x) => x.name === e.info.name)!;
            assert.deepEqual(await bytesOfStream(e.open()), want.data);
          }
        } finally {
          await set.close();
        }
      });
    }
    await t.step("openModel() on the manifest, a shard and the folder", async () => {
      for (const p of [`${dir}/m.apr.manifest.json`, `${dir}/m-00003-of-00003.apr`, dir]) {
        const m = await openModel(p);
        try {
          assert.equal(m.header.tensors.length, 5);
          assert.deepEqual(await m.tensor("big").bytes(), expected[2]!.data);
        } finally {
          await m.close();
        }
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A hand-made shard, for sets no writer would produce. */
function shard(
  tensors: T[],
  index: number,
  count: number,
  totalSize: number,
  flags = APR_FLAGS.LAYOUT_ROW_MAJOR | APR_FLAGS.SHARDED,
): Uint8Array {
  return encodeApr({
    metadata: {
      ...METADATA,
      sharding: {
        shard_count: count,
        shard_index: index,
        total_size: totalSize,
        pattern: "h-{index}-of-00002.apr",
      },
    },
    tensors: tensors.map((t) => ({ ...t, dtype: "F32" as const })),
  }, { flags });
}

Deno.test("openShardedApr() rejects inconsistent sets", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    const files = new LocalModelFiles(dir);
    const m = model();
    const reset = async () => {
      for (const e of Deno.readDirSync(dir)) await Deno.remove(`${dir}/${e.name}`);
      await writeSet(dir);
    };
    // deno-lint-ignore no-explicit-any -- free-form edits of parsed JSON
    const editManifest = async (change: (j: Record<string, any>) => void) => {
      const path = `${dir}/m.apr.manifest.json`;
      const j = JSON.parse(await Deno.readTextFile(path));
      change(j);
      await Deno.writeTextFile(path, JSON.stringify(j));
    };
    const cases: [string, () => Promise<void>, string, RegExp][] = [
      [
        "missing shard",
        () => Deno.remove(`${dir}/m-00002-of-00003.apr`),
        "m.apr.manifest.json",
        /shard 2 of 3 "m-00002-of-00003.apr" is missing/,
      ],
      [
        "missing shard, opened from another shard",
        () => Deno.remove(`${dir}/m-00003-of-00003.apr`),
        "m-00001-of-00003.apr",
        /shard 3 of 3 "m-00003-of-00003.apr" is missing/,
      ],
      [
        "tensor listed in two shards",
        () => editManifest((j) => j.shards[1].tensors.push("a")),
        "m.apr.manifest.json",
        /manifest: tensor "a" is listed in shards 0 and 1/,
      ],
      [
        "tensor in the wrong shard",
        () =>
          editManifest((j) => {
            j.shards[0].tensors = ["a"];
            j.shards[1].tensors.push("b");
            j.weight_map.b = 1;
          }),
        "m.apr.manifest.json",
        /holds tensor "b", which the manifest puts in shard 2/,
      ],
      [
        "manifest lists a tensor the shard lacks",
        () =>
          editManifest((j) => {
            j.shards[0].tensors.push("zz");
            j.weight_map.zz = 0;
            j.tensor_count = 6;
          }),
        "m.apr.manifest.json",
        /lacks tensor "zz", which the manifest puts in it/,
      ],
      [
        "tensor count mismatch",
        () => editManifest((j) => (j.tensor_count = 9)),
        "m.apr.manifest.json",
        /manifest: tensor_count is 9 but the shards list 5 tensors/,
      ],
      [
        "shard count mismatch in the manifest",
        () => editManifest((j) => (j.shard_count = 2)),
        "m.apr.manifest.json",
        /manifest: shard_count is 2 but shards lists 3/,
      ],
      [
        "weight_map disagrees",
        () => editManifest((j) => (j.weight_map.a = 2)),
        "m.apr.manifest.json",
        /weight_map puts tensor "a" in shard 2, shards\[0\] lists it/,
      ],
      [
        "manifest file name with a folder",
        () => editManifest((j) => (j.shards[0].filename = "../x.apr")),
        "m.apr.manifest.json",
        /shards\[0\].filename "..\/x.apr" is not a plain file name/,
      ],
      [
        "shard size differs from the manifest",
        () => editManifest((j) => (j.shards[2].size += 64)),
        "m.apr.manifest.json",
        /is \d+ bytes, the manifest says \d+/,
      ],
      [
        "total size differs from the manifest",
        () => editManifest((j) => (j.total_size += 1)),
        "m.apr.manifest.json",
        /manifest total_size 6209 does not match the shards. 6208 bytes/,
      ],
      [
        "a shard of another set in its place",
        async () => {
          const other = await Deno.makeTempDir();
          await writeSet(other, m, 1 << 20);
          await Deno.copyFile(`${other}/m-00001-of-00001.apr`, `${dir}/m-00002-of-00003.apr`);
          await Deno.remove(other, { recursive: true });
        },
        "m-00001-of-00003.apr",
        /shard_count is 1, the set has 3/,
      ],
      [
        "a plain APR file listed as a shard",
        async () => {
          await Deno.writeFile(
            `${dir}/m-00002-of-00003.apr`,
            encodeApr({
              tensors: [{ name: "big", dtype: "F32", shape: [3, 256], data: m[2]!.data }],
            }),
          );
        },
        "m.apr.manifest.json",
        /lacks flag SHARDED or metadata.sharding/,
      ],
      [
        "same tensor in two shards (no manifest)",
        async () => {
          await Deno.writeFile(`${dir}/h-00001-of-00002.apr`, shard([m[0]!], 0, 2, 2048));
          await Deno.writeFile(`${dir}/h-00002-of-00002.apr`, shard([m[0]!], 1, 2, 2048));
        },
        "h-00001-of-00002.apr",
        /tensor "a" is in shards 1 and 2/,
      ],
      [
        "tensor bytes do not add up to total_size",
        async () => {
          await Deno.writeFile(`${dir}/h-00001-of-00002.apr`, shard([m[0]!], 0, 2, 4096));
          await Deno.writeFile(`${dir}/h-00002-of-00002.apr`, shard([m[1]!], 1, 2, 4096));
        },
        "h-00002-of-00002.apr",
        /the shards hold 2048 bytes of tensors, metadata.sharding.total_size says 4096/,
      ],
      [
        "shard index out of place",
        async () => {
          await Deno.writeFile(`${dir}/h-00001-of-00002.apr`, shard([m[0]!], 1, 2, 2048));
          await Deno.writeFile(`${dir}/h-00002-of-00002.apr`, shard([m[1]!], 1, 2, 2048));
        },
        "h-00002-of-00002.apr",
        /shard_index is 1, expected 0/,
      ],
    ];
    for (const [name, breakIt, open, message] of cases) {
      await t.step(name, async () => {
        await reset();
        await breakIt();
        await assert.rejects(
          () => openShardedApr(files, open),
          (e: unknown) =>
            e instanceof ModelFormatError && e.format === "APR" && message.test(e.reason),
        );
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ShardedAprSink resumes each shard from its journal after an interruption", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const tensors = model();
    const failing = (failOn: string | undefined): ReadableStream<ModelChunk> => {
      const entries: TensorEntry[] = tensors.map((t) => ({
        info: { name: t.name, dtype: "F32", shape: t.shape, byteLength: t.data.length },
        open: () =>
          t.name === failOn
            ? new ReadableStream<Uint8Array>({
              start(c) {
                c.enqueue(t.data.slice(0, 10));
              },
              pull(c) {
                c.error(new Error("connection reset"));
              },
            })
            : ReadableStream.from([t.data.slice()]),
      }));
      return ReadableStream.from<ModelChunk>([
        {
          type: "header",
          header: { format: "t", metadata: METADATA, tensors: entries.map((e) => e.info) },
        },
        ...entries.map((tensor) => ({ type: "tensor" as const, tensor })),
      ]);
    };
    const options = { maxShardSize: 2048, resume: true, commitBytes: 0 };
    await assert.rejects(
      async () => failing("c").pipeTo(await ShardedAprSink.create(`${dir}/m.apr`, options)),
      /connection reset/,
    );
    const left = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    assert.ok(left.includes("m-00001-of-00003.apr.partial.journal"), left.join());
    assert.ok(!left.includes("m.apr.manifest.json"));
    const sink = await ShardedAprSink.create(`${dir}/m.apr`, options);
    await failing(undefined).pipeTo(sink);
    assert.equal(sink.result?.resumedTensors, 3, "a, b and big were already written");
    const fresh = await Deno.makeTempDir();
    try {
      await writeSet(fresh);
      for (const name of aprShardNames("m.apr", 3).files) {
        assert.deepEqual(
          await Deno.readFile(`${dir}/${name}`),
          await Deno.readFile(`${fresh}/${name}`),
        );
      }
    } finally {
      await Deno.remove(fresh, { recursive: true });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openShardedApr() refuses a set holding more tensors than one file may, in all", async () => {
  // Each shard is within the per-file limit; together they are not (each
  // tensor costs memory, ~30 bytes of index on disk but ~1 KB once read).
  const dir = await Deno.makeTempDir();
  try {
    const half = APR_MAX_TENSORS / 2 + 1;
    for (const index of [0, 1]) {
      const tensors = Array.from({ length: half }, (_, i) => ({
        name: `s${index}.t${i}`,
        shape: [0],
        data: new Uint8Array(0),
      }));
      await Deno.writeFile(`${dir}/h-0000${index + 1}-of-00002.apr`, shard(tensors, index, 2, 0));
    }
    await assert.rejects(
      openShardedApr(new LocalModelFiles(dir), "h-00001-of-00002.apr"),
      (e: Error) =>
        e instanceof ModelFormatError &&
        e.message.includes(`the set holds more than ${APR_MAX_TENSORS} tensors`),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
