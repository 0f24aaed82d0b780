import assert from "node:assert/strict";
import { MAX_INDEX_BYTES, openSafetensorsModel } from "../../../src/formats/safetensors/sharded.ts";
import { encodeSafetensors } from "../../../src/formats/safetensors/encode.ts";
import { ModelFormatError } from "../../../src/errors.ts";
import type { ByteSource } from "../../../src/io/byte_source.ts";
import { MemoryModelFiles } from "../../sources/_memory_files.ts";
import { collect, rejection } from "./_builder.ts";

/** A U8 tensor whose bytes are `fill` repeated. */
function u8(name: string, length: number, fill: number) {
  return { name, dtype: "U8" as const, shape: [length], data: new Uint8Array(length).fill(fill) };
}

const SHARD1 = encodeSafetensors({
  metadata: { format: "pt" },
  tensors: [u8("a", 3, 1), u8("b", 2, 2)],
});
const SHARD2 = encodeSafetensors({
  metadata: { format: "pt", extra: "x" },
  tensors: [u8("c", 4, 3)],
});
const S1 = "model-00001-of-00002.safetensors";
const S2 = "model-00002-of-00002.safetensors";

function index(weightMap: Record<string, unknown>, totalSize: number | undefined = 9): string {
  return JSON.stringify({
    metadata: totalSize === undefined ? {} : { total_size: totalSize },
    weight_map: weightMap,
  });
}

const GOOD_MAP = { c: S2, a: S1, b: S1 };

function repo(extra: Record<string, Uint8Array | string> = {}): MemoryModelFiles {
  return new MemoryModelFiles({
    "model.safetensors.index.json": index(GOOD_MAP),
    [S1]: SHARD1,
    [S2]: SHARD2,
    ...extra,
  });
}

Deno.test("openSafetensorsModel() reads a sharded model as one reader, shard by shard", async () => {
  const files = repo({
    "config.json": JSON.stringify({ architectures: ["LlamaForCausalLM"], num_hidden_layers: 2 }),
    // I11: a stray shard next to the others is never read.
    "model-00003-of-00003.safetensors": "garbage",
    "consolidated.safetensors": "garbage",
  });
  const warnings: string[] = [];
  const model = await openSafetensorsModel(files, { onWarning: (m) => warnings.push(m) });
  try {
    assert.deepStrictEqual(model.shards, [S1, S2]);
    assert.equal(model.header.format, "safetensors");
    assert.deepStrictEqual(model.header.tensors.map((t) => [t.name, t.byteLength]), [
      ["a", 3],
      ["b", 2],
      ["c", 4],
    ]);
    assert.deepStrictEqual(model.header.metadata, {
      original_format: "safetensors",
      architecture: "llama",
      hf_architecture: "LlamaForCausalLM",
      num_layers: 2,
      rope_type: 2,
      hf_config: { architectures: ["LlamaForCausalLM"], num_hidden_layers: 2 },
      source_metadata: { format: "pt", extra: "x" },
    });
    for (const [i, fill] of [1, 2, 3].entries()) {
      const bytes = await collect(model.tensors[i]!.open());
      assert.deepStrictEqual(bytes, new Uint8Array(model.tensors[i]!.info.byteLength).fill(fill));
    }
    assert.deepStrictEqual(warnings, []);
    assert.equal(files.opened.includes("model-00003-of-00003.safetensors"), false);
    assert.equal(files.opened.includes("consolidated.safetensors"), false);
  } finally {
    await model.close();
  }
  assert.equal(files.openCount, 0);
  assert.throws(() => model.tensors[0]!.open(), TypeError);
});

Deno.test("openSafetensorsModel() accepts an index path in a subfolder, with its shards beside it", async () => {
  const files = new MemoryModelFiles({
    "transformer/diffusion.safetensors.index.json": index(GOOD_MAP),
    [`transformer/${S1}`]: SHARD1,
    [`transformer/${S2}`]: SHARD2,
    "transformer/config.json": JSON.stringify({ model_type: "Flux" }),
  });
  const model = await openSafetensorsModel(files, {
    indexPath: "transformer/diffusion.safetensors.index.json",
  });
  assert.deepStrictEqual(model.shards, [`transformer/${S1}`, `transformer/${S2}`]);
  assert.equal(model.header.metadata.architecture, "flux");
  assert.deepStrictEqual(await collect(model.tensors[2]!.open()), new Uint8Array(4).fill(3));
  await model.close();
});

