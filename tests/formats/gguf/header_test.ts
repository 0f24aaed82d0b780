import assert from "node:assert/strict";
import { ModelFormatError } from "../../../src/errors.ts";
import { ggufValueTypeName, parseGgufHeader } from "../../../src/formats/gguf/header.ts";
import type { ByteSource } from "../../../src/io/byte_source.ts";
import { openFileSource } from "../../../src/io/file_source.ts";
import { RawGguf, rawHeader, sourceOf } from "./_raw_gguf.ts";

const DATA = new URL("../../testdata/gguf/", import.meta.url);

/** Parse `bytes` and assert a ModelFormatError whose message matches `pattern`. */
async function rejects(bytes: Uint8Array, pattern: RegExp, offset?: number): Promise<void> {
  await assert.rejects(parseGgufHeader(sourceOf(bytes)), (e: unknown) => {
    assert.ok(e instanceof ModelFormatError, `expected ModelFormatError, got ${e}`);
    assert.match(e.message, /^Cannot read GGUF file "bad\.gguf": /);
    assert.match(e.message, pattern);
    if (offset !== undefined) assert.equal(e.offset, offset, e.message);
    return true;
  });
}

/** `source`, telling `onRead` of each read; it must never be streamed (headers are read). */
function recording(
  source: ByteSource,
  onRead: (offset: number, length: number) => void,
): ByteSource {
  return {
    name: source.name,
    size: source.size,
    read: (offset: number, length: number) => {
      onRead(offset, length);
      return source.read(offset, length);
    },
    stream: () => {
      throw new Error("the header parser must not stream");
    },
    close: () => source.close(),
  };
}

/** A valid file: two KV pairs and one F32 tensor of 4 elements. */
function validFile(): Uint8Array {
  return rawHeader(1, 2)
    .kvStr("general.architecture", "llama")
    .kvU32("general.alignment", 32)
    .tensor("t", [4], 0, 0)
    .pad()
    .zeros(16)
    .bytes();
}

Deno.test("parseGgufHeader() reads a minimal valid file", async () => {
  const h = await parseGgufHeader(sourceOf(validFile()));
  assert.equal(h.version, 3);
  assert.deepEqual([...h.kv.keys()], ["general.architecture", "general.alignment"]);
  assert.equal(h.tensors[0]?.byteLength, 16);
  assert.equal(h.dataOffset % 32, 0);
});

