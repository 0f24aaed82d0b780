import assert from "node:assert/strict";
import {
  MAX_HEADER_BYTES,
  parseSafetensorsHeader,
} from "../../../src/formats/safetensors/header.ts";
import { ModelFormatError } from "../../../src/errors.ts";
import { openFileSource } from "../../../src/io/file_source.ts";
import { type RawOptions, rawSafetensors, rejection, sourceOf } from "./_builder.ts";

const T = (dtype: string, shape: unknown, offsets: unknown): string =>
  JSON.stringify({ dtype, shape, data_offsets: offsets });

interface BadRow {
  row: string;
  header: string | Uint8Array;
  options?: RawOptions;
  /** Bytes of the whole file, overriding header/options. */
  file?: Uint8Array;
  message: RegExp;
}

const BAD: BadRow[] = [
  {
    row: "S1 file shorter than 8 bytes",
    header: "",
    file: new Uint8Array(5),
    message: /header too small/,
  },
  {
    row: "S2 N > 100,000,000",
    header: "{}",
    options: { declared: BigInt(MAX_HEADER_BYTES + 1) },
    message: /header too large: 100000001 bytes exceeds the 100000000-byte limit/,
  },
  {
    row: "S3 8 + N beyond end of file",
    header: "{}",
    options: { declared: 500n },
    message: /truncated header: it declares 500 bytes but only 2 follow/,
  },
  {
    row: "S4 N = 2^64 - 1",
    header: "{}",
    options: { declared: 2n ** 64n - 1n },
    message: /header too large: 18446744073709551615 bytes/,
  },
  {
    row: "S5 header bytes not UTF-8",
    header: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
    message: /invalid header: the JSON is not valid UTF-8/,
  },
  { row: "S6 truncated JSON", header: '{"a":{"dtype":"F32"', message: /invalid header: / },
  {
    row: "S6 JSON array, not object",
    header: "[]",
    message: /invalid header: the JSON is not an object/,
  },
  { row: "S6 JSON string", header: '"x"', message: /invalid header: the JSON is not an object/ },
  { row: "S6 empty header", header: "", message: /invalid header: unexpected end of text/ },
  {
    row: "S7 unknown dtype",
    header: `{"w":${T("F128", [1], [0, 16])}}`,
    message: /invalid header: tensor "w" has unknown dtype "F128"/,
  },
  {
    row: "S7 lowercase dtype",
    header: `{"w":${T("f32", [1], [0, 4])}}`,
    message: /unknown dtype "f32" \(dtypes are upper case: "F32"\)/,
  },
  {
    row: "S7 shape not an array",
    header: `{"w":${T("F32", 4, [0, 16])}}`,
    message: /invalid header: tensor "w" has no "shape" array/,
  },
  {
    row: "S7 negative dim",
    header: `{"w":${T("F32", [-1], [0, 4])}}`,
    message: /tensor "w" has dimension -1, not a non-negative integer/,
  },
  {
    row: "S7 fractional dim",
    header: `{"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}`,
    message: /tensor "w" has dimension 1.5, not a non-negative integer/,
  },
  {
    row: "S7 dim written with an exponent",
    header: `{"w":{"dtype":"F32","shape":[1e0],"data_offsets":[0,4]}}`,
    message: /dimension 1e0, not a non-negative integer/,
  },
  {
    row: "S7 data_offsets with one integer",
    header: `{"w":${T("F32", [1], [4])}}`,
    message: /tensor "w" has 1 data_offsets, expected \[BEGIN, END\]/,
  },
  {
    row: "S7 data_offsets with a string",
    header: `{"w":${T("F32", [1], [0, "4"])}}`,
    message: /tensor "w" has data offset a string, not a non-negative integer/,
  },
  {
    row: "S7 missing dtype",
    header: `{"w":{"shape":[1],"data_offsets":[0,4]}}`,
    message: /tensor "w" has no "dtype" string/,
  },
  {
    row: "S7 entry not an object",
    header: `{"w":[1,2]}`,
    message: /tensor "w" is an array, not an object/,
  },
  {
    row: "S8 __metadata__ value a number",
    header: `{"__metadata__":{"format":1}}`,
    message: /invalid header: "__metadata__" value of "format" is the number 1, not a string/,
  },
  {
    row: "S8 __metadata__ value an object",
    header: `{"__metadata__":{"format":{"a":"b"}}}`,
    message: /"__metadata__" value of "format" is an object, not a string/,
  },
  {
    row: "S8 __metadata__ not an object",
    header: `{"__metadata__":"pt"}`,
    message: /"__metadata__" must be an object of strings/,
  },
  {
    row: "S9 shape x dtype size != END - BEGIN",
    header: `{"w":${T("F32", [2, 2], [0, 12])}}`,
    options: { data: 12 },
    message:
      /tensor size mismatch: tensor "w" \(F32, shape \[2,2\]\) needs 16 bytes but its data_offsets \[0, 12\] hold 12/,
  },
  {
    row: "S10 first BEGIN != 0",
    header: `{"w":${T("F32", [1], [4, 8])}}`,
    options: { data: 8 },
    message: /invalid offsets: the first tensor "w" starts at data byte 4, not 0/,
  },
  {
    row: "S10 a hole",
    header: `{"a":${T("F32", [1], [0, 4])},"b":${T("F32", [1], [8, 12])}}`,
    options: { data: 12 },
    message: /invalid offsets: tensor "b" starts at data byte 8, leaving a hole after "a"/,
  },
  {
    row: "S10 an overlap",
    header: `{"a":${T("F32", [2], [0, 8])},"b":${T("F32", [2], [4, 12])}}`,
    options: { data: 12 },
    message: /invalid offsets: tensor "b" starts at data byte 4, overlapping "a" which ends at 8/,
  },
  {
    row: "S10 END < BEGIN",
    header: `{"a":${T("F32", [0], [8, 4])}}`,
    options: { data: 8 },
    message: /invalid offsets: tensor "a" ends at data byte 4, before it begins at 8/,
  },
  {
    row: "S11 the same key twice",
    header: `{"a":${T("F32", [1], [0, 4])},"a":${T("F32", [1], [0, 4])}}`,
    options: { data: 4 },
    message: /duplicate tensor name "a"/,
  },
  {
    row: "S11 the same key twice, once escaped",
    header: `{"ab":${T("F32", [1], [0, 4])},"a\\u0062":${T("F32", [1], [4, 8])}}`,
    options: { data: 8 },
    message: /duplicate tensor name "ab"/,
  },
  {
    row: "S11 a tensor key twice inside one entry",
    header: `{"a":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}}`,
    options: { data: 4 },
    message: /invalid header: key "dtype" appears twice/,
  },
  {
    row: "S12 two names sharing one byte range",
    header: `{"a":${T("F32", [1], [0, 4])},"b":${T("F32", [1], [0, 4])}}`,
    options: { data: 4 },
    message: /invalid offsets: tensor "b" starts at data byte 0, overlapping "a"/,
  },
  {
    row: "S13 dims whose product overflows",
    header: `{"a":{"dtype":"F32","shape":[2,18446744073709551614],"data_offsets":[0,4]}}`,
    options: { data: 4 },
    message:
      /unsafe integer: tensor "a" has dimension 18446744073709551614, above 2\^53 − 1 \(overflow\)/,
  },
  {
    row: "S13 product above 2^53 from safe dims",
    header: `{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}`,
    options: { data: 4 },
    message: /overflow: tensor "a" has shape \[4294967296,4294967296\]/,
  },
  {
    row: "S13 bytes above 2^53 from a safe element count",
    header: `{"a":{"dtype":"F64","shape":[4503599627370496],"data_offsets":[0,4]}}`,
    options: { data: 4 },
    message: /overflow: tensor "a" is larger than 2\^53 − 1 bytes/,
  },
  {
    row: "S13 offset above 2^53",
    header: `{"a":{"dtype":"F32","shape":[1],"data_offsets":[9007199254740993,9007199254740997]}}`,
    options: { data: 4 },
    message: /unsafe integer: tensor "a" has data offset 9007199254740993/,
  },
  {
    row: "S14 sub-byte dtype not filling whole bytes",
    header: `{"a":${T("F4", [3], [0, 2])}}`,
    options: { data: 2 },
    message: /misaligned: tensor "a" \(F4, shape \[3\]\) is 12 bits/,
  },
  {
    row: "S14 F6 not filling whole bytes",
    header: `{"a":${T("F6_E2M3", [2], [0, 2])}}`,
    options: { data: 2 },
    message: /misaligned: tensor "a" \(F6_E2M3, shape \[2\]\) is 12 bits/,
  },
  {
    row: "S15 bytes after the last tensor",
    header: `{"a":${T("F32", [1], [0, 4])}}`,
    options: { data: 7 },
    message: /trailing data: 3 bytes after the last tensor/,
  },
  {
    row: "S16 file truncated inside the data",
    header: `{"a":${T("F32", [4], [0, 16])}}`,
    options: { data: 10 },
    message: /truncated: the tensors need \d+ bytes but the file has \d+/,
  },
  {
    row: "S17 a tensor named __metadata__",
    header: `{"__metadata__":${T("F32", [1], [0, 4])}}`,
    options: { data: 4 },
    message: /invalid header: a tensor may not be named "__metadata__"/,
  },
];

