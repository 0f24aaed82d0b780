import assert from "node:assert/strict";
import { openSafetensors } from "../../../src/formats/safetensors/reader.ts";
import { ModelFormatError } from "../../../src/errors.ts";
import { openFileSource } from "../../../src/io/file_source.ts";
import { modelChunks } from "../../../src/tensor.ts";
import { collect, rawSafetensors, rejection, sourceOf } from "./_builder.ts";

const DIR = "tests/testdata/safetensors";
const RANGE = [-3, -2, -1, 0, 1, 2];

/** IEEE binary16 to number, written independently of the library. */
function halfToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

/** Decode a little-endian payload with DataView (safe at any alignment). */
function decode(dtype: string, bytes: Uint8Array): number[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = {
    U8: 1,
    I8: 1,
    BOOL: 1,
    U16: 2,
    I16: 2,
    F16: 2,
    U32: 4,
    I32: 4,
    F32: 4,
    F64: 8,
    I64: 8,
  }[
    dtype
  ]!;
  const out: number[] = [];
  for (let at = 0; at < bytes.length; at += size) {
    switch (dtype) {
      case "U8":
      case "BOOL":
        out.push(view.getUint8(at));
        break;
      case "I8":
        out.push(view.getInt8(at));
        break;
      case "U16":
        out.push(view.getUint16(at, true));
        break;
      case "I16":
        out.push(view.getInt16(at, true));
        break;
      case "F16":
        out.push(halfToNumber(view.getUint16(at, true)));
        break;
      case "U32":
        out.push(view.getUint32(at, true));
        break;
      case "I32":
        out.push(view.getInt32(at, true));
        break;
      case "F32":
        out.push(view.getFloat32(at, true));
        break;
      case "F64":
        out.push(view.getFloat64(at, true));
        break;
      case "I64":
        out.push(Number(view.getBigInt64(at, true)));
        break;
    }
  }
  return out;
}

async function open(path: string, chunkSize?: number) {
  return await openSafetensors(
    await openFileSource(path),
    chunkSize === undefined ? {} : { chunkSize },
  );
}

Deno.test("openSafetensors() reads range(-3, 3) in every dtype of the official samples", async (t) => {
  const files: Record<string, [string, (v: number) => number]> = {
    "B": ["U8", (v) => (v + 256) % 256],
    "H": ["U16", (v) => (v + 65536) % 65536],
    "I": ["U32", (v) => (v + 2 ** 32) % 2 ** 32],
    "b": ["I8", (v) => v],
    "h": ["I16", (v) => v],
    "i": ["I32", (v) => v],
    "e": ["F16", (v) => v],
    "f": ["F32", (v) => v],
    "d": ["F64", (v) => v],
  };
  for (const [name, [dtype, expect]] of Object.entries(files)) {
    await t.step(`${name}.safetensors (${dtype})`, async () => {
      const reader = await open(`${DIR}/hf_samples/${name}.safetensors`);
      try {
        assert.equal(reader.header.format, "safetensors");
        assert.deepStrictEqual(reader.header.metadata, {
          original_format: "safetensors",
          source_metadata: { test: "a" },
        });
        assert.deepStrictEqual(reader.header.tensors, [
          { name, dtype, shape: [6], byteLength: 6 * (reader.header.tensors[0]!.byteLength / 6) },
        ]);
        const bytes = await collect(reader.tensors[0]!.open());
        assert.deepStrictEqual(decode(dtype, bytes), RANGE.map(expect));
      } finally {
        await reader.close();
      }
    });
  }
  await t.step("overall.safetensors (all nine, in offset order)", async () => {
    const reader = await open(`${DIR}/hf_samples/overall.safetensors`, 5);
    try {
      assert.deepStrictEqual(
        reader.header.tensors.map((x) => x.name),
        ["B", "H", "I", "b", "d", "e", "f", "h", "i"],
      );
      for (const entry of reader.tensors) {
        const [dtype, expect] = files[entry.info.name]!;
        assert.equal(entry.info.dtype, dtype);
        assert.deepStrictEqual(decode(dtype, await collect(entry.open())), RANGE.map(expect));
      }
    } finally {
      await reader.close();
    }
  });
});

/** Every fixture file, with the header parsed independently by JSON.parse. */
async function fixtures(): Promise<string[]> {
  const paths: string[] = [];
  for (const dir of ["hf_samples", "burn", "candle", "other"]) {
    for await (const entry of Deno.readDir(`${DIR}/${dir}`)) {
      if (entry.name.endsWith(".safetensors") && !entry.name.includes("abuse")) {
        paths.push(`${DIR}/${dir}/${entry.name}`);
      }
    }
  }
  return paths.sort();
}

