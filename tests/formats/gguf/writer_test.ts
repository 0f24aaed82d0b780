import assert from "node:assert/strict";
import { parseGgufHeader } from "../../../src/formats/gguf/header.ts";
import {
  encodeGguf,
  encodeGgufHeader,
  type GgufKvInput,
} from "../../../src/formats/gguf/writer.ts";
import { openGguf } from "../../../src/formats/gguf/reader.ts";
import { openFileSource } from "../../../src/io/file_source.ts";
import { sourceOf } from "./_raw_gguf.ts";

const DATA = new URL("../../testdata/gguf/", import.meta.url);

const ALL_TYPES: [string, GgufKvInput][] = [
  ["general.architecture", { type: 8, value: "llama" }],
  ["v.u8", { type: 0, value: 255 }],
  ["v.i8", { type: 1, value: -128 }],
  ["v.u16", { type: 2, value: 65535 }],
  ["v.i16", { type: 3, value: -32768 }],
  ["v.u32", { type: 4, value: 0xffffffff }],
  ["v.i32", { type: 5, value: -0x80000000 }],
  ["v.f32", { type: 6, value: Math.fround(0.1) }],
  ["v.bool", { type: 7, value: true }],
  ["v.str", { type: 8, value: "\uFEFFhé 日本 🦙" }],
  ["v.u64", { type: 10, value: 2n ** 64n - 1n }],
  ["v.u64small", { type: 10, value: 42 }],
  ["v.i64", { type: 11, value: -(2n ** 63n) }],
  ["v.f64", { type: 12, value: 0.1 }],
  ["v.arr.str", { type: 9, value: ["a", "", "ü"], arrayTypes: [8] }],
  ["v.arr.f32", { type: 9, value: [1.5, -2], arrayTypes: [6] }],
  ["v.arr.empty", { type: 9, value: [], arrayTypes: [4] }],
  ["v.arr.nested", { type: 9, value: [[1, 2], [3]], arrayTypes: [9, 5] }],
  // Number arrays of each 8- to 32-bit type at its range's ends (writeNumbers).
  ["v.arr.u8", { type: 9, value: [0, 255, 7], arrayTypes: [0] }],
  ["v.arr.i8", { type: 9, value: [-128, 127, -1], arrayTypes: [1] }],
  ["v.arr.u16", { type: 9, value: [0, 65535], arrayTypes: [2] }],
  ["v.arr.i16", { type: 9, value: [-32768, 32767, -2], arrayTypes: [3] }],
  ["v.arr.u32", { type: 9, value: [0, 0xffffffff], arrayTypes: [4] }],
  ["v.arr.i32", { type: 9, value: [-0x80000000, 0x7fffffff, -3], arrayTypes: [5] }],
  ["v.arr.i64", { type: 9, value: [-5, 2 ** 40], arrayTypes: [11] }],
];

Deno.test("encodeGguf() output reads back with identical metadata and tensor bytes", async () => {
  const q8 = new Uint8Array(2 * 34).map((_, i) => i);
  const f16 = new Uint8Array(2 * 3 * 2).map((_, i) => 255 - i);
  const bytes = encodeGguf({
    kv: ALL_TYPES,
    tensors: [
      { name: "a", dtype: "Q8_0", ne: [32, 2], data: q8 },
      { name: "b", dtype: "F16", ne: [3, 2], data: f16 },
      { name: "c", dtype: "F32", ne: [0], data: new Uint8Array(0) },
    ],
  });
  const model = await openGguf(sourceOf(bytes, "mem.gguf"), { keepNames: true });
  const kv = model.gguf.kv;
  assert.deepEqual([...kv.keys()], ALL_TYPES.map(([k]) => k));
  for (const [key, input] of ALL_TYPES) {
    const got = kv.get(key)!;
    assert.equal(got.type, input.type, key);
    assert.deepEqual(got.value, input.value, key);
    assert.deepEqual(got.arrayTypes, input.arrayTypes, key);
  }
  assert.equal(model.gguf.version, 3);
  assert.deepEqual(model.gguf.tensors.map((t) => [t.name, t.dtype, t.ne, t.offset % 32]), [
    ["a", "Q8_0", [32, 2], 0],
    ["b", "F16", [3, 2], 0],
    ["c", "F32", [0], 0],
  ]);
  const read = async (i: number) =>
    new Uint8Array(await new Response(model.tensors[i]!.open()).arrayBuffer());
  assert.deepEqual(await read(0), q8);
  assert.deepEqual(await read(1), f16);
  assert.equal((await read(2)).length, 0);
});

