import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { ModelFormatError } from "../../../src/errors.ts";
import { openGguf } from "../../../src/formats/gguf/reader.ts";
import { openFileSource } from "../../../src/io/file_source.ts";
import { rawHeader, sourceOf } from "./_raw_gguf.ts";

const DATA = new URL("../../testdata/gguf/", import.meta.url);

interface Manifest {
  alignment: number;
  tensor_data_start: number;
  tensors: {
    name: string;
    type: string;
    ne: number[];
    numpy_shape: number[];
    abs_offset: number;
    n_bytes: number;
    raw_sha256: string;
  }[];
}

async function sha256(stream: ReadableStream<Uint8Array>, maxChunk: number): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of stream) {
    assert.ok(chunk.length <= maxChunk, `chunk of ${chunk.length} bytes exceeds ${maxChunk}`);
    hash.update(chunk);
  }
  return hash.digest("hex");
}

const MANIFESTS = [
  "tiny-llama-q8_0",
  "tiny-llama-q4_k_m",
  "tiny-llama-q6_k",
  "tiny-llama-bf16",
  "llama-2-tiny-random",
];

Deno.test("openGguf() matches every fixture manifest: types, shapes, offsets, sizes, raw bytes", async (t) => {
  for (const stem of MANIFESTS) {
    await t.step(stem, async () => {
      const manifest = JSON.parse(
        await Deno.readTextFile(new URL(`${stem}.manifest.json`, DATA)),
      ) as Manifest;
      const chunkSize = 64 * 1024;
      const model = await openGguf(await openFileSource(new URL(`${stem}.gguf`, DATA).pathname), {
        keepNames: true,
        chunkSize,
      });
      try {
        assert.equal(model.header.format, "gguf");
        assert.equal(model.gguf.alignment, manifest.alignment);
        assert.equal(model.gguf.dataOffset, manifest.tensor_data_start);
        const byName = new Map(manifest.tensors.map((m) => [m.name, m]));
        assert.equal(model.tensors.length, manifest.tensors.length);
        for (const [i, entry] of model.tensors.entries()) {
          const g = model.gguf.tensors[i]!;
          const m = byName.get(entry.info.name);
          assert.ok(m !== undefined, entry.info.name);
          assert.equal(g.name, m.name);
          assert.equal(entry.info.dtype, m.type, m.name);
          assert.deepEqual(g.ne, m.ne, m.name);
          assert.deepEqual(entry.info.shape, m.numpy_shape, m.name);
          assert.equal(model.gguf.dataOffset + g.offset, m.abs_offset, m.name);
          assert.equal(entry.info.byteLength, m.n_bytes, m.name);
          assert.equal(await sha256(entry.open(), chunkSize), m.raw_sha256, m.name);
        }
        // Entries re-open for a second pass.
        const first = model.tensors[0]!;
        assert.equal(
          await sha256(first.open(), chunkSize),
          byName.get(first.info.name)!.raw_sha256,
        );
      } finally {
        await model.close();
      }
    });
  }
});

Deno.test("openGguf() maps llama tensor names to Hugging Face names and reverses shapes", async () => {
  const model = await openGguf(
    await openFileSource(new URL("tiny-llama-q4_k_m.gguf", DATA).pathname),
  );
  try {
    const names = model.header.tensors.map((t) => t.name);
    // File order is kept.
    assert.deepEqual(
      names,
      model.gguf.tensors.map((t) => {
        return t.name
          .replace(/^token_embd\./, "model.embed_tokens.")
          .replace(/^output_norm\./, "model.norm.")
          .replace(/^output\./, "lm_head.")
          .replace(/^blk\.(\d+)\.attn_q\./, "model.layers.$1.self_attn.q_proj.")
          .replace(/^blk\.(\d+)\.attn_k\./, "model.layers.$1.self_attn.k_proj.")
          .replace(/^blk\.(\d+)\.attn_v\./, "model.layers.$1.self_attn.v_proj.")
          .replace(/^blk\.(\d+)\.attn_output\./, "model.layers.$1.self_attn.o_proj.")
          .replace(/^blk\.(\d+)\.ffn_gate\./, "model.layers.$1.mlp.gate_proj.")
          .replace(/^blk\.(\d+)\.ffn_up\./, "model.layers.$1.mlp.up_proj.")
          .replace(/^blk\.(\d+)\.ffn_down\./, "model.layers.$1.mlp.down_proj.")
          .replace(/^blk\.(\d+)\.attn_norm\./, "model.layers.$1.input_layernorm.")
          .replace(/^blk\.(\d+)\.ffn_norm\./, "model.layers.$1.post_attention_layernorm.");
      }),
    );
    assert.ok(names.includes("model.layers.1.mlp.down_proj.weight"));
    assert.ok(names.every((n) => !n.startsWith("blk.")));
    const embed = model.header.tensors.find((t) => t.name === "model.embed_tokens.weight")!;
    assert.deepEqual(embed, {
      name: "model.embed_tokens.weight",
      dtype: "Q4_K",
      shape: [512, 256],
      byteLength: 73728,
    });
    const down = model.header.tensors.find((t) =>
      t.name === "model.layers.0.mlp.down_proj.weight"
    )!;
    // ne = [768, 256] (768 columns): HF down_proj is [hidden, intermediate].
    assert.deepEqual(down.shape, [256, 768]);
    assert.deepEqual(model.tensors.map((e) => e.info), model.header.tensors);
  } finally {
    await model.close();
  }
});