Deno.test("openSafetensorsModel() falls back to model.safetensors, else says what is missing", async () => {
  const files = new MemoryModelFiles({
    "model.safetensors": SHARD1,
    "tokenizer_config.json": JSON.stringify({ eos_token: "</s>" }),
  });
  const model = await openSafetensorsModel(files);
  assert.deepStrictEqual(model.shards, ["model.safetensors"]);
  assert.deepStrictEqual(model.header.metadata, {
    original_format: "safetensors",
    special_tokens: { eos_token: "</s>" },
    source_metadata: { format: "pt" },
  });
  assert.deepStrictEqual(await collect(model.tensors[1]!.open()), new Uint8Array(2).fill(2));
  await model.close();
  assert.equal(files.openCount, 0);

  await rejection(
    () => openSafetensorsModel(new MemoryModelFiles({ "other.safetensors": SHARD1 })),
    ModelFormatError,
    'Cannot read model file "mem": no "model.safetensors.index.json" or "model.safetensors" found',
  );
  await rejection(
    () => openSafetensorsModel(repo(), { indexPath: "nope.json" }),
    ModelFormatError,
    'no file "nope.json" in the model',
  );
});

/** An index file that claims to be huge, to check I5 happens before reading. */
class HugeIndexFiles extends MemoryModelFiles {
  reads = 0;
  override async open(path: string): Promise<ByteSource> {
    const source = await super.open(path);
    if (path !== "model.safetensors.index.json") return source;
    return {
      ...source,
      size: MAX_INDEX_BYTES + 1,
      read: () => {
        this.reads++;
        return Promise.reject(new Error("must not read"));
      },
      close: () => source.close(),
    };
  }
}

Deno.test("openSafetensorsModel() rejects every bad index of FORMATS.md I1–I10", async (t) => {
  const rows: [string, Record<string, Uint8Array | string>, RegExp][] = [
    ["I1 not JSON", { "model.safetensors.index.json": "{nope" }, /invalid index: not JSON/],
    [
      "I1 not an object",
      { "model.safetensors.index.json": "[]" },
      /invalid index: the JSON is not an object/,
    ],
    [
      "I2 weight_map missing",
      { "model.safetensors.index.json": '{"metadata":{}}' },
      /invalid index: "weight_map" is missing/,
    ],
    [
      "I2 weight_map not an object",
      { "model.safetensors.index.json": '{"weight_map":["a"]}' },
      /invalid index: "weight_map" is not an object/,
    ],
    [
      "I3 a weight_map value not a string",
      { "model.safetensors.index.json": '{"weight_map":{"a":1}}' },
      /invalid index: "weight_map" value of tensor "a" is not a string/,
    ],
    [
      "I4 shard name with ..",
      { "model.safetensors.index.json": index({ a: "../secret.safetensors" }) },
      /unsafe shard name "\.\.\/secret\.safetensors": it contains "\.\."/,
    ],
    [
      "I4 shard name starting with /",
      { "model.safetensors.index.json": index({ a: "/etc/passwd" }) },
      /unsafe shard name "\/etc\/passwd": it starts with "\/"/,
    ],
    [
      "I4 shard name with a backslash",
      { "model.safetensors.index.json": index({ a: "sub\\x.safetensors" }) },
      /unsafe shard name "sub\\\\x\.safetensors": it contains "\\"/,
    ],
    [
      "I4 shard name with ://",
      { "model.safetensors.index.json": index({ a: "https://evil/x.safetensors" }) },
      /unsafe shard name "https:\/\/evil\/x\.safetensors": it contains ":\/\/"/,
    ],
    [
      "I5 more than 10,000 shards",
      {
        "model.safetensors.index.json": index(
          Object.fromEntries(
            Array.from({ length: 10_001 }, (_, i) => [`t${i}`, `s${i}.safetensors`]),
          ),
        ),
      },
      /too large: 10001 shards exceeds the 10000-shard limit/,
    ],
    [
      "I6 the index names a tensor no shard contains",
      { "model.safetensors.index.json": index({ ...GOOD_MAP, z: S2 }), [S1]: SHARD1, [S2]: SHARD2 },
      /missing tensor "z": the index maps it to shard "model-00002-of-00002\.safetensors", which does not contain it/,
    ],
    [
      "I7 a shard holds a tensor the index does not list",
      { "model.safetensors.index.json": index({ a: S1, c: S2 }), [S1]: SHARD1, [S2]: SHARD2 },
      /unexpected tensor "b" in shard "model-00001-of-00002\.safetensors": the index does not list it/,
    ],
    [
      "I8 a shard file the index names is absent",
      { "model.safetensors.index.json": index(GOOD_MAP), [S1]: SHARD1 },
      /missing shard "model-00002-of-00002\.safetensors": the index names it but the file does not exist/,
    ],
    [
      "I9 a tensor mapped to shard A but found only in shard B",
      {
        "model.safetensors.index.json": index({ a: S1, b: S1, c: S1, d: S2 }),
        [S1]: SHARD1,
        [S2]: encodeSafetensors({ tensors: [u8("c", 4, 3), u8("d", 1, 0)] }),
      },
      /mismatch: tensor "c" is mapped to shard "model-00001-of-00002\.safetensors" but found only in "model-00002-of-00002\.safetensors"/,
    ],
    [
      "I10 the same tensor name in two shards",
      {
        "model.safetensors.index.json": index(GOOD_MAP),
        [S1]: SHARD1,
        [S2]: encodeSafetensors({ tensors: [u8("c", 4, 3), u8("a", 1, 0)] }),
      },
      /duplicate tensor "a": it is in both "model-00001-of-00002\.safetensors" and "model-00002-of-00002\.safetensors"/,
    ],
  ];
  for (const [row, content, message] of rows) {
    await t.step(row, async () => {
      const files = new MemoryModelFiles(content);
      const error = await rejection(() => openSafetensorsModel(files), ModelFormatError, message);
      assert.equal(error.format, "SafeTensors index");
      assert.match(
        error.message,
        /^Cannot read SafeTensors index file "mem\/model\.safetensors\.index\.json": /,
      );
      assert.equal(files.openCount, 0);
    });
  }
  await t.step("I5 index file over 250 MB, before reading it", async () => {
    const files = new HugeIndexFiles({ "model.safetensors.index.json": "{}" });
    await rejection(
      () => openSafetensorsModel(files),
      ModelFormatError,
      /index\.json": too large: 250000001 bytes exceeds the 250000000-byte limit/,
    );
    assert.equal(files.reads, 0);
    assert.equal(files.openCount, 0);
  });
  await t.step("a bad shard is reported as a SafeTensors file, naming the shard", async () => {
    const files = repo({ [S2]: "short" });
    await rejection(
      () => openSafetensorsModel(files),
      ModelFormatError,
      /^Cannot read SafeTensors file "mem\/model-00002-of-00002\.safetensors": header too small/,
    );
    assert.equal(files.openCount, 0);
  });
});