Deno.test("parseSafetensorsHeader() rejects every bad input of FORMATS.md S1–S17", async (t) => {
  for (const row of BAD) {
    await t.step(row.row, async () => {
      const bytes = row.file ?? rawSafetensors(row.header, row.options);
      const error = await rejection(
        () => parseSafetensorsHeader(sourceOf(bytes, "bad.safetensors")),
        ModelFormatError,
        row.message,
      );
      assert.match(error.message, /^Cannot read SafeTensors file "bad\.safetensors": /);
      assert.deepStrictEqual(error.format, "SafeTensors");
      assert.equal(typeof error.offset, "number");
    });
  }
});

Deno.test("parseSafetensorsHeader() rejects S18, a real malformed file from safetensors-cpp", async () => {
  const source = await openFileSource(
    "tests/testdata/safetensors/other/safetensors-cpp-abuse-1.safetensors",
  );
  try {
    await rejection(
      () => parseSafetensorsHeader(source),
      ModelFormatError,
      "truncated header: it declares 1000 bytes but only 80 follow",
    );
  } finally {
    await source.close();
  }
});

Deno.test("parseSafetensorsHeader() checks the header size before reading it", async () => {
  let reads = 0;
  const bytes = rawSafetensors("{}", { declared: 2n ** 63n });
  const inner = sourceOf(bytes);
  const source = {
    name: "x",
    size: 2 ** 40, // pretend a huge file, so only the cap can stop the read
    read: (offset: number, length: number) => {
      reads++;
      return inner.read(offset, Math.min(length, 8));
    },
    stream: () => new ReadableStream<Uint8Array>(),
    close: () => Promise.resolve(),
  };
  await rejection(() => parseSafetensorsHeader(source), ModelFormatError, "header too large");
  assert.deepStrictEqual(reads, 1);
});

