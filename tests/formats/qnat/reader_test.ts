import assert from "node:assert/strict";
import { ModelFormatError, UsageError } from "../../../src/errors.ts";
import { QNAT_FLAGS, QNAT_HEADER_SIZE, QNAT_KIND } from "../../../src/formats/qnat/header.ts";
import { openQnat } from "../../../src/formats/qnat/reader.ts";
import { QnatSink } from "../../../src/formats/qnat/sink.ts";
import { BlobSource } from "../../../src/io/blob_source.ts";
import { openFileSource } from "../../../src/io/file_source.ts";
import { dequantizeNf4, NF4_MAX_LEVEL_GAP, quantizeNf4 } from "../../../src/quant/nf4.ts";
import { ModelTensor } from "../../../src/pipeline/model.ts";
import { openModel } from "../../../src/pipeline/open_model.ts";
import {
  chunksOf,
  entryOf,
  f32Tensor,
  randomF32,
  smallModel,
  writeQnat,
} from "./_qnat_fixtures.ts";

async function readAll(reader: { tensors: readonly { open(): ReadableStream<Uint8Array> }[] }) {
  const out: Float32Array[] = [];
  for (const t of reader.tensors) {
    const parts: Uint8Array[] = [];
    for await (const c of t.open()) parts.push(c);
    const bytes = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
    let at = 0;
    for (const p of parts) {
      bytes.set(p, at);
      at += p.length;
    }
    out.push(new Float32Array(bytes.buffer));
  }
  return out;
}

