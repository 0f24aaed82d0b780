import assert from "node:assert/strict";
import type { DType } from "../../../src/dtype.ts";
import { DTYPES, isAprStorable, tensorByteLength } from "../../../src/dtype.ts";
import { ModelFormatError } from "../../../src/errors.ts";
import { encodeApr } from "../../../src/formats/apr/encode_apr.ts";
import { aprHeaderCrc } from "../../../src/formats/apr/header.ts";
import { AprReader, openApr, validateApr } from "../../../src/formats/apr/reader.ts";
import { BlobSource } from "../../../src/io/blob_source.ts";
import { openFileSource } from "../../../src/io/file_source.ts";
import { bytesOf, f32, GOLDEN_METADATA, testdata } from "./_fixtures.ts";

const GOLDEN = Deno.readFileSync(testdata("apr/golden-v2.apr"));

function source(bytes: Uint8Array, name = "bad.apr"): BlobSource {
  return new BlobSource(new Blob([bytes as Uint8Array<ArrayBuffer>]), name);
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of stream) parts.push(c);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function ascii(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

/** Offset of the first occurrence of `text` in `bytes`. */
function find(bytes: Uint8Array, text: string): number {
  const needle = ascii(text);
  outer: for (let i = 0; i + needle.length <= bytes.length; i++) {
    for (let j = 0; j < needle.length; j++) if (bytes[i + j] !== needle[j]) continue outer;
    return i;
  }
  throw new Error(`"${text}" not found`);
}

/** Offset of the dtype byte of the index entry named `name`. */
function dtypeByteOf(file: Uint8Array, name: string): number {
  const indexOffset = Number(new DataView(file.buffer).getBigUint64(24, true));
  const at = indexOffset + find(file.subarray(indexOffset), name) + ascii(name).length;
  return at;
}

/** Copy of the golden file, mutated, with the header CRC recomputed. */
function patched(f: (b: Uint8Array, v: DataView) => void, fixCrc = true): Uint8Array {
  const b = GOLDEN.slice();
  const v = new DataView(b.buffer);
  f(b, v);
  if (fixCrc) v.setUint32(40, aprHeaderCrc(b), true);
  return b;
}

// Golden index layout: "bias" entry at 256 (dtype 262, ndim 263, offset 272, size 280),
// "weights" entry at 288 (dtype 297, ndim 298, offset 307, size 315).

Deno.test("AprReader.open() reads the golden vector", async () => {
  const reader = await openApr(await openFileSource(testdata("apr/golden-v2.apr")));
  try {
    assert.equal(reader.header.format, "apr");
    assert.deepEqual(reader.header.metadata, {
      ...GOLDEN_METADATA,
      license: null,
      data_source: null,
      data_license: null,
    });
    assert.deepEqual(reader.header.tensors, [
      { name: "bias", dtype: "F32", shape: [1], byteLength: 4 },
      { name: "weights", dtype: "F32", shape: [8], byteLength: 32 },
    ]);
    assert.equal(reader.aprHeader.dataOffset, 384);
    assert.equal(reader.aprHeader.headerCrc, 0x3bc08c02);
    const bias = reader.tensor("bias")!;
    assert.equal(bias.fileOffset, 384);
    assert.equal(bias.dtypeCode, 0);
    const weights = reader.tensors[1]!;
    assert.equal(weights.offset, 64);
    assert.equal(weights.fileOffset, 448);
    assert.deepEqual(await collect(weights.open()), f32([1, 2, 0.5, -0.5, 4, -2, 0.25, 8]));
    assert.deepEqual(await collect(weights.open()), f32([1, 2, 0.5, -0.5, 4, -2, 0.25, 8]));
    assert.deepEqual(await collect(bias.open()), f32([0.125]));
    assert.deepEqual(await reader.verifyFooter(), {
      stored: 0x550f3f35,
      computed: 0x550f3f35,
      ok: true,
    });
  } finally {
    await reader.close();
  }
});

Deno.test("AprReader tensor streams yield bounded chunks", async () => {
  const data = bytesOf(1000, 1);
  const file = encodeApr({ tensors: [{ name: "t", dtype: "U8", shape: [1000], data }] });
  const reader = await AprReader.open(source(file), { chunkSize: 64 });
  const sizes: number[] = [];
  const parts: Uint8Array[] = [];
  for await (const c of reader.tensors[0]!.open()) {
    sizes.push(c.length);
    parts.push(c);
  }
  assert.ok(sizes.every((s) => s <= 64));
  assert.deepEqual(new Uint8Array(parts.flatMap((p) => [...p])), data);
});

Deno.test("AprReader round-trips every APR-storable dtype", async (t) => {
  const dtypes = (Object.keys(DTYPES) as DType[]).filter(isAprStorable);
  assert.equal(dtypes.length, 12);
  for (const dtype of dtypes) {
    await t.step(dtype, async () => {
      const shape = dtype === "Q4_K" || dtype === "Q6_K" ? [2, 256] : [3, 33];
      const data = bytesOf(tensorByteLength(dtype, shape), 7);
      const file = encodeApr({ tensors: [{ name: `t.${dtype}`, dtype, shape, data }] });
      const reader = await openApr(source(file));
      assert.deepEqual(reader.header.tensors[0], {
        name: `t.${dtype}`,
        dtype,
        shape,
        byteLength: data.length,
      });
      assert.equal(reader.tensors[0]!.dtypeCode, DTYPES[dtype].aprCode);
      assert.deepEqual(await collect(reader.tensors[0]!.open()), data);
      assert.ok((await reader.verifyFooter()).ok);
    });
  }
});

Deno.test("AprReader reads legacy code 2 as BF16 only at 2 bytes per element", async () => {
  const file = encodeApr({
    tensors: [{ name: "b", dtype: "BF16", shape: [4], data: new Uint8Array(8) }],
  });
  const at = dtypeByteOf(file, "b");
  assert.equal(file[at], 30);
  file[at] = 2;
  const reader = await openApr(source(file));
  assert.equal(reader.header.tensors[0]!.dtype, "BF16");
  assert.equal(reader.tensors[0]!.dtypeCode, 2);
});

Deno.test("AprReader reads newest aprender's codes 128/129", async () => {
  const file = encodeApr({
    tensors: [{ name: "q", dtype: "APR_Q8", shape: [4], data: new Uint8Array(8) }],
  });
  const at = dtypeByteOf(file, "q");
  assert.equal(file[at], 9);
  file[at] = 129;
  const reader = await openApr(source(file));
  assert.equal(reader.header.tensors[0]!.dtype, "APR_Q8");
  assert.equal(reader.tensors[0]!.dtypeCode, 129);
});

Deno.test("AprReader.open() rejects aprender's older format by name", async (t) => {
  for (const name of ["tsp-att48-aco.apr", "tsp-berlin52-aco.apr", "tsp-eil51-aco.apr"]) {
    await t.step(name, async () => {
      const path = testdata(`apr/${name}`);
      await assert.rejects(() => AprReader.open(source(Deno.readFileSync(path), path)), (e) => {
        assert.ok(e instanceof ModelFormatError);
        assert.match(e.message, /tsp-\w+-aco\.apr": this is an APR v1 file/);
        assert.ok(e.message.includes("older aprender model format"));
        assert.equal(e.offset, 4);
        return true;
      });
    });
  }
});

const REJECTIONS: [string, Uint8Array, string][] = [
  ["too short", GOLDEN.subarray(0, 40), "file too short: 40 bytes"],
  ["wrong magic", patched((b) => (b[0] = 0x47)), "wrong magic: expected 41 50 52 00"],
  ["APR2 magic", patched((b) => (b[3] = 0x32)), "wrong magic"],
  ["version 1.0 bytes", patched((b) => b.set([1, 0, 0, 0], 4), false), "APR v1 file"],
  ["version 2.1", patched((b) => (b[5] = 1)), "unsupported version 2.1"],
  ["header CRC", patched((b) => (b[60] = 7), false), "header CRC mismatch"],
  ["column-major", patched((_, v) => v.setUint16(6, 0x0800, true)), "column-major"],
  [
    "metadata out of file",
    patched((_, v) => v.setUint32(20, 5000, true)),
    "metadata [64, 5064) extends past the end of the file (516 bytes)",
  ],
  [
    "metadata into index",
    patched((_, v) => v.setUint32(20, 200, true)),
    "metadata [64, 264) runs into the tensor index at 256",
  ],
  ["metadata not JSON", patched((b) => (b[64] = 0x78)), "metadata is not valid JSON"],
  [
    "metadata wrong type",
    patched((b) => b.set(ascii('"version":12345678901234'), find(b, '"version":"0.0.0-golden"'))),
    'metadata field "version" must be a string',
  ],
  ["truncated index", patched((_, v) => v.setUint32(8, 7, true)), "tensor index truncated"],
  [
    "index past data",
    patched((_, v) => v.setBigUint64(32, 192n, true)),
    "tensor_index_offset 256 is after data_offset 192",
  ],
  [
    "data offset past file",
    patched((_, v) => v.setBigUint64(32, 576n, true)),
    "data_offset 576 leaves no room for the 4-byte footer",
  ],
  ["unknown dtype", patched((b) => (b[262] = 99)), 'tensor "bias" has unknown dtype code 99'],
  [
    "unsorted index",
    patched((b) => b.set(new TextEncoder().encode("zzzz"), 258)),
    'tensor index not sorted by UTF-8 name bytes: "weights" comes after "zzzz"',
  ],
  [
    "duplicate name",
    patched((b) => {
      b.set(new TextEncoder().encode("weights"), 290);
      b.set(new TextEncoder().encode("bias\0\0\0"), 290);
      b[288] = 4;
    }),
    'duplicate tensor name "bias" in the index',
  ],
  [
    "name too long",
    patched((_, v) => v.setUint16(256, 300, true)),
    "tensor 0 name is 300 bytes, over the 256-byte limit",
  ],
  ["ndim over 8", patched((b) => (b[263] = 9)), 'tensor "bias" has 9 dimensions, over the limit'],
  [
    "size inconsistent",
    patched((_, v) => v.setBigUint64(280, 8n, true)),
    'tensor "bias" size 8 does not match F32 [1] (4 bytes)',
  ],
  [
    "misaligned offset",
    patched((_, v) => v.setBigUint64(307, 60n, true)),
    'tensor "weights" offset 60 is not a multiple of 64',
  ],
  [
    "past end of file",
    patched((_, v) => v.setBigUint64(307, 128n, true)),
    'tensor "weights" [512, 544) extends past the end of the data (512',
  ],
  [
    "overlapping",
    patched((_, v) => v.setBigUint64(307, 0n, true)),
    'tensors "bias" [0, 4) and "weights" [0, 32) overlap',
  ],
];

Deno.test("AprReader.open() rejects legacy code 2 at 4 bytes per element", async () => {
  const file = encodeApr({
    tensors: [{ name: "b", dtype: "F32", shape: [4], data: f32([1, 2, 3, 4]) }],
  });
  file[dtypeByteOf(file, "b")] = 2;
  await assert.rejects(
    () => openApr(source(file)),
    (e) => e instanceof ModelFormatError && e.message.includes("dtype code 2 (legacy BF16)"),
  );
});

Deno.test("AprReader.open() rejects each broken rule with its reason", async (t) => {
  for (const [label, bytes, message] of REJECTIONS) {
    await t.step(label, async () => {
      await assert.rejects(() => AprReader.open(source(bytes)), (e) => {
        assert.ok(e instanceof ModelFormatError, String(e));
        assert.match(e.message, /^Cannot read APR file "bad\.apr": /);
        assert.ok(e.message.includes(message), e.message);
        assert.equal(typeof e.offset, "number");
        return true;
      });
    });
  }
});

Deno.test("validateApr() lists the checks that passed, then the failing one", async () => {
  const good = await validateApr(source(GOLDEN, "golden.apr"));
  assert.deepEqual(good.map((c) => c.check), [
    "magic",
    "version 2.0",
    "file size",
    "header CRC",
    "flags",
    "header fields",
    "metadata region",
    "metadata JSON",
    "index region",
    "index entries",
    "index sorted",
    "tensor sizes",
    "tensor alignment",
    "tensor extents",
    "no overlapping tensors",
  ]);
  assert.ok(good.every((c) => c.ok));
  const bad = await validateApr(source(patched((b) => (b[60] = 1), false)));
  assert.deepEqual(bad.map((c) => [c.check, c.ok]), [
    ["magic", true],
    ["version 2.0", true],
    ["file size", true],
    ["header CRC", false],
  ]);
  assert.match(bad.at(-1)!.detail!, /^header CRC mismatch: stored 0x3bc08c02/);
  const overlap = await validateApr(source(REJECTIONS.at(-1)![1]));
  assert.deepEqual(overlap.at(-1), {
    check: "no overlapping tensors",
    ok: false,
    detail: 'tensors "bias" [0, 4) and "weights" [0, 32) overlap (offsets relative to data_offset)',
  });
});

Deno.test("validateApr() verifies the footer CRC only with deep", async () => {
  const corrupt = GOLDEN.slice();
  corrupt[450] = corrupt[450]! ^ 0xff; // a data byte of "weights"
  const shallow = await validateApr(source(corrupt));
  assert.ok(shallow.every((c) => c.ok));
  assert.ok(!shallow.some((c) => c.check === "footer CRC"));
  const deep = await validateApr(source(corrupt), { deep: true, chunkSize: 100 });
  assert.deepEqual(deep.at(-1), {
    check: "footer CRC",
    ok: false,
    detail: "footer CRC mismatch: stored 0x550f3f35, computed 0x" +
      (await (await openApr(source(corrupt))).verifyFooter()).computed.toString(16).padStart(
        8,
        "0",
      ),
  });
  const reader = await openApr(source(corrupt));
  await assert.rejects(
    () => reader.checkFooter(),
    (e) =>
      e instanceof ModelFormatError && e.message.includes("footer CRC mismatch") &&
      e.offset === 512,
  );
  const good = await validateApr(source(GOLDEN), { deep: true });
  assert.deepEqual(good.at(-1), { check: "footer CRC", ok: true, detail: "0x550f3f35" });
});

Deno.test("AprReader.open() reads only the header, metadata and index", async () => {
  const big = bytesOf(1 << 20, 5);
  const file = encodeApr({
    metadata: { model_type: "m" },
    tensors: [{ name: "big", dtype: "U8", shape: [big.length], data: big }],
  });
  const inner = source(file, "big.apr");
  let bytesRead = 0;
  const counting = {
    name: inner.name,
    size: inner.size,
    read: (offset: number, length: number) => {
      bytesRead += length;
      return inner.read(offset, length);
    },
    stream: (start: number, end: number, chunk?: number) => inner.stream(start, end, chunk),
    close: () => inner.close(),
  };
  const reader = await openApr(counting);
  assert.ok(bytesRead <= reader.aprHeader.dataOffset, `read ${bytesRead} bytes`);
  assert.equal(reader.tensors[0]!.size, big.length);
});

Deno.test("validateApr() reports an APR v1 file at the version check", async () => {
  const path = testdata("apr/tsp-eil51-aco.apr");
  const checks = await validateApr(source(Deno.readFileSync(path), path));
  assert.deepEqual(checks.map((c) => [c.check, c.ok]), [["magic", true], ["version 2.0", false]]);
  assert.match(checks[1]!.detail!, /APR v1 file/);
});
