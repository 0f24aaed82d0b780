import assert from "node:assert/strict";
// An independent LZ4 implementation, to judge our blocks (tests only: the
// library itself has no npm dependency).
import lz4js from "npm:lz4js@0.2.0";
import { ModelFormatError, UsageError } from "../../../src/errors.ts";
import {
  Lz4BlockError,
  lz4CompressBlock,
  lz4DecompressBlock,
} from "../../../src/formats/apr/_lz4.ts";
import { encodeApr } from "../../../src/formats/apr/encode_apr.ts";
import { APR_FLAGS, parseAprHeader } from "../../../src/formats/apr/header.ts";
import { encodeAprLz4 } from "../../../src/formats/apr/lz4_image.ts";
import { AprLz4Sink } from "../../../src/formats/apr/lz4_sink.ts";
import { openApr, validateApr } from "../../../src/formats/apr/reader.ts";
import { BlobSource } from "../../../src/io/blob_source.ts";
import type { ModelChunk } from "../../../src/tensor.ts";
import { bytesOf, f32, GOLDEN_METADATA, GOLDEN_TENSORS } from "./_fixtures.ts";

function decode(block: number[] | Uint8Array, size: number): Uint8Array {
  const out = new Uint8Array(size);
  lz4DecompressBlock(new Uint8Array(block), out);
  return out;
}

Deno.test("lz4DecompressBlock() decodes a hand-made block with an overlapping match", () => {
  // "abc", then a match at offset 3 of length 9, then the literals "xyzzy".
  const block = [0x35, 0x61, 0x62, 0x63, 0x03, 0x00, 0x50, 0x78, 0x79, 0x7a, 0x7a, 0x79];
  assert.equal(new TextDecoder().decode(decode(block, 17)), "abcabcabcabcxyzzy");
});

Deno.test("lz4CompressBlock() round trips through lz4DecompressBlock()", async (t) => {
  const inputs: [string, Uint8Array][] = [
    ["empty", new Uint8Array(0)],
    ["one byte", new Uint8Array([7])],
    ["14 bytes, no match", bytesOf(14, 1)],
    ["300 random bytes (incompressible)", bytesOf(300, 2)],
    ["repetitive 100 KB", new Uint8Array(100_000).map((_, i) => i % 13)],
    ["zeros with a random tail", new Uint8Array([...new Uint8Array(70_000), ...bytesOf(5000, 3)])],
    [
      "long literal runs and long matches",
      new Uint8Array([...bytesOf(700, 4), ...new Uint8Array(2000), ...bytesOf(700, 4)]),
    ],
  ];
  for (const [name, input] of inputs) {
    await t.step(name, () => {
      const block = lz4CompressBlock(input);
      assert.deepEqual(decode(block, input.length), input);
    });
  }
  await t.step("repetitive data shrinks", () => {
    assert.ok(lz4CompressBlock(new Uint8Array(100_000)).length < 1000);
  });
});

Deno.test("lz4CompressBlock() output is decoded by an independent LZ4 (lz4js) and keeps LZ4's end rules", async (t) => {
  const independent = lz4js as unknown as {
    decompressBlock(
      src: Uint8Array,
      dst: Uint8Array,
      sIndex: number,
      sLength: number,
      dIndex: number,
    ): number;
  };
  const text = new TextEncoder().encode(
    "the quick brown fox jumps over the lazy dog. ".repeat(400),
  );
  const floats = new Uint8Array(
    new Float32Array(50_000).map((_, i) => Math.round(Math.sin(i) * 8)).buffer,
  );
  const inputs: [string, Uint8Array][] = [
    ["13 bytes", bytesOf(13, 5)],
    ["text", text],
    ["small-integer floats", floats],
    ["random then repeated", new Uint8Array([...bytesOf(90_000, 6), ...bytesOf(90_000, 6)])],
    ["zeros", new Uint8Array(300_000)],
  ];
  for (const [name, input] of inputs) {
    await t.step(name, () => {
      const block = lz4CompressBlock(input);
      const out = new Uint8Array(input.length);
      const end = independent.decompressBlock(block, out, 0, block.length, 0);
      assert.equal(end, input.length);
      assert.deepEqual(out, input);
      // Deterministic.
      assert.deepEqual(lz4CompressBlock(input), block);
    });
  }
  await t.step("compresses like LZ4", () => {
    assert.ok(lz4CompressBlock(text).length < text.length / 20);
    assert.ok(lz4CompressBlock(floats).length < floats.length / 2);
  });
});