Deno.test("openSafetensors() reads every fixture file's tensors byte-exactly", async (t) => {
  for (const path of await fixtures()) {
    await t.step(path.slice(DIR.length + 1), async () => {
      const file = await Deno.readFile(path);
      const n = Number(new DataView(file.buffer).getBigUint64(0, true));
      const json = JSON.parse(new TextDecoder().decode(file.subarray(8, 8 + n)));
      delete json.__metadata__;
      const expected = Object.entries(
        json as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>,
      ).sort((a, b) => a[1].data_offsets[0] - b[1].data_offsets[0]);
      // A small odd chunk size exercises chunk boundaries at unaligned offsets.
      const reader = await open(path, 4099);
      try {
        assert.deepStrictEqual(
          reader.header.tensors.map((x) => [x.name, x.dtype, x.shape]),
          expected.map(([name, e]) => [name, e.dtype, e.shape]),
        );
        for (const [i, [, e]] of expected.entries()) {
          const entry = reader.tensors[i]!;
          assert.equal(entry.info, reader.header.tensors[i]);
          const bytes = await collect(entry.open());
          assert.deepStrictEqual(
            bytes,
            file.subarray(8 + n + e.data_offsets[0], 8 + n + e.data_offsets[1]),
          );
        }
      } finally {
        await reader.close();
      }
    });
  }
});

Deno.test("openSafetensors() decodes known values from burn, aprender and safetensors-cpp files", async (t) => {
  const read = async (path: string, name: string) => {
    const reader = await open(`${DIR}/${path}`);
    try {
      const entry = reader.tensors.find((e) => e.info.name === name)!;
      return { info: entry.info, values: decode(entry.info.dtype, await collect(entry.open())) };
    } finally {
      await reader.close();
    }
  };
  await t.step("BOOL", async () => {
    const { values } = await read("burn/boolean.safetensors", "buffer");
    assert.deepStrictEqual(values, [1, 0, 1]);
  });
  await t.step("I64", async () => {
    const { values } = await read("burn/integer.safetensors", "buffer");
    assert.deepStrictEqual(values, [1, 2, 3]);
  });
  await t.step("F32 [3, 3]", async () => {
    const { info, values } = await read("burn/buffer.safetensors", "buffer");
    assert.deepStrictEqual(info.shape, [3, 3]);
    assert.deepStrictEqual(values, new Array(9).fill(1));
  });
  await t.step("aprender data starting at an odd offset", async () => {
    const { values } = await read("other/aprender-linear.safetensors", "intercept");
    assert.equal(
      values[0],
      new DataView(new Uint8Array([0x79, 0x44, 0xfa, 0xbe]).buffer).getFloat32(0, true),
    );
  });
  await t.step("safetensors-cpp F64 [16, 16]", async () => {
    const { info, values } = await read("other/safetensors-cpp-model.safetensors", "weight2");
    assert.deepStrictEqual(info, {
      name: "weight2",
      dtype: "F64",
      shape: [16, 16],
      byteLength: 2048,
    });
    assert.equal(values.length, 256);
    assert.ok(values.every(Number.isFinite));
  });
  await t.step("HF tensor names of minicpm3", async () => {
    const reader = await open(`${DIR}/other/minicpm3-4b-model.safetensors`);
    try {
      assert.equal(reader.header.tensors[0]!.name, "lm_head.weight");
      assert.equal(reader.header.tensors.length, 15);
      assert.deepStrictEqual(reader.header.metadata, { original_format: "safetensors" });
    } finally {
      await reader.close();
    }
  });
});

Deno.test("openSafetensors() streams in chunks of at most chunkSize, re-openable", async () => {
  const data = new Uint8Array(100).map((_, i) => i);
  const bytes = rawSafetensors(`{"a":{"dtype":"U8","shape":[100],"data_offsets":[0,100]}}`, {
    data,
  });
  const reader = await openSafetensors(sourceOf(bytes), { chunkSize: 16 });
  const sizes: number[] = [];
  for await (const chunk of reader.tensors[0]!.open()) sizes.push(chunk.length);
  assert.deepStrictEqual(sizes, [16, 16, 16, 16, 16, 16, 4]);
  assert.deepStrictEqual(await collect(reader.tensors[0]!.open()), data);
  await reader.close();
  await reader.close();
  assert.throws(() => reader.tensors[0]!.open(), TypeError);
});

Deno.test("openSafetensors() gives the stream protocol through modelChunks()", async () => {
  const reader = await open(`${DIR}/hf_samples/overall.safetensors`);
  try {
    const chunks = [];
    for await (const chunk of modelChunks(reader)) chunks.push(chunk.type);
    assert.deepStrictEqual(chunks, ["header", ...new Array(9).fill("tensor")]);
  } finally {
    await reader.close();
  }
});

Deno.test("openSafetensors() closes the source of an invalid file and rejects bad options", async () => {
  let closed = 0;
  const source = sourceOf(rawSafetensors("[]"), "bad.safetensors");
  const counting = {
    name: source.name,
    size: source.size,
    read: (offset: number, length: number) => source.read(offset, length),
    stream: (start: number, end: number) => source.stream(start, end),
    close: () => {
      closed++;
      return Promise.resolve();
    },
  };
  await rejection(() => openSafetensors(counting), ModelFormatError, "not an object");
  assert.equal(closed, 1);
  await rejection(
    () => openSafetensors(sourceOf(rawSafetensors("{}")), { chunkSize: 0 }),
    RangeError,
    "chunk size 0 is not positive",
  );
});