Deno.test("parseGgufHeader() rejects every bad input of FORMATS.md §3", async (t) => {
  await t.step("G1 magic is not GGUF", async () => {
    const b = validFile();
    b[3] = 0x58;
    await rejects(b, /not a GGUF file: magic is "GGUX" \(47 47 55 58\), expected "GGUF"/, 0);
    await rejects(new Uint8Array([0x47, 0x47]), /not a GGUF file: 2 bytes is too short/, 0);
  });

  await t.step("G2 version 0, 1 or > 3", async () => {
    for (const v of [0, 1, 4, 77]) {
      const b = rawHeader(0, 0, v).zeros(8).bytes();
      await rejects(b, new RegExp(`unsupported version ${v}: only GGUF versions 2 and 3`), 4);
    }
    await rejects(rawHeader(0, 0, 1).bytes(), /version 1 is obsolete/, 4);
  });

  await t.step("G3 byte-swapped version", async () => {
    const b = new RawGguf().raw([0x47, 0x47, 0x55, 0x46]).raw([0, 0, 0, 3]).zeros(16).bytes();
    await rejects(b, /endianness mismatch: version reads as 50331648, which is 3 byte-swapped/, 4);
  });

  await t.step("G4 counts absurd for the file size (checked before allocating)", async () => {
    await rejects(
      rawHeader(2n ** 40n, 0).zeros(64).bytes(),
      /invalid tensor count 1099511627776/,
      8,
    );
    await rejects(
      rawHeader(0, 2n ** 62n).zeros(64).bytes(),
      /invalid KV count 4611686018427387904/,
      16,
    );
    await rejects(rawHeader(0xffffffffffffffffn, 0).bytes(), /invalid tensor count/, 8);
    // Each fits alone, not together: 2 × 25 + 2 × 14 = 78 > 64.
    await rejects(
      rawHeader(2, 2).zeros(64).bytes(),
      /invalid counts: 2 KV pairs and 2 tensor infos need at least 78 bytes/,
      8,
    );
  });

  await t.step("G5 truncated in the counts, a key, a value, a tensor info", async () => {
    const full = rawHeader(1, 2).kvStr("k.str", "x".repeat(200)).kvU32("k.u32", 7)
      .tensor("t", [4, 4], 0, 0).pad().zeros(64).bytes();
    await rejects(
      full.subarray(0, 12),
      /truncated: tensor and KV counts needs 16 bytes at byte 8, but the file ends at byte 12/,
      8,
    );
    // A key of 20 bytes of which 12 are present (room enough for the KV count).
    const cutKey = rawHeader(0, 1).u64(20).raw(new Uint8Array(12).fill(0x61)).bytes();
    await rejects(
      cutKey,
      /truncated: key of KV pair 0 has length 20, but only 12 bytes remain in the file/,
      24,
    );
    // The long string value is cut after 100 of its 200 bytes (checked as G8 too).
    const cutValue = full.subarray(0, 24 + 13 + 4 + 8 + 100);
    await rejects(
      cutValue,
      /truncated: string value of "k\.str" has length 200, but only 100 bytes remain/,
    );
    // A cut inside the second tensor dimension (still room for the counts).
    const infoAt = 24 + 13 + 4 + 208 + 13 + 8;
    const cutInfo = full.subarray(0, infoAt + 8 + 1 + 4 + 8 + 3);
    await rejects(
      cutInfo,
      /truncated: dimensions, type and offset of tensor "t" needs 28 bytes/,
      infoAt + 13,
    );
    // Every cut inside the header fails cleanly with a ModelFormatError.
    for (let cut = 0; cut < infoAt + 8 + 1 + 4 + 16 + 12; cut++) {
      await assert.rejects(parseGgufHeader(sourceOf(full.subarray(0, cut))), ModelFormatError);
    }
  });

  await t.step("G6 empty key; duplicate key", async () => {
    await rejects(
      rawHeader(0, 1).kvU32("", 1).bytes(),
      /invalid key: KV pair 0 has an empty key/,
      24,
    );
    const dup = rawHeader(0, 2).kvU32("a.b", 1).kvU32("a.b", 2).bytes();
    await rejects(dup, /invalid key: duplicate key "a\.b" \(first at byte 24\)/, 43);
  });

  await t.step("G7 value type >= 13; arrays nested too deep; bad array element type", async () => {
    await rejects(
      rawHeader(0, 1).str("a.b").u32(13).u32(0).bytes(),
      /invalid type: value type 13 of key "a\.b"/,
      35,
    );
    const deep = rawHeader(0, 1).str("a.b").u32(9);
    for (let i = 0; i < 4; i++) deep.u32(9).u64(1);
    deep.u32(4).u64(0);
    await rejects(
      deep.zeros(16).bytes(),
      /invalid type: arrays in "a\.b" are nested more than 3 deep/,
    );
    const ok = rawHeader(0, 1).str("a.b").u32(9).u32(9).u64(1).u32(4).u64(1).u32(7).bytes();
    const h = await parseGgufHeader(sourceOf(ok));
    assert.deepEqual(h.kv.get("a.b")?.value, [[7]]);
    assert.deepEqual(h.kv.get("a.b")?.arrayTypes, [9, 4]);
    await rejects(
      rawHeader(0, 1).str("a.b").u32(9).u32(21).u64(0).bytes(),
      /invalid type: array element type 21 of key "a\.b"/,
    );
    await rejects(
      rawHeader(0, 1).str("a.b").u32(7).u8(2).zeros(2).bytes(),
      /invalid type: BOOL value of "a\.b" is 2/,
    );
  });

  await t.step("G8 string or array length beyond the remaining bytes", async () => {
    await rejects(
      rawHeader(0, 1).str("a.b").u32(8).u64(1000).zeros(4).bytes(),
      /truncated: string value of "a\.b" has length 1000, but only 4 bytes remain/,
      39,
    );
    await rejects(
      rawHeader(0, 1).u64(2n ** 60n).zeros(8).bytes(),
      /truncated: key of KV pair 0 has length 1152921504606846976/,
      24,
    );
    const arr = rawHeader(0, 1).str("a.b").u32(9).u32(8).u64(1_000_000).zeros(64).bytes();
    await rejects(
      arr,
      /truncated: array "a\.b" of 1000000 STRING needs at least 8000000 bytes, but only 64 bytes remain/,
      39,
    );
  });

  await t.step("G9 general.alignment not u32, zero, not a power of two", async () => {
    await rejects(
      rawHeader(0, 1).kvStr("general.alignment", "32").bytes(),
      /invalid alignment: general\.alignment has type STRING, expected UINT32/,
      24,
    );
    await rejects(
      rawHeader(0, 1).kvU32("general.alignment", 0).bytes(),
      /invalid alignment: general\.alignment is 0, not a power of two/,
      24,
    );
    await rejects(
      rawHeader(0, 1).kvU32("general.alignment", 48).bytes(),
      /invalid alignment: general\.alignment is 48/,
      24,
    );
    await rejects(
      rawHeader(0, 1).str("general.alignment").u32(10).u64(32).bytes(),
      /has type UINT64, expected UINT32/,
    );
  });

  await t.step("G10 duplicate tensor names", async () => {
    const b = rawHeader(2, 0).tensor("w", [4], 0, 0).tensor("w", [4], 0, 32).pad().zeros(64)
      .bytes();
    await rejects(b, /duplicate tensor "w" \(first at byte 24\)/, 24 + 33);
  });

  await t.step("G11 n_dims > 4; zero-element overflow; element count overflow", async () => {
    await rejects(
      rawHeader(1, 0).tensor("w", [1, 1, 1, 1, 1], 0, 0).pad().bytes(),
      /invalid shape for tensor "w": 5 dimensions exceed ggml's maximum of 4/,
      33,
    );
    await rejects(
      rawHeader(1, 0).tensor("w", [2 ** 30, 2 ** 30], 0, 0).pad().bytes(),
      /invalid shape for tensor "w": element count of \[1073741824,1073741824…\] overflows 2\^53/,
    );
    await rejects(
      rawHeader(1, 0).tensor("w", [0, 2 ** 30, 2 ** 30], 0, 0).pad().bytes(),
      /invalid shape for tensor "w": element count .* overflows/,
    );
    await rejects(
      rawHeader(1, 0).tensor("w", [2n ** 63n], 0, 0).pad().bytes(),
      /invalid shape for tensor "w": ne\[0\] = 9223372036854775808 exceeds 2\^53/,
    );
    // Fits in elements, but not in bytes.
    await rejects(
      rawHeader(1, 0).tensor("w", [2 ** 26, 2 ** 26], 0, 0).pad().bytes(),
      /invalid shape for tensor "w": .*exceeds 2\^53 bytes/,
    );
  });

  await t.step("G12 unknown or unsupported ggml type, named", async () => {
    await rejects(
      rawHeader(1, 0).tensor("w", [256], 4, 0).pad().bytes(),
      /unsupported ggml type 4 \(Q4_2 \(removed\)\) of tensor "w"/,
      24 + 9 + 4 + 8,
    );
    await rejects(
      rawHeader(1, 0).tensor("w", [256], 99, 0).pad().bytes(),
      /unsupported ggml type 99 \(unknown\) of tensor "w"/,
    );
    await rejects(
      rawHeader(1, 0).tensor("w", [32], 31, 0).pad().bytes(),
      /unsupported ggml type 31 \(Q4_0_4_4 \(removed\)\)/,
    );
    // One past the last type of the pinned ggml (Q2_0 = 42).
    await rejects(
      rawHeader(1, 0).tensor("w", [32], 43, 0).pad().bytes(),
      /unsupported ggml type 43 \(unknown\)/,
    );
  });

  await t.step("G13 ne[0] not a multiple of the block size", async () => {
    await rejects(
      rawHeader(1, 0).tensor("w", [100, 2], 12, 0).pad().bytes(),
      /invalid shape for type Q4_K: tensor "w" has ne\[0\] = 100, not a multiple of the 256-element block/,
      33,
    );
    await rejects(
      rawHeader(1, 0).tensor("w", [48], 8, 0).pad().bytes(),
      /invalid shape for type Q8_0: .* 32-element block/,
    );
  });

  await t.step("G14 offsets misaligned or overlapping", async () => {
    await rejects(
      rawHeader(1, 0).tensor("w", [4], 0, 4).pad().zeros(64).bytes(),
      /invalid offset: tensor "w" at data offset 4 is not a multiple of the 32-byte alignment/,
      24 + 9 + 4 + 8 + 4,
    );
    const overlap = rawHeader(2, 0).tensor("a", [16], 0, 0).tensor("b", [4], 0, 32).pad().zeros(128)
      .bytes();
    await rejects(
      overlap,
      /invalid offset: tensor "b" at data bytes \[32, 48\) overlaps tensor "a" at \[0, 64\)/,
      24 + 33,
    );
  });

  await t.step("G15 data section past the end of the file", async () => {
    const b = rawHeader(1, 0).tensor("w", [0], 0, 0).bytes(); // 57 bytes, data would start at 64
    await rejects(
      b,
      /truncated: the data section starts at byte 64, past the end of the 57-byte file/,
      57,
    );
  });

  await t.step("G16 tensor data past the end of the file, naming the tensor", async () => {
    const b = rawHeader(2, 0).tensor("a", [4], 0, 0).tensor("b", [8], 0, 32).pad().zeros(40)
      .bytes();
    await rejects(
      b,
      /truncated: data of tensor "b" spans bytes \[128, 160\), past the end of the 136-byte file/,
      128,
    );
  });
});