Deno.test("lz4DecompressBlock() rejects corrupt blocks", async (t) => {
  const cases: [string, number[], number, RegExp][] = [
    ["empty block", [], 4, /empty block/],
    ["literal run past the end", [0x50, 0x61, 0x62], 5, /run of 5 literals runs past the end/],
    ["truncated length byte", [0xf0], 20, /truncated inside a length/],
    ["truncated offset", [0x11, 0x61, 0x01], 8, /truncated inside a match offset/],
    ["offset 0", [0x10, 0x61, 0x00, 0x00, 0x00], 5, /match offset 0 points before the start/],
    ["offset before the start", [0x10, 0x61, 0x05, 0x00, 0x00], 5, /match offset 5 points before/],
    [
      "more output than declared",
      [0x35, 0x61, 0x62, 0x63, 0x03, 0x00, 0x00],
      8,
      /more than the declared 8 bytes/,
    ],
    [
      "less output than declared",
      [0x30, 0x61, 0x62, 0x63],
      5,
      /decodes to 3 bytes, 5 were declared/,
    ],
    ["missing final token", [0x14, 0x61, 0x01, 0x00], 100, /a sequence token is missing/],
  ];
  for (const [name, block, size, message] of cases) {
    await t.step(name, () => {
      assert.throws(
        () => decode(block, size),
        (e: unknown) => e instanceof Lz4BlockError && message.test(e.message),
      );
    });
  }
});

const TENSORS = [
  ...GOLDEN_TENSORS,
  { name: "zeros", dtype: "F32" as const, shape: [64, 64], data: new Uint8Array(64 * 64 * 4) },
  { name: "ramp", dtype: "F32" as const, shape: [1000], data: f32([...Array(1000).keys()]) },
];

function chunks(): ReadableStream<ModelChunk> {
  const entries = TENSORS.map((t) => ({
    info: { name: t.name, dtype: t.dtype, shape: t.shape, byteLength: t.data.length },
    open: () => ReadableStream.from([t.data.slice(0, 7), t.data.slice(7)]),
  }));
  return ReadableStream.from<ModelChunk>([
    {
      type: "header",
      header: { format: "t", metadata: GOLDEN_METADATA, tensors: entries.map((e) => e.info) },
    },
    ...entries.map((tensor) => ({ type: "tensor" as const, tensor })),
  ]);
}

/** The uncompressed image the LZ4 file must decompress to. */
function image(): Uint8Array {
  return encodeApr(
    { metadata: GOLDEN_METADATA, tensors: TENSORS },
    { flags: APR_FLAGS.LAYOUT_ROW_MAJOR | APR_FLAGS.LZ4 },
  );
}

