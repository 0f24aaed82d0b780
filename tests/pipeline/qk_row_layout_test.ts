/**
 * Issue 10 item 2: Q/K rows between Hugging Face's layout and llama.cpp's
 * interleaved one, read in the target order from a random-access source.
 */

import assert from "node:assert/strict";
import { qkRowLayout, reorderQkRows } from "../../src/pipeline/qk_row_layout.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import type { ModelChunk, ModelHeader, TensorEntry, TensorInfo } from "../../src/tensor.ts";
import { DEMO_MODEL, testdata, withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile, readValues, sameBytes } from "../interop/_files.ts";
import { permuteQkRows } from "../_qk_rows.ts";

function pattern(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 2654435761) >>> 24;
  return out;
}

/** A random-access entry that records what was read. */
function recordingEntry(info: TensorInfo, bytes: Uint8Array, withSlice: boolean) {
  const reads: number[] = [];
  let opened = 0;
  const entry: TensorEntry = {
    info,
    open: () => {
      opened++;
      return ReadableStream.from([
        bytes.slice(0, bytes.length >> 1),
        bytes.slice(bytes.length >> 1),
      ]);
    },
    ...(withSlice
      ? {
        slice: (start: number, end: number) => {
          reads.push(end - start);
          return ReadableStream.from([bytes.slice(start, end)]);
        },
      }
      : {}),
  };
  return { entry, reads, opened: () => opened };
}

async function run(
  header: ModelHeader,
  entries: TensorEntry[],
  target: "hf" | "interleaved",
): Promise<{ header: ModelHeader; payloads: Map<string, Uint8Array> }> {
  const chunks: ModelChunk[] = [
    { type: "header", header },
    ...entries.map((tensor) => ({ type: "tensor" as const, tensor })),
  ];
  const out = await Array.fromAsync(ReadableStream.from(chunks).pipeThrough(reorderQkRows(target)));
  const payloads = new Map<string, Uint8Array>();
  for (const c of out.slice(1)) {
    if (c.type !== "tensor") continue;
    const parts = await Array.fromAsync(c.tensor.open());
    const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      bytes.set(p, at);
      at += p.length;
    }
    payloads.set(c.tensor.info.name, bytes);
  }
  return { header: (out[0] as { header: ModelHeader }).header, payloads };
}

Deno.test("reorderQkRows() reads rows in llama.cpp's order in ~1 MiB batches, never the whole tensor", async () => {
  // 4096 rows of 256 F32 (4 MiB), 32 heads; K: 1024 rows, 8 KV heads; Q4_K rows of 256 values.
  const q: TensorInfo = {
    name: "model.layers.0.self_attn.q_proj.weight",
    dtype: "F32",
    shape: [4096, 256],
    byteLength: 4096 * 1024,
  };
  const k: TensorInfo = {
    name: "model.layers.0.self_attn.k_proj.weight",
    dtype: "Q4_K",
    shape: [1024, 256],
    byteLength: 1024 * 144,
  };
  const v: TensorInfo = { ...k, name: "model.layers.0.self_attn.v_proj.weight" };
  const metadata = { architecture: "llama", num_heads: 32, num_kv_heads: 8, rope_type: 2 };
  const header: ModelHeader = { format: "test", metadata, tensors: [q, k, v] };
  const data = [pattern(q.byteLength), pattern(k.byteLength), pattern(v.byteLength)];
  const recorders = [q, k, v].map((info, i) => recordingEntry(info, data[i]!, true));
  const { header: out, payloads } = await run(header, recorders.map((r) => r.entry), "interleaved");
  assert.equal(out.metadata.rope_type, 0);
  assert.deepEqual(out.tensors, header.tensors);
  assert.ok(sameBytes(payloads.get(q.name)!, permuteQkRows(data[0]!, 4096, 32)));
  assert.ok(sameBytes(payloads.get(k.name)!, permuteQkRows(data[1]!, 1024, 8)));
  assert.ok(sameBytes(payloads.get(v.name)!, data[2]!), "V is not touched");
  for (const r of recorders.slice(0, 2)) {
    assert.equal(r.opened(), 0, "reordered tensors are read by range, not streamed whole");
    assert.ok(Math.max(...r.reads) <= (1 << 20) + 2 * 1024, `largest read ${Math.max(...r.reads)}`);
  }
  assert.ok(recorders[0]!.reads.length >= 4, "the 4 MiB Q tensor takes several batches");
  assert.equal(recorders[2]!.reads.length, 0);

  // Without random access, one head at a time; and back again is the identity.
  const streamed = await run(
    header,
    [q, k, v].map((info, i) => recordingEntry(info, data[i]!, false).entry),
    "interleaved",
  );
  assert.ok(sameBytes(streamed.payloads.get(q.name)!, payloads.get(q.name)!));
  assert.ok(sameBytes(streamed.payloads.get(k.name)!, payloads.get(k.name)!));
  const back = await run(
    out,
    [q, k, v].map((info) => recordingEntry(info, payloads.get(info.name)!, true).entry),
    "hf",
  );
  assert.equal(back.header.metadata.rope_type, 2);
  for (const [i, info] of [q, k, v].entries()) {
    assert.ok(sameBytes(back.payloads.get(info.name)!, data[i]!), info.name);
  }
});