Deno.test("parseGgufHeader() keeps 64-bit integers exact and strings as UTF-8", async () => {
  const b = rawHeader(0, 4)
    .str("big").u32(10).u64(2n ** 60n + 1n)
    .str("small").u32(11).u64(-5n)
    .str("arr").u32(9).u32(10).u64(2).u64(1).u64(2n ** 63n)
    .kvStr("s", "\uFEFFhé 日本")
    .bytes();
  const h = await parseGgufHeader(sourceOf(b));
  assert.equal(h.kv.get("big")?.value, 2n ** 60n + 1n);
  assert.equal(h.kv.get("small")?.value, -5);
  assert.deepEqual(h.kv.get("arr")?.value, [1, 2n ** 63n]);
  assert.equal(h.kv.get("s")?.value, "\uFEFFhé 日本");
  const bad = rawHeader(0, 1).str("s").u32(8).u64(2).raw([0xc3, 0x28]).bytes();
  await rejects(bad, /invalid string: string value of "s" is not valid UTF-8/, 45);
});

// ---------------------------------------------------------------- fixtures

/** JSON.parse keeping integers above 2^53 exact (as bigint), via the reviver's source text. */
function parseJsonExact(text: string): unknown {
  // deno-lint-ignore no-explicit-any
  const reviver = (_k: string, v: unknown, ctx?: { source?: string }): any =>
    typeof v === "number" && !Number.isSafeInteger(v) && ctx?.source !== undefined &&
      /^-?\d+$/.test(ctx.source)
      ? BigInt(ctx.source)
      : v;
  // deno-lint-ignore no-explicit-any
  return JSON.parse(text, reviver as any);
}

