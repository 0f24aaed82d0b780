import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { UsageError } from "../../../src/errors.ts";
import { GgufSink } from "../../../src/formats/gguf/sink.ts";
import { openGguf } from "../../../src/formats/gguf/reader.ts";
import { openFileSource } from "../../../src/io/file_source.ts";
import { type ModelChunk, modelChunks, type ProgressEvent } from "../../../src/tensor.ts";

const DATA = new URL("../../testdata/gguf/", import.meta.url);

async function digest(stream: ReadableStream<Uint8Array>): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of stream) hash.update(chunk);
  return hash.digest("hex");
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("GgufSink round-trips every fixture through APR metadata and Hugging Face names", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    for (
      const stem of [
        "tiny-llama-q4_k_m",
        "tiny-llama-q6_k",
        "tiny-llama-bf16",
        "llama-2-tiny-random",
        "ggml-vocab-gpt-2",
      ]
    ) {
      await t.step(stem, async () => {
        const input = await openGguf(await openFileSource(new URL(`${stem}.gguf`, DATA).pathname));
        const out = `${dir}/${stem}.gguf`;
        const events: ProgressEvent[] = [];
        try {
          await modelChunks(input).pipeTo(
            await GgufSink.create(out, { onProgress: (e) => events.push(e) }),
          );
          assert.equal(await exists(`${out}.partial`), false);
          const back = await openGguf(await openFileSource(out));
          try {
            // Metadata: every original KV pair comes back with its type and value
            // (general.file_type derived from the tensors, as llama.cpp guesses it),
            // plus general.quantization_version, which every export declares.
            const original = new Map(input.gguf.kv);
            assert.equal(back.gguf.kv.get("general.quantization_version")?.value, 2);
            assert.deepEqual(
              [...back.gguf.kv.keys()].filter((k) => k !== "general.quantization_version").sort(),
              [...original.keys()].filter((k) =>
                k !== "general.alignment" && k !== "general.quantization_version"
              ).sort(),
            );
            for (const [key, entry] of original) {
              if (key === "general.alignment") continue;
              const got = back.gguf.kv.get(key)!;
              assert.equal(got.type, entry.type, key);
              assert.deepEqual(got.value, entry.value, key);
              assert.deepEqual(got.arrayTypes, entry.arrayTypes, key);
            }
            // Tensors: GGUF names, ne, types and bytes as in the source.
            assert.deepEqual(
              back.gguf.tensors.map((x) => [x.name, x.dtype, x.ne, x.byteLength]),
              input.gguf.tensors.map((x) => [x.name, x.dtype, x.ne, x.byteLength]),
            );
            assert.deepEqual(back.header.tensors, input.header.tensors);
            for (const [i, entry] of back.tensors.entries()) {
              assert.equal(await digest(entry.open()), await digest(input.tensors[i]!.open()));
              assert.equal(back.gguf.tensors[i]!.offset % 32, 0);
            }
          } finally {
            await back.close();
          }
          const last = events.at(-1)!;
          assert.equal(last.itemsDone, input.tensors.length);
          assert.equal(last.bytesDone, last.bytesTotal);
          assert.equal(last.phase, "export");
        } finally {
          await input.close();
        }
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

function header(dtype: "APR_Q8" | "F32"): ModelChunk {
  return {
    type: "header",
    header: {
      format: "apr",
      metadata: { architecture: "llama", hidden_size: 4 },
      tensors: [{
        name: "model.norm.weight",
        dtype,
        shape: [4],
        byteLength: dtype === "F32" ? 16 : 8,
      }],
    },
  };
}

function tensor(name: string, bytes: number): ModelChunk {
  return {
    type: "tensor",
    tensor: {
      info: { name, dtype: "F32", shape: [4], byteLength: 16 },
      open: () => new Blob([new Uint8Array(bytes)]).stream(),
    },
  };
}

Deno.test("GgufSink rejects bad streams and leaves no output behind", async (t) => {
  const dir = await Deno.makeTempDir();
  const out = `${dir}/x.gguf`;
  const cases: [string, ModelChunk[], ErrorConstructor, RegExp][] = [
    [
      "APR_Q8 (not a ggml type)",
      [header("APR_Q8")],
      TypeError,
      /tensor "model\.norm\.weight" is APR_Q8, which GGUF cannot hold; convert it first/,
    ],
    [
      "tensor out of order",
      [header("F32"), tensor("other", 16)],
      TypeError,
      /tensor "other" arrived, expected "model\.norm\.weight"/,
    ],
    [
      "short payload",
      [header("F32"), tensor("model.norm.weight", 12)],
      RangeError,
      /yielded 12 of its 16 bytes/,
    ],
    [
      "long payload",
      [header("F32"), tensor("model.norm.weight", 20)],
      RangeError,
      /yields more than its 16 bytes/,
    ],
    ["missing tensors", [header("F32")], TypeError, /the stream ended after 0 of 1 tensors/],
    [
      "tensor before header",
      [tensor("model.norm.weight", 16)],
      TypeError,
      /a tensor arrived before the header/,
    ],
  ];
  try {
    for (const [name, chunks, cls, pattern] of cases) {
      await t.step(name, async () => {
        const sink = await GgufSink.create(out);
        await assert.rejects(ReadableStream.from(chunks).pipeTo(sink), (e: unknown) => {
          assert.ok(e instanceof cls, `${e}`);
          assert.match((e as Error).message, pattern);
          return true;
        });
        assert.equal(await exists(out), false);
        assert.equal(await exists(`${out}.partial`), false);
      });
    }
    await t.step("existing output without force", async () => {
      await Deno.writeTextFile(out, "keep me");
      await assert.rejects(GgufSink.create(out), (e: unknown) => {
        assert.ok(e instanceof UsageError);
        assert.match((e as Error).message, /it exists; use force: true to overwrite it/);
        return true;
      });
      await ReadableStream.from([header("F32"), tensor("model.norm.weight", 16)])
        .pipeTo(await GgufSink.create(out, { force: true }));
      const back = await openGguf(await openFileSource(out));
      assert.equal(back.gguf.tensors[0]?.name, "output_norm.weight");
      assert.equal(back.gguf.kv.get("llama.embedding_length")?.value, 4);
      await back.close();
    });
    await t.step("alignment not a power of two", async () => {
      await assert.rejects(GgufSink.create(`${dir}/y.gguf`, { alignment: 3 }), RangeError);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("GgufSink removes the partial file when the upstream fails", async () => {
  const dir = await Deno.makeTempDir();
  const out = `${dir}/x.gguf`;
  try {
    let sent = false;
    const failing = new ReadableStream<ModelChunk>({
      pull(controller) {
        if (!sent) {
          sent = true;
          controller.enqueue(header("F32"));
        } else {
          controller.error(new Error("network down"));
        }
      },
    });
    await assert.rejects(failing.pipeTo(await GgufSink.create(out)), /network down/);
    assert.equal(await exists(out), false);
    assert.equal(await exists(`${out}.partial`), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("GgufSink writes the fileType it is given (a preset's mix) instead of the derived one", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const input = await openGguf(
      await openFileSource(new URL("tiny-llama-q4_k_m.gguf", DATA).pathname),
    );
    const out = `${dir}/s.gguf`;
    try {
      await modelChunks(input).pipeTo(await GgufSink.create(out, { fileType: 14 }));
    } finally {
      await input.close();
    }
    const back = await openGguf(await openFileSource(out));
    assert.equal(back.gguf.kv.get("general.file_type")?.value, 14);
    await back.close();
    await assert.rejects(
      GgufSink.create(`${dir}/bad.gguf`, { fileType: -1 }),
      (e: unknown) => e instanceof RangeError && /file type -1/.test(e.message),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("GgufSink reports progress within a tensor, chunk by chunk (as the APR sink does)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const input = await openGguf(
      await openFileSource(new URL("tiny-llama-f32.gguf", DATA).pathname),
    );
    // Each payload in 4 KiB pieces, as a quantizer hands a large tensor over.
    const pieces = (stream: ReadableStream<Uint8Array>) =>
      stream.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            for (let at = 0; at < chunk.length; at += 4096) {
              controller.enqueue(chunk.slice(at, at + 4096));
            }
          },
        }),
      );
    const model = {
      ...input,
      tensors: input.tensors.map((t) => ({ info: t.info, open: () => pieces(t.open()) })),
    };
    const events: ProgressEvent[] = [];
    await modelChunks(model).pipeTo(
      await GgufSink.create(`${dir}/x.gguf`, { onProgress: (e) => events.push(e) }),
    );
    const largest = input.header.tensors.reduce((a, b) => a.byteLength >= b.byteLength ? a : b);
    const within = events.filter((e, i) =>
      i > 0 && e.itemsDone === events[i - 1]!.itemsDone && e.bytesDone > events[i - 1]!.bytesDone
    );
    assert.ok(
      within.length >= Math.floor(largest.byteLength / 4096) - 1,
      `${within.length} reports inside tensors (largest: ${largest.byteLength} bytes)`,
    );
    assert.equal(events.at(-1)!.bytesDone, events.at(-1)!.bytesTotal);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