Deno.test("parseSafetensorsHeader() accepts the valid edge cases of FORMATS.md §1", async (t) => {
  await t.step("{} (no tensors)", async () => {
    const h = await parseSafetensorsHeader(sourceOf(rawSafetensors("{}")));
    assert.deepStrictEqual(h.tensors, []);
    assert.deepStrictEqual(h.metadata, undefined);
    assert.deepStrictEqual(h.dataOffset, 10);
    assert.deepStrictEqual(h.dataByteLength, 0);
  });
  await t.step("only __metadata__", async () => {
    const h = await parseSafetensorsHeader(
      sourceOf(rawSafetensors('{"__metadata__":{"format":"pt","__proto__":"x"}}')),
    );
    assert.deepStrictEqual(Object.keys(h.metadata!), ["format", "__proto__"]);
    assert.deepStrictEqual(h.metadata!["__proto__"], "x");
  });
  await t.step("empty __metadata__", async () => {
    const h = await parseSafetensorsHeader(sourceOf(rawSafetensors('{"__metadata__":{}}')));
    assert.deepStrictEqual(h.metadata, {});
  });
  await t.step("zero-size tensors", async () => {
    const h = await parseSafetensorsHeader(sourceOf(rawSafetensors(
      `{"z":${T("F32", [2, 0], [0, 0])},"y":${T("F16", [0], [0, 0])},"w":${T("F32", [1], [0, 4])}}`,
      { data: 4 },
    )));
    assert.deepStrictEqual(h.tensors.map((x) => x.name), ["z", "y", "w"]);
    assert.deepStrictEqual(h.tensors[0]!.byteLength, 0);
  });
  await t.step("scalar shape []", async () => {
    const h = await parseSafetensorsHeader(
      sourceOf(rawSafetensors(`{"s":${T("F32", [], [0, 4])}}`, { data: 4 })),
    );
    assert.deepStrictEqual(h.tensors[0]!.shape, []);
    assert.deepStrictEqual(h.tensors[0]!.byteLength, 4);
  });
  await t.step("keys in any order, sorted by offset", async () => {
    const h = await parseSafetensorsHeader(sourceOf(rawSafetensors(
      `{"b":{"data_offsets":[4,12],"shape":[2],"dtype":"F32"},"__metadata__":{},"a":${
        T("F32", [1], [0, 4])
      }}`,
      { data: 12 },
    )));
    assert.deepStrictEqual(h.tensors.map((x) => [x.name, x.dataOffsets]), [["a", [0, 4]], ["b", [
      4,
      12,
    ]]]);
  });
  await t.step("padded header with spaces and leading whitespace", async () => {
    const text = `\n {"a":${T("BF16", [3], [0, 6])}}     `;
    const h = await parseSafetensorsHeader(sourceOf(rawSafetensors(text, { data: 6 })));
    assert.deepStrictEqual(h.headerByteLength, text.length);
    assert.deepStrictEqual(h.dataOffset, 8 + text.length);
  });
  await t.step("sub-byte dtypes filling whole bytes", async () => {
    const h = await parseSafetensorsHeader(sourceOf(rawSafetensors(
      `{"a":${T("F4", [4], [0, 2])},"b":${T("F6_E3M2", [2, 2], [2, 5])}}`,
      { data: 5 },
    )));
    assert.deepStrictEqual(h.tensors.map((x) => x.byteLength), [2, 3]);
  });
  await t.step("unknown fields in an entry are ignored, like the reference loader", async () => {
    const h = await parseSafetensorsHeader(sourceOf(rawSafetensors(
      `{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":[1.5]}}`,
      { data: 1 },
    )));
    assert.deepStrictEqual(h.tensors[0]!.dtype, "U8");
  });
  await t.step("a non-ASCII name gives byte offsets in UTF-8", async () => {
    const error = await rejection(
      () =>
        parseSafetensorsHeader(
          sourceOf(rawSafetensors(`{"é":${T("F32", [1], [0, 4])},"é":1}`, { data: 4 })),
        ),
      ModelFormatError,
    );
    // `{"é":` ... the second key starts after 8 + 1 + 4 (quote, 2 bytes, quote) + ":" + entry + ","
    assert.deepStrictEqual(
      error.offset,
      8 + new TextEncoder().encode(`{"é":${T("F32", [1], [0, 4])},`).length,
    );
  });
});