Deno.test("parseGgufHeader() reads example.gguf exactly as gguf-py dumps it", async () => {
  const dump = parseJsonExact(await Deno.readTextFile(new URL("example.dump.json", DATA))) as {
    metadata: Record<
      string,
      { type: string; offset: number; value: unknown; array_types?: string[] }
    >;
    tensors: Record<string, { index: number; shape: number[]; type: string; offset: number }>;
  };
  const source = await openFileSource(new URL("example.gguf", DATA).pathname);
  try {
    const h = await parseGgufHeader(source);
    assert.equal(h.version, dump.metadata["GGUF.version"]!.value);
    assert.equal(h.tensors.length, dump.metadata["GGUF.tensor_count"]!.value);
    assert.equal(h.kv.size, dump.metadata["GGUF.kv_count"]!.value);
    const dumped = Object.entries(dump.metadata).filter(([k]) => !k.startsWith("GGUF."));
    assert.deepEqual([...h.kv.keys()], dumped.map(([k]) => k));
    for (const [key, d] of dumped) {
      const e = h.kv.get(key)!;
      assert.equal(ggufValueTypeName(e.type), d.type, key);
      assert.equal(e.offset, d.offset, key);
      assert.deepEqual(e.value, d.value, key);
      assert.deepEqual(e.arrayTypes?.map(ggufValueTypeName), d.array_types, key);
    }
    // The 64-bit values are above 2^53 and must arrive as exact bigints.
    assert.equal(h.kv.get("some.parameter.uint64")?.value, 0x123456789abcdef0n);
    assert.equal(h.kv.get("some.parameter.int64")?.value, -0x123456789abcdef1n);
    const tensors = Object.entries(dump.tensors);
    assert.deepEqual(h.tensors.map((t) => t.name), tensors.map(([n]) => n));
    for (const [name, d] of tensors) {
      const t = h.tensors[d.index]!;
      assert.deepEqual(t.ne, d.shape, name);
      assert.equal(t.dtype, d.type, name);
      assert.equal(t.infoOffset, d.offset, name);
    }
  } finally {
    await source.close();
  }
});