Deno.test("AprLz4Sink writes realizar's LZ4 layout; openApr() reads it back", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/m.apr`;
    await chunks().pipeTo(await AprLz4Sink.create(path));
    const file = await Deno.readFile(path);
    const expected = image();
    // Header as is, u32 length of the rest, then one block decoding to the rest.
    assert.deepEqual(file.subarray(0, 64), expected.subarray(0, 64));
    assert.equal(parseAprHeader(file, path, { lz4: true }).flags, 0x0401);
    const length = new DataView(file.buffer).getUint32(64, true);
    assert.equal(length, expected.length - 64);
    assert.deepEqual(decode(file.subarray(68), length), expected.subarray(64));
    assert.ok(file.length < expected.length, "zeros and ramps compress");

    const reader = await openApr(new BlobSource(new Blob([file]), path));
    try {
      assert.equal(reader.fileSize, expected.length);
      assert.ok((await reader.verifyFooter()).ok);
      for (const t of TENSORS) {
        const e = reader.tensor(t.name)!;
        assert.deepEqual(new Uint8Array(await new Response(e.open()).arrayBuffer()), t.data);
      }
    } finally {
      await reader.close();
    }
    const checks = await validateApr(new BlobSource(new Blob([file]), path), { deep: true });
    assert.ok(checks.every((c) => c.ok));
    assert.ok(checks.some((c) => c.check === "LZ4 decompression"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openApr() rejects corrupt LZ4 files with ModelFormatError", async (t) => {
  const good = encodeAprLz4(image());
  const edit = (change: (b: Uint8Array, v: DataView) => void): Uint8Array<ArrayBuffer> => {
    const b = good.slice();
    change(b, new DataView(b.buffer));
    return b;
  };
  const cases: [string, Uint8Array<ArrayBuffer>, RegExp][] = [
    ["no length prefix", good.slice(0, 66), /LZ4 file too short: 66 bytes/],
    [
      "impossible length prefix",
      edit((_, v) => v.setUint32(64, 0xfffffff0, true)),
      /LZ4 length prefix 4294967280 is impossible for \d+ compressed bytes/,
    ],
    [
      "length prefix too small",
      edit((_, v) => v.setUint32(64, 100, true)),
      /corrupt LZ4 data: .*more than the declared 100 bytes/,
    ],
    [
      "length prefix too large",
      edit((_, v) => v.setUint32(64, image().length - 64 + 100, true)),
      /corrupt LZ4 data: the block decodes to \d+ bytes, \d+ were declared/,
    ],
    ["truncated block", good.slice(0, good.length - 9), /corrupt LZ4 data/],
    ["garbage block", edit((b) => b.fill(0xff, 68)), /corrupt LZ4 data/],
  ];
  for (const [name, bytes, message] of cases) {
    await t.step(name, async () => {
      await assert.rejects(
        () => openApr(new BlobSource(new Blob([bytes]), "bad.apr")),
        (e: unknown) =>
          e instanceof ModelFormatError && e.format === "APR" && message.test(e.reason),
      );
    });
  }
  await t.step("a corrupt image is still checked like any APR file", async () => {
    // Flip a byte inside the metadata of the image, recompress: the JSON check fails.
    const img = image();
    img[70] = 0x00;
    await assert.rejects(
      () => openApr(new BlobSource(new Blob([encodeAprLz4(img)]), "bad.apr")),
      ModelFormatError,
    );
  });
});

Deno.test("AprLz4Sink refuses models of 4 GiB or more before allocating", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const header: ModelChunk = {
      type: "header",
      header: {
        format: "t",
        metadata: {},
        tensors: [{ name: "huge", dtype: "F32", shape: [1 << 30], byteLength: 4 * (1 << 30) }],
      },
    };
    await assert.rejects(
      async () => ReadableStream.from([header]).pipeTo(await AprLz4Sink.create(`${dir}/h.apr`)),
      (e: unknown) => e instanceof UsageError && /must be under 4 GiB/.test(e.message),
    );
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openAprLz4Image() reads any range of a multi-checkpoint image exactly, in bounded windows", async () => {
  // 20 MiB of data with runs, repeats and noise: several checkpoints, long
  // matches, literals that straddle input chunks.
  const size = 20 << 20;
  const rest = new Uint8Array(size);
  let x = 12345;
  for (let i = 0; i < size;) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const run = 1 + (x % 3000);
    if (x & 1) rest.fill(x >>> 24, i, i + run);
    else for (let j = i; j < i + run && j < size; j++) rest[j] = (x >>> (j & 15)) & 0xff;
    i += run;
  }
  const header = new Uint8Array(64).fill(7);
  const block = lz4CompressBlock(rest);
  const file = new Uint8Array(68 + block.length);
  file.set(header);
  new DataView(file.buffer).setUint32(64, size, true);
  file.set(block, 68);
  const { openAprLz4Image } = await import("../../../src/formats/apr/lz4_image.ts");
  const image = await openAprLz4Image(new BlobSource(new Blob([file]), "big.apr"));
  assert.equal(image.size, 64 + size);
  const expected = new Uint8Array(64 + size);
  expected.set(header);
  expected.set(rest, 64);
  for (
    const [start, length] of [[0, 100], [60, 10], [8 << 20, 3], [(8 << 20) - 5, 70_000], [
      size - 100,
      164,
    ], [1234567, 9 << 20]]
  ) {
    assert.deepEqual(
      await image.read(start!, length!),
      expected.subarray(start!, start! + length!),
    );
  }
  let at = 0;
  for await (const chunk of image.stream(0, image.size, 3 << 20)) {
    assert.ok(chunk.length <= 3 << 20);
    assert.deepEqual(chunk, expected.subarray(at, at + chunk.length));
    at += chunk.length;
  }
  assert.equal(at, image.size);
  await image.close();
});