Deno.test("openGguf() carries metadata and tokenizer arrays into APR metadata", async () => {
  const model = await openGguf(await openFileSource(new URL("tiny-llama-f32.gguf", DATA).pathname));
  try {
    const m = model.header.metadata;
    assert.equal(m.architecture, "llama");
    assert.equal(m.name, "tiny-llama-peer-fixture");
    assert.equal(m.original_format, "gguf");
    assert.equal(m.hidden_size, 256);
    assert.equal(m.num_layers, 2);
    assert.equal(m.num_heads, 4);
    assert.equal(m.num_kv_heads, 2);
    assert.equal(m.intermediate_size, 768);
    assert.equal(m.max_position_embeddings, 256);
    assert.equal(m.rope_theta, 10000);
    assert.equal(m.rope_type, 0);
    assert.equal(m.rms_norm_eps, Math.fround(1e-5));
    assert.equal(m.vocab_size, 512);
    assert.equal(m.hf_architecture, "LlamaForCausalLM");
    const vocab = m["tokenizer.vocabulary"] as string[];
    assert.equal(vocab.length, 512);
    assert.deepEqual(vocab.slice(0, 3), ["<unk>", "<s>", "</s>"]);
    assert.equal((m["tokenizer.scores"] as number[]).length, 512);
    assert.equal(m["tokenizer.bos_token_id"], 1);
    assert.equal(m["tokenizer.eos_token_id"], 2);
    assert.equal(m["tokenizer.model_type"], "llama");
    assert.deepEqual(m.special_tokens, { bos_token: "<s>", eos_token: "</s>", unk_token: "<unk>" });
    const verbatim = m.gguf_metadata as Record<string, { type: string; value: unknown }>;
    assert.deepEqual(verbatim["llama.rope.freq_base"], { type: "FLOAT32", value: 10000 });
    assert.equal(verbatim["tokenizer.ggml.tokens"], undefined); // big arrays live in tokenizer.*
    // Only one spelling per alias group (APR_V2.md §3).
    for (
      const alias of ["hidden_dim", "n_layers", "num_hidden_layers", "n_vocab", "context_length"]
    ) {
      assert.equal(alias in m, false, alias);
    }
  } finally {
    await model.close();
  }
});

Deno.test("openGguf() reads the GPT-2 vocabulary file: no tensors, merges in metadata", async () => {
  const model = await openGguf(
    await openFileSource(new URL("ggml-vocab-gpt-2.gguf", DATA).pathname),
  );
  try {
    assert.equal(model.tensors.length, 0);
    const m = model.header.metadata;
    assert.equal(m.architecture, "gpt2");
    assert.equal(m.vocab_size, 50257);
    assert.equal((m["tokenizer.merges"] as string[]).length, 50000);
    assert.equal(m["tokenizer.model_type"], "gpt2");
    assert.equal(m.special_tokens?.eos_token, "<|endoftext|>");
    assert.equal(m.rope_type, undefined); // gpt2 has no RoPE
  } finally {
    await model.close();
  }
});

Deno.test("openGguf() maps qwen2 names (with biases) and keeps unknown names", async () => {
  const b = rawHeader(3, 1)
    .kvStr("general.architecture", "qwen2")
    .tensor("blk.0.attn_q.bias", [32], 0, 0)
    .tensor("blk.0.attn_q.weight", [32, 2], 1, 128)
    .tensor("rope_freqs.weight", [8], 0, 256)
    .pad()
    .zeros(288)
    .bytes();
  const model = await openGguf(sourceOf(b, "q.gguf"));
  assert.deepEqual(model.header.tensors.map((t) => [t.name, t.shape, t.dtype]), [
    ["model.layers.0.self_attn.q_proj.bias", [32], "F32"],
    ["model.layers.0.self_attn.q_proj.weight", [2, 32], "F16"],
    ["rope_freqs.weight", [8], "F32"],
  ]);
  assert.equal(model.header.metadata.rope_type, 2);
  const kept = await openGguf(sourceOf(b, "q.gguf"), { keepNames: true });
  assert.equal(kept.header.tensors[0]?.name, "blk.0.attn_q.bias");
  // Non-llama architectures keep GGUF names.
  const gemma = rawHeader(1, 1).kvStr("general.architecture", "gemma").tensor(
    "blk.0.attn_q.weight",
    [4],
    0,
    0,
  )
    .pad().zeros(16).bytes();
  assert.equal((await openGguf(sourceOf(gemma))).header.tensors[0]?.name, "blk.0.attn_q.weight");
});

Deno.test("openGguf() rejects two tensors that map to one name, and a bad chunk size", async () => {
  const b = rawHeader(2, 1)
    .kvStr("general.architecture", "llama")
    .tensor("output.weight", [4], 0, 0)
    .tensor("lm_head.weight", [4], 0, 32)
    .pad()
    .zeros(64)
    .bytes();
  await assert.rejects(openGguf(sourceOf(b)), (e: unknown) => {
    assert.ok(e instanceof ModelFormatError);
    assert.match(
      e.message,
      /duplicate tensor "lm_head\.weight": both "output\.weight" and "lm_head\.weight" map to it/,
    );
    return true;
  });
  assert.equal((await openGguf(sourceOf(b), { keepNames: true })).tensors.length, 2);
  await assert.rejects(openGguf(sourceOf(b), { chunkSize: 0 }), RangeError);
});

Deno.test("openGguf() payload streams can be cancelled part way", async () => {
  const model = await openGguf(
    await openFileSource(new URL("tiny-llama-f32.gguf", DATA).pathname),
    { chunkSize: 1024 },
  );
  try {
    const reader = model.tensors[0]!.open().getReader();
    const first = await reader.read();
    assert.equal(first.value?.length, 1024);
    await reader.cancel();
    // The source stays usable for other entries.
    const second = await new Response(model.tensors[1]!.open()).arrayBuffer();
    assert.equal(second.byteLength, model.tensors[1]!.info.byteLength);
  } finally {
    await model.close();
  }
});