Deno.test("qkRowLayout() reads rope_type, and leaves NEOX architectures alone", async () => {
  assert.equal(qkRowLayout({ architecture: "llama", rope_type: 0 }), "interleaved");
  assert.equal(qkRowLayout({ architecture: "llama", rope_type: 2 }), "hf");
  assert.equal(qkRowLayout({ architecture: "llama", original_format: "gguf" }), "interleaved");
  assert.equal(qkRowLayout({ architecture: "llama", original_format: "safetensors" }), "hf");
  assert.equal(qkRowLayout({ architecture: "qwen2", rope_type: 2 }), undefined);
  assert.equal(qkRowLayout({ architecture: "qwen2", rope_type: 0 }), undefined);
  const info: TensorInfo = {
    name: "model.layers.0.self_attn.q_proj.weight",
    dtype: "F32",
    shape: [6, 2],
    byteLength: 48,
  };
  await assert.rejects(
    run(
      { format: "t", metadata: { architecture: "llama", num_heads: 2 }, tensors: [info] },
      [],
      "interleaved",
    ),
    (e: unknown) =>
      e instanceof RangeError && /q_proj.*6 rows do not split into 2 heads/.test(e.message),
  );
});

Deno.test("GGUF (llama.cpp's conversion of tiny-llama) → APR → SafeTensors has the Hugging Face checkpoint's rows; → GGUF again is unchanged", async () => {
  await withTempDir(async (dir) => {
    const gguf = testdata("gguf/hf-convert/tiny-llama-hf-f32.gguf");
    const apr = `${dir}/from-gguf.apr`;
    await convertModel(gguf, apr);
    const model = await openModel(apr);
    // Issue 18 item 4: a GGUF import of a known family has Hugging Face's rows.
    assert.equal(model.header.metadata.rope_type, 2, "APR says its rows are Hugging Face's");
    await model.close();
    const st = `${dir}/back.safetensors`;
    await convertModel(apr, st);
    // The converter's F32 holds the checkpoint's BF16 values exactly, so every
    // tensor must equal the checkpoint, Q and K included.
    const want = await readValues(DEMO_MODEL);
    const got = await readValues(st);
    assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort());
    for (const [name, values] of want) {
      assert.ok(got.get(name)!.every((v, i) => Object.is(v, values[i])), name);
    }
    const again = `${dir}/again.gguf`;
    await convertModel(apr, again);
    const [a, b] = [await readGgufFile(again), await readGgufFile(gguf)];
    for (const [name, t] of b.tensors) {
      assert.ok(sameBytes(a.tensors.get(name)!.bytes, t.bytes), name);
    }
  });
});