Deno.test("encodeGguf() writes general.alignment when it is not 32", async () => {
  const bytes = encodeGguf({
    kv: [],
    tensors: [
      { name: "a", dtype: "F32", ne: [3], data: new Uint8Array(12) },
      { name: "b", dtype: "F32", ne: [1], data: new Uint8Array(4) },
    ],
  }, { alignment: 64 });
  const h = await parseGgufHeader(sourceOf(bytes));
  assert.equal(h.alignment, 64);
  assert.equal(h.dataOffset % 64, 0);
  assert.equal(h.tensors[1]?.offset, 64);
});

Deno.test("encodeGgufHeader() rejects what GGUF cannot hold", async (t) => {
  const rows: [string, () => unknown, ErrorConstructor, RegExp][] = [
    [
      "APR_Q8 dtype",
      () => encodeGgufHeader([], [{ name: "w", dtype: "APR_Q8", ne: [4] }]),
      TypeError,
      /tensor "w" has dtype APR_Q8, which ggml cannot hold; convert it first/,
    ],
    [
      "APR_Q4 dtype",
      () => encodeGgufHeader([], [{ name: "w", dtype: "APR_Q4", ne: [32] }]),
      TypeError,
      /APR_Q4, which ggml cannot hold/,
    ],
    [
      "U8 dtype",
      () => encodeGgufHeader([], [{ name: "w", dtype: "U8", ne: [4] }]),
      TypeError,
      /U8, which ggml cannot hold/,
    ],
    [
      "ne[0] not whole blocks",
      () => encodeGgufHeader([], [{ name: "w", dtype: "Q4_K", ne: [100] }]),
      RangeError,
      /ne\[0\] = 100, not a multiple of Q4_K's 256-element block/,
    ],
    [
      "5 dimensions",
      () => encodeGgufHeader([], [{ name: "w", dtype: "F32", ne: [1, 1, 1, 1, 1] }]),
      RangeError,
      /5 dimensions/,
    ],
    [
      "long name",
      () => encodeGgufHeader([], [{ name: "x".repeat(64), dtype: "F32", ne: [1] }]),
      RangeError,
      /must be 1–63 bytes/,
    ],
    [
      "duplicate tensor",
      () =>
        encodeGgufHeader([], [{ name: "w", dtype: "F32", ne: [1] }, {
          name: "w",
          dtype: "F32",
          ne: [1],
        }]),
      TypeError,
      /duplicate tensor "w"/,
    ],
    [
      "empty key",
      () => encodeGgufHeader([["", { type: 4, value: 1 }]], []),
      TypeError,
      /metadata key is empty/,
    ],
    [
      "duplicate key",
      () => encodeGgufHeader([["k", { type: 4, value: 1 }], ["k", { type: 4, value: 2 }]], []),
      TypeError,
      /duplicate metadata key "k"/,
    ],
    [
      "u8 out of range",
      () => encodeGgufHeader([["k", { type: 0, value: 256 }]], []),
      TypeError,
      /value of "k" does not fit type UINT8/,
    ],
    [
      "float in an int",
      () => encodeGgufHeader([["k", { type: 4, value: 1.5 }]], []),
      TypeError,
      /does not fit type UINT32/,
    ],
    [
      "an array element out of range",
      () => encodeGgufHeader([["k", { type: 9, value: [1, -0x80000001, 2], arrayTypes: [5] }]], []),
      TypeError,
      /value of "k" does not fit type INT32/,
    ],
    [
      "a float in an integer array",
      () => encodeGgufHeader([["k", { type: 9, value: [0, 0.5], arrayTypes: [1] }]], []),
      TypeError,
      /value of "k" does not fit type INT8/,
    ],
    [
      "array without element type",
      () => encodeGgufHeader([["k", { type: 9, value: [1] }]], []),
      TypeError,
      /array "k" needs its element type/,
    ],
    [
      "alignment 48",
      () => encodeGgufHeader([], [], { alignment: 48 }),
      RangeError,
      /alignment 48 is not a power of two/,
    ],
    [
      "wrong payload size",
      () =>
        encodeGguf({
          kv: [],
          tensors: [{ name: "w", dtype: "F32", ne: [2], data: new Uint8Array(4) }],
        }),
      RangeError,
      /tensor "w" has 4 bytes of data, expected 8/,
    ],
  ];
  for (const [name, fn, cls, pattern] of rows) {
    await t.step(name, () => {
      assert.throws(fn, (e: unknown) => {
        assert.ok(e instanceof cls, `${e}`);
        assert.match((e as Error).message, /^Cannot encode GGUF: /);
        assert.match((e as Error).message, pattern);
        return true;
      });
    });
  }
});