Deno.test("parseGgufHeader() refills past the first window without reading a byte twice", async () => {
  // The GPT-2 vocabulary is MBs of header: parsed from several reads, each
  // starting where the one before ended, every value as one read would give.
  const source = await openFileSource(new URL("ggml-vocab-gpt-2.gguf", DATA).pathname);
  const reads: [number, number][] = [];
  const counting = recording(source, (offset, length) => reads.push([offset, length]));
  try {
    const h = await parseGgufHeader(counting);
    assert.ok(reads.length > 2, `${reads.length} reads`);
    let end = 0;
    for (const [offset, length] of reads) {
      assert.equal(offset, end, "each read starts where the one before ended");
      end = offset + length;
    }
    assert.equal(end, h.headerEnd);
    const whole = await parseGgufHeader(sourceOf(await Deno.readFile(source.name)));
    assert.deepEqual([...h.kv], [...whole.kv]);
  } finally {
    await source.close();
  }
});

Deno.test("parseGgufHeader() refuses a bad element past the first window at its offset", async () => {
  // 20 000 tokens of 8 bytes: the array runs past the 64 KiB first read, so
  // its last token is parsed after refills; its bad UTF-8 is still refused
  // with the string's own offset, and a short file still reads "truncated".
  const tokens = rawHeader(0, 1).str("t").u32(9).u32(8).u64(20_000);
  for (let i = 0; i < 19_999; i++) tokens.str(`tok${String(i).padStart(5, "0")}`);
  const at = tokens.bytes().length;
  const bad = tokens.u64(2).raw([0xc3, 0x28]).bytes();
  await rejects(bad, /invalid string: string value of "t" is not valid UTF-8/, at + 8);
  await rejects(
    bad.subarray(0, at + 9),
    /truncated: string value of "t" has length 2, but only 1 bytes remain in the file/,
    at,
  );
});

Deno.test("parseGgufHeader() reads the vocabulary-only GPT-2 file (zero tensors)", async () => {
  const source = await openFileSource(new URL("ggml-vocab-gpt-2.gguf", DATA).pathname);
  try {
    const h = await parseGgufHeader(source);
    assert.equal(h.tensors.length, 0);
    assert.equal(h.kv.get("general.architecture")?.value, "gpt2");
    const tokens = h.kv.get("tokenizer.ggml.tokens")!;
    assert.deepEqual(tokens.arrayTypes, [8]);
    assert.equal((tokens.value as string[]).length, 50257);
    assert.equal((tokens.value as string[])[50256], "<|endoftext|>");
    assert.equal((h.kv.get("tokenizer.ggml.merges")!.value as string[])[0], "Ġ t");
    // The file ends right after the header, without data padding: fine with no tensors.
    assert.equal(h.headerEnd, source.size);
  } finally {
    await source.close();
  }
});

Deno.test("parseGgufHeader() reads only the header, in bounded windows", async () => {
  const source = await openFileSource(new URL("tiny-llama-f32.gguf", DATA).pathname);
  const reads: number[] = [];
  const counting = recording(source, (_offset, length) => reads.push(length));
  try {
    const h = await parseGgufHeader(counting);
    const total = reads.reduce((a, b) => a + b, 0);
    // 7 MB file, 13 KB header: one 64 KiB window suffices.
    assert.ok(total <= 64 * 1024, `read ${total} bytes`);
    assert.ok(h.headerEnd <= total);
  } finally {
    await source.close();
  }
});
