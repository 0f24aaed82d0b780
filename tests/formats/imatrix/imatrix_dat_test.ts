import { deepStrictEqual as assertEquals, ok, throws } from "node:assert/strict";
import { parseImatrixDat } from "../../../src/formats/imatrix/imatrix_dat.ts";
import { ModelFormatError } from "../../../src/errors.ts";

const FIXTURE = new URL("../../testdata/gguf/tiny-qwen2-imatrix.dat", import.meta.url);

/** A .dat file from entries (name, ncall, values) and an optional trailer. */
function dat(
  entries: [string, number, number[]][],
  trailer?: [number, string],
  count = entries.length,
): Uint8Array {
  const parts: number[] = [];
  const i32 = (v: number) => {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setInt32(0, v, true);
    parts.push(...b);
  };
  i32(count);
  for (const [name, ncall, values] of entries) {
    const n = new TextEncoder().encode(name);
    i32(n.length);
    parts.push(...n);
    i32(ncall);
    i32(values.length);
    for (const v of values) {
      const b = new Uint8Array(4);
      new DataView(b.buffer).setFloat32(0, v, true);
      parts.push(...b);
    }
  }
  if (trailer !== undefined) {
    i32(trailer[0]);
    const d = new TextEncoder().encode(trailer[1]);
    i32(d.length);
    parts.push(...d);
  }
  return new Uint8Array(parts);
}

Deno.test("parseImatrixDat() reads llama-imatrix's file: 14 entries, means per call, the dataset trailer", () => {
  const bytes = Deno.readFileSync(FIXTURE);
  const m = parseImatrixDat(bytes, "x.dat");
  assertEquals(m.entries.size, 14);
  assertEquals(m.entries.get("blk.0.ffn_down.weight")!.length, 512);
  assertEquals(m.entries.get("blk.1.attn_v.weight")!.length, 256);
  assertEquals([m.chunks, m.dataset], [8, "imatrix-calib.txt"]);
  // Values are the sums divided by ncall (8 here), in f32.
  const dv = new DataView(bytes.buffer, bytes.byteOffset);
  const nameLength = dv.getInt32(4, true);
  const first = new TextDecoder().decode(bytes.subarray(8, 8 + nameLength));
  const raw = dv.getFloat32(8 + nameLength + 8, true);
  assertEquals(m.entries.get(first)![0], Math.fround(raw / 8));
});

Deno.test("parseImatrixDat() accepts a file without the trailer and keeps values of ncall 0", () => {
  const m = parseImatrixDat(dat([["a.weight", 0, [3, 4]]]), "x.dat");
  assertEquals([...m.entries.get("a.weight")!], [3, 4]);
  assertEquals(m.chunks, undefined);
});

Deno.test("parseImatrixDat() rejects malformed files with one line naming the file and the offset", async (t) => {
  const good = dat([["a.weight", 1, [1, 2]]]);
  const cases: [string, Uint8Array, RegExp][] = [
    ["empty", new Uint8Array(0), /ends inside the entry count/],
    ["no entries", dat([]), /no data: the entry count is 0/],
    [
      "a huge entry count",
      dat([["a.weight", 1, [1]]], undefined, 1e9),
      /entry count 1000000000 does not fit/,
    ],
    [
      "truncated values",
      good.subarray(0, good.length - 1),
      /declares 2 values, the file has room for 1/,
    ],
    [
      "a negative name length",
      (() => {
        const b = good.slice();
        new DataView(b.buffer).setInt32(4, -5, true);
        return b;
      })(),
      /name length -5/,
    ],
    [
      "a repeated name",
      dat([["a.weight", 1, [1]], ["a.weight", 1, [2]]]),
      /repeats the name "a.weight"/,
    ],
    ["a NaN value", dat([["a.weight", 1, [NaN]]]), /non-finite value/],
    ["an infinite value", dat([["a.weight", 1, [Infinity]]]), /non-finite value/],
    ["no values", dat([["a.weight", 1, []]]), /declares 0 values/],
    [
      "a bad trailer",
      new Uint8Array([...good, 1, 0, 0, 0, 9, 0, 0, 0, 65]),
      /dataset name length 9/,
    ],
    ["bytes after the entries", new Uint8Array([...good, 1, 2]), /ends inside the chunk count/],
    [
      "a name that is not UTF-8",
      (() => {
        const b = dat([["ab", 1, [1]]]);
        b[8] = 0xff;
        return b;
      })(),
      /not UTF-8/,
    ],
  ];
  for (const [what, bytes, pattern] of cases) {
    await t.step(what, () => {
      throws(() => parseImatrixDat(bytes, "bad.dat"), (e: unknown) => {
        ok(e instanceof ModelFormatError, String(e));
        ok(e.message.startsWith('Cannot read imatrix file "bad.dat": '), e.message);
        ok(!e.message.includes("\n"));
        return pattern.test(e.message);
      });
    });
  }
});

Deno.test("readImportanceMatrix() reads the GGUF form: in_sum2 / counts per matrix, 1 where a matrix saw nothing", async () => {
  const { encodeGguf } = await import("../../../src/formats/gguf/writer.ts");
  const { readImportanceMatrix } = await import("../../../src/pipeline/read_imatrix.ts");
  const f32 = (v: number[]) => new Uint8Array(new Float32Array(v).buffer);
  const bytes = encodeGguf({
    kv: [
      ["general.type", { type: 8, value: "imatrix" }],
      ["imatrix.datasets", { type: 9, value: ["calib.txt"], arrayTypes: [8] }],
      ["imatrix.chunk_count", { type: 4, value: 3 }],
      ["imatrix.chunk_size", { type: 4, value: 512 }],
    ],
    tensors: [
      {
        name: "blk.0.ffn_down_exps.weight.in_sum2",
        dtype: "F32",
        ne: [2, 2],
        data: f32([6, 9, 5, 5]),
      },
      { name: "blk.0.ffn_down_exps.weight.counts", dtype: "F32", ne: [1, 2], data: f32([3, 0]) },
    ],
  });
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/m.gguf`, bytes);
    const m = await readImportanceMatrix(`${dir}/m.gguf`);
    assertEquals([...m.entries.get("blk.0.ffn_down_exps.weight")!], [2, 3, 1, 1]);
    assertEquals([m.chunks, m.dataset], [3, "calib.txt"]);
    // Without the metadata llama-quantize requires, the file is refused.
    await Deno.writeFile(`${dir}/bad.gguf`, encodeGguf({ kv: [], tensors: [] }));
    await readImportanceMatrix(`${dir}/bad.gguf`).then(
      () => ok(false),
      (e) =>
        ok(e instanceof ModelFormatError && /needs imatrix\.datasets/.test(e.message), String(e)),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