Deno.test("QnatSink → openQnat() round trip matches quantizeNf4() exactly", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    for (
      const options of [
        {},
        { doubleQuant: true },
        { zeroPoint: true },
        { doubleQuant: true, zeroPoint: true, blockSize: 128 },
      ]
    ) {
      await t.step(JSON.stringify(options), async () => {
        const model = smallModel();
        const path = await writeQnat(dir, model, options);
        const reader = await openQnat(await openFileSource(path), { chunkSize: 512 });
        try {
          assert.equal(reader.header.format, "qnat");
          assert.equal(reader.metadata.quant_type, "nf4");
          assert.equal(reader.metadata.double_quant, options.doubleQuant === true);
          assert.equal(reader.metadata.compute_dtype, "float32");
          assert.equal(reader.header.metadata.name, "tiny");
          assert.deepEqual(reader.tensors.map((e) => e.stored.kind), [
            QNAT_KIND.NF4,
            QNAT_KIND.F32,
            QNAT_KIND.NF4,
          ]);
          const values = await readAll(reader);
          for (const [i, m] of model.entries()) {
            const x = new Float32Array(m.data.buffer);
            if (m.shape.length === 1) {
              assert.deepEqual(values[i], x, "F32 sections are exact");
              continue;
            }
            const expected = dequantizeNf4(quantizeNf4(x, options));
            assert.deepEqual(values[i], expected, `${m.name} decodes like quantizeNf4()`);
          }
        } finally {
          await reader.close();
        }
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("QnatSink reads a tensor twice only for double quantization", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (const [doubleQuant, opens] of [[false, 1], [true, 2]] as const) {
      let count = 0;
      const t = f32Tensor("w", [16, 64], randomF32(1024, 9));
      const entry = entryOf(t, 100, () => count++);
      const sink = await QnatSink.create(`${dir}/o.qnat`, { force: true, doubleQuant });
      await ReadableStream.from([
        { type: "header" as const, header: { format: "t", metadata: {}, tensors: [entry.info] } },
        { type: "tensor" as const, tensor: entry },
      ]).pipeTo(sink);
      assert.equal(count, opens);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("QnatSink rejects an NF4 tensor the block size does not divide, leaving nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/bad.qnat`;
    const tensors = [f32Tensor("w", [33, 65], randomF32(33 * 65, 4))];
    await assert.rejects(
      async () => chunksOf(tensors).pipeTo(await QnatSink.create(path)),
      (e: unknown) =>
        e instanceof RangeError && /2145 elements are not a multiple of the block size 64/.test(
          e.message,
        ) && /blockSize/.test(e.message),
    );
    assert.deepEqual([...Deno.readDirSync(dir)], []);
    // An existing output is refused without force.
    await Deno.writeFile(path, new Uint8Array(1));
    await assert.rejects(() => QnatSink.create(path), UsageError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openModel() detects QNAT by its magic and decodes to F32", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = await writeQnat(dir, smallModel(), { doubleQuant: true }, "x.bin");
    const model = await openModel(path);
    try {
      assert.equal(model.header.format, "qnat");
      const x = new Float32Array(smallModel()[2]!.data.buffer);
      const y = await new ModelTensor(model.reader.tensors[2]!).toFloat32();
      let absmax = 0;
      for (const v of x) absmax = Math.max(absmax, Math.abs(v));
      for (let i = 0; i < x.length; i++) {
        assert.ok(Math.abs(x[i]! - y[i]!) <= absmax * NF4_MAX_LEVEL_GAP / 2 + absmax / 255);
      }
    } finally {
      await model.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Field offsets of each tensor header of a file. */
function headerFields(bytes: Uint8Array) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const metadataSize = Number(view.getBigUint64(12, true));
  const count = view.getUint32(20, true);
  let at = QNAT_HEADER_SIZE + metadataSize;
  const out = [];
  for (let i = 0; i < count; i++) {
    const start = at;
    const nameLength = view.getUint16(at, true);
    at += 2 + nameLength;
    const kind = at;
    const ndim = view.getUint8(at + 1);
    at += 2 + 8 * ndim;
    out.push({
      start,
      kind,
      blockSize: at,
      blockCount: at + 4,
      dataOffset: at + 12,
      dataSize: at + 20,
      offset: Number(view.getBigUint64(at + 12, true)),
      size: Number(view.getBigUint64(at + 20, true)),
    });
    at += 28;
  }
  return { metadataSize, count, headers: out, end: at };
}

Deno.test("openQnat() rejects truncated and inconsistent files", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    const plain = await Deno.readFile(await writeQnat(dir, smallModel(), {}, "p.qnat"));
    const dq = await Deno.readFile(
      await writeQnat(dir, smallModel(), { doubleQuant: true }, "d.qnat"),
    );
    const f = headerFields(plain);
    const fd = headerFields(dq);
    const metaText = new TextDecoder().decode(
      plain.subarray(QNAT_HEADER_SIZE, QNAT_HEADER_SIZE + f.metadataSize),
    );
    const edit = (base: Uint8Array, change: (b: Uint8Array, v: DataView) => void) => {
      const b = base.slice();
      change(b, new DataView(b.buffer));
      return b;
    };
    const replaceMeta = (from: string, to: string) =>
      edit(plain, (b) => {
        assert.equal(from.length, to.length);
        const at = QNAT_HEADER_SIZE + metaText.indexOf(from);
        b.set(new TextEncoder().encode(to), at);
      });
    const h0 = f.headers[0]!;
    const h1 = f.headers[1]!;
    const h2 = f.headers[2]!;
    const cases: [string, Uint8Array<ArrayBuffer>, RegExp][] = [
      ["wrong magic", edit(plain, (b) => b.set([0x51, 0x4e, 0x41, 0x55])), /wrong magic/],
      ["file shorter than the header", plain.slice(0, 10), /file too short: 10 bytes/],
      ["version 2", edit(plain, (_, v) => v.setUint32(4, 2, true)), /unsupported version 2/],
      [
        "unknown flag",
        edit(plain, (_, v) => v.setUint32(8, 0x4, true)),
        /unknown flags 0x00000004/,
      ],
      [
        "metadata past the end",
        edit(plain, (_, v) => v.setBigUint64(12, 1_000_000n, true)),
        /metadata \[24, 1000024\) extends past the end of the file/,
      ],
      [
        "metadata over the limit",
        edit(plain, (_, v) => v.setBigUint64(12, 1n << 40n, true)),
        /metadata too large/,
      ],
      [
        "metadata not JSON",
        edit(plain, (b) => (b[QNAT_HEADER_SIZE] = 0x5b)),
        /metadata is not valid UTF-8 JSON/,
      ],
      ["bad compute_dtype", replaceMeta('"float32"', '"float99"'), /compute_dtype "float99"/],
      ["bad quant_type", replaceMeta('"nf4"', '"fp4"'), /quant_type "fp4" is not "nf4"/],
      [
        "flag without its metadata",
        edit(plain, (_, v) => v.setUint32(8, QNAT_FLAGS.DOUBLE_QUANT, true)),
        /double_quant false disagrees with the flags \(true\)/,
      ],
      [
        "tensor count too high",
        edit(plain, (_, v) => v.setUint32(20, 4, true)),
        /tensor header 3: name length 0/,
      ],
      [
        "tensor count past the file",
        edit(plain, (_, v) => v.setUint32(20, 200_000, true)),
        /tensor headers truncated/,
      ],
      [
        "header cut in the tensor headers",
        plain.slice(0, h1.blockCount),
        /tensor header 1: truncated|tensor headers truncated/,
      ],
      ["unknown kind", edit(plain, (b) => (b[h0.kind] = 7)), /unknown kind 7/],
      [
        "odd block size",
        edit(plain, (_, v) => v.setUint32(h0.blockSize, 63, true)),
        /block size 63 is not an even number/,
      ],
      [
        "block size does not divide",
        edit(plain, (_, v) => v.setUint32(h0.blockSize, 4096, true)),
        /2048 elements, not a multiple of its block size 4096/,
      ],
      [
        "block count wrong",
        edit(plain, (_, v) => v.setBigUint64(h0.blockCount, 31n, true)),
        /block count 31 does not match 2048 elements \/ block size 64/,
      ],
      [
        "F32 tensor with a block size",
        edit(plain, (_, v) => v.setUint32(h1.blockSize, 64, true)),
        /F32 tensor "norm" must have block size 0/,
      ],
      [
        "data size wrong",
        edit(plain, (_, v) => v.setBigUint64(h0.dataSize, BigInt(h0.size + 4), true)),
        /data size 1156 does not match its NF4 \[32,64\] section \(1152 bytes\)/,
      ],
      [
        "misaligned data offset",
        edit(plain, (_, v) => v.setBigUint64(h2.dataOffset, BigInt(h2.offset + 8), true)),
        /data_offset \d+ is not a multiple of 64/,
      ],
      [
        "data offset inside the headers",
        edit(plain, (_, v) => v.setBigUint64(h0.dataOffset, 0n, true)),
        /data_offset 0 is before the data region/,
      ],
      [
        "overlapping tensors",
        edit(plain, (_, v) => v.setBigUint64(h2.dataOffset, BigInt(h0.offset), true)),
        /overlap/,
      ],
      [
        "truncated data",
        plain.slice(0, plain.length - 10),
        /"b.weight" data \[\d+, \d+\) extends past the end of the file .*truncated/,
      ],
      [
        "trailing bytes",
        new Uint8Array([...plain, 0, 0, 0]),
        /3 unexpected bytes after the last data section/,
      ],
      [
        "zero-point flag without zero-point sections",
        edit(dq, (_, v) => v.setUint32(8, QNAT_FLAGS.DOUBLE_QUANT | QNAT_FLAGS.ZERO_POINTS, true)),
        /zero_points false disagrees with the flags \(true\)/,
      ],
    ];
    for (const [name, bytes, message] of cases) {
      await t.step(name, async () => {
        await assert.rejects(
          () => openQnat(new BlobSource(new Blob([bytes.slice()]), "bad.qnat")),
          (e: unknown) =>
            e instanceof ModelFormatError && e.format === "QNAT" &&
            e.message.startsWith('Cannot read QNAT file "bad.qnat": ') && message.test(e.reason),
        );
      });
    }
    // Payload checks happen when a tensor is read.
    const payloadCases: [string, Uint8Array<ArrayBuffer>, RegExp][] = [
      [
        "negative scale",
        edit(plain, (_, v) => v.setFloat32(h0.offset + 1024, -1, true)),
        /block 0 scale -1 is not a finite number/,
      ],
      [
        "NaN double-quantization factor",
        edit(dq, (_, v) => v.setFloat32(fd.headers[0]!.offset + 1024, NaN, true)),
        /double-quantization factor NaN/,
      ],
    ];
    for (const [name, bytes, message] of payloadCases) {
      await t.step(name, async () => {
        const reader = await openQnat(new BlobSource(new Blob([bytes.slice()]), "bad.qnat"));
        await assert.rejects(
          () => readAll(reader),
          (e: unknown) => e instanceof ModelFormatError && message.test(e.reason),
        );
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