Deno.test("openSafetensorsModel() warns when total_size is wrong (I12) and goes on", async () => {
  const warnings: string[] = [];
  const files = repo({ "model.safetensors.index.json": index(GOOD_MAP, 1234) });
  const model = await openSafetensorsModel(files, { onWarning: (m) => warnings.push(m) });
  assert.deepStrictEqual(warnings, [
    '"mem/model.safetensors.index.json": metadata.total_size is 1234 but the tensors hold 9 bytes',
  ]);
  assert.equal(model.tensors.length, 3);
  await model.close();
  // No total_size at all: nothing to warn about.
  const quiet: string[] = [];
  const other = await openSafetensorsModel(
    repo({ "model.safetensors.index.json": index(GOOD_MAP, undefined) }),
    { onWarning: (m) => quiet.push(m) },
  );
  assert.deepStrictEqual(quiet, []);
  await other.close();
});

Deno.test("openSafetensorsModel() keeps a bounded number of shards open", async () => {
  const content: Record<string, Uint8Array | string> = {};
  const map: Record<string, string> = {};
  for (let i = 0; i < 40; i++) {
    const name = `model-${String(i + 1).padStart(5, "0")}-of-00040.safetensors`;
    content[name] = encodeSafetensors({ tensors: [u8(`t${i}`, 2, i)] });
    map[`t${i}`] = name;
  }
  content["model.safetensors.index.json"] = index(map, 80);
  const files = new MemoryModelFiles(content);
  const model = await openSafetensorsModel(files, { companions: false });
  assert.equal(files.openCount, 0);
  let most = 0;
  for (const [i, entry] of model.tensors.entries()) {
    assert.deepStrictEqual(await collect(entry.open()), new Uint8Array(2).fill(i));
    most = Math.max(most, files.openCount);
  }
  assert.ok(most <= 17, `at most 16 idle shards plus one in use, saw ${most}`);
  // A cancelled stream releases its shard too.
  const stream = model.tensors[0]!.open();
  const reader = stream.getReader();
  await reader.read();
  await reader.cancel();
  await model.close();
  await model.close();
  assert.equal(files.openCount, 0);
});