Deno.test("parseSafetensorsHeader() reports what a whole-text parse would, though entries stream", async (t) => {
  await t.step("malformed JSON after a bad entry: the JSON error", async () => {
    const header = `{"a":${T("F32", [2], [0, 4])},"b":${T("F32", [1], [0, 4])} "c":1}`;
    await rejection(
      () => parseSafetensorsHeader(sourceOf(rawSafetensors(header, { data: 4 }))),
      ModelFormatError,
      /invalid header: expected "," or "}", found "\\""/,
    );
  });
  await t.step("a repeated name after a bad entry: the repeated name", async () => {
    const header = `{"a":${T("F32", [2], [0, 4])},"b":1,"b":2}`;
    await rejection(
      () => parseSafetensorsHeader(sourceOf(rawSafetensors(header, { data: 4 }))),
      ModelFormatError,
      /duplicate tensor name "b"/,
    );
  });
  await t.step("two bad entries: the first, at its own byte offset", async () => {
    const first = `{"ok":${T("F32", [1], [0, 4])},`;
    const header = `${first}"a":${T("F32", [2], [4, 8])},"b":1}`;
    const error = await rejection(
      () => parseSafetensorsHeader(sourceOf(rawSafetensors(header, { data: 8 }))),
      ModelFormatError,
      /tensor size mismatch: tensor "a"/,
    );
    assert.equal(error.offset, 8 + first.length);
  });
});