Deno.test("encodeGguf() output of a real file's header and tensors is byte-identical to gguf-py's", async () => {
  // tiny-llama-f32.gguf: gguf-py writes the KV pairs and tensors in order, alignment 32.
  const path = new URL("tiny-llama-f32.gguf", DATA).pathname;
  const original = await Deno.readFile(path);
  const model = await openGguf(await openFileSource(path), { keepNames: true });
  try {
    const tensors = [];
    for (const [i, t] of model.gguf.tensors.entries()) {
      tensors.push({
        name: t.name,
        dtype: t.dtype,
        ne: t.ne,
        data: new Uint8Array(await new Response(model.tensors[i]!.open()).arrayBuffer()),
      });
    }
    const bytes = encodeGguf({ kv: model.gguf.kv, tensors });
    assert.equal(bytes.length, original.length);
    assert.ok(bytes.every((b, i) => b === original[i]), "bytes differ");
  } finally {
    await model.close();
  }
});

Deno.test("encodeGgufHeader refuses headers the GGUF reader would refuse (issue 9)", async (t) => {
  const tensor = [{ name: "a", dtype: "F32" as const, ne: [4] }];
  await t.step("more than 128 MiB of text", () => {
    const big = "x".repeat(64 * 1024 * 1024 + 1);
    assert.throws(
      () =>
        encodeGgufHeader(
          [["a.text", { type: 8, value: big }], ["b.text", { type: 8, value: big }]],
          tensor,
        ),
      (e: Error) => e.name === "UsageError" && /134217743 bytes of text.*134217728/.test(e.message),
    );
  });
  await t.step("more than 65536 pairs", () => {
    const kv: [string, GgufKvInput][] = [];
    for (let i = 0; i <= 65536; i++) kv.push([`k.${i}`, { type: 4, value: i }]);
    assert.throws(() => encodeGgufHeader(kv, tensor), /65537 metadata pairs.*65536/);
  });
  await t.step("an array longer than 2^24 elements", () => {
    const tokens = new Array<number>(2 ** 24 + 1).fill(0);
    assert.throws(
      () => encodeGgufHeader([["t", { type: 9, value: tokens, arrayTypes: [0] }]], tensor),
      /"t" has 16777217 elements/,
    );
  });
  await t.step("arrays holding more than 2^24 elements together", () => {
    const half = new Array<number>(2 ** 23 + 1).fill(0);
    assert.throws(
      () =>
        encodeGgufHeader([
          ["t1", { type: 9, value: half, arrayTypes: [0] }],
          ["t2", { type: 9, value: half, arrayTypes: [0] }],
        ], tensor),
      /arrays hold 16777218 elements/,
    );
  });
  await t.step("what is written at the limits reads back", async () => {
    const layout = encodeGgufHeader([["t", {
      type: 9,
      value: new Array<number>(2 ** 24).fill(0),
      arrayTypes: [0],
    }]], tensor);
    const bytes = new Uint8Array(layout.fileSize);
    bytes.set(layout.header);
    const header = await parseGgufHeader(sourceOf(bytes, "limit.gguf"));
    assert.equal(header.tensors.length, 1);
  });
});
