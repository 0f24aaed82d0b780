import assert from "node:assert/strict";
import { parseGgufHeader } from "../../../src/formats/gguf/header.ts";
import type { GgufKvEntry } from "../../../src/formats/gguf/header.ts";
import { aprToGgufKv, ggufToAprMetadata } from "../../../src/formats/gguf/metadata.ts";
import { sizeLabel } from "../../../src/arch/hf_model_card.ts";
import { openFileSource } from "../../../src/io/file_source.ts";

const DATA = new URL("../../testdata/gguf/", import.meta.url);

function kvOf(pairs: [string, number, unknown, number[]?][]): Map<string, GgufKvEntry> {
  return new Map(pairs.map(([key, type, value, arrayTypes], i) => [
    key,
    arrayTypes === undefined
      ? { type, value, offset: i } as GgufKvEntry
      : { type, value, arrayTypes, offset: i } as GgufKvEntry,
  ]));
}

Deno.test("ggufToAprMetadata() maps a qwen2 model: NEOX RoPE, HF class, chat template, tokenizer", () => {
  const m = ggufToAprMetadata(kvOf([
    ["general.architecture", 8, "qwen2"],
    ["general.name", 8, "Qwen2.5 0.5B Instruct"],
    ["general.license", 8, "apache-2.0"],
    ["qwen2.block_count", 4, 24],
    ["qwen2.context_length", 4, 32768],
    ["qwen2.embedding_length", 4, 896],
    ["qwen2.feed_forward_length", 4, 4864],
    ["qwen2.attention.head_count", 4, 14],
    ["qwen2.attention.head_count_kv", 4, 2],
    ["qwen2.rope.freq_base", 6, 1000000],
    ["qwen2.attention.layer_norm_rms_epsilon", 6, Math.fround(1e-6)],
    ["tokenizer.ggml.model", 8, "gpt2"],
    ["tokenizer.ggml.pre", 8, "qwen2"],
    ["tokenizer.ggml.tokens", 9, ["a", "b", "<|im_end|>"], [8]],
    ["tokenizer.ggml.merges", 9, ["a b"], [8]],
    ["tokenizer.ggml.eos_token_id", 4, 2],
    ["tokenizer.ggml.padding_token_id", 4, 2],
    ["tokenizer.chat_template", 8, "{{ messages }}"],
  ]));
  assert.equal(m.architecture, "qwen2");
  assert.equal(m.hf_architecture, "Qwen2ForCausalLM");
  assert.equal(m.hf_model_type, "qwen2");
  assert.equal(m.rope_type, 2);
  assert.equal(m.license, "apache-2.0");
  assert.equal(m.hidden_size, 896);
  assert.equal(m.num_layers, 24);
  assert.equal(m.num_heads, 14);
  assert.equal(m.num_kv_heads, 2);
  assert.equal(m.intermediate_size, 4864);
  assert.equal(m.max_position_embeddings, 32768);
  assert.equal(m.rope_theta, 1000000);
  assert.equal(m.vocab_size, 3);
  assert.equal(m.chat_template, "{{ messages }}");
  assert.equal(m["tokenizer.chat_template"], "{{ messages }}");
  assert.deepEqual(m["tokenizer.vocabulary"], ["a", "b", "<|im_end|>"]);
  assert.deepEqual(m["tokenizer.merges"], ["a b"]);
  assert.equal(m["tokenizer.model_type"], "gpt2");
  assert.equal(m["tokenizer.eos_token_id"], 2);
  assert.equal(m["tokenizer.bos_token_id"], undefined);
  assert.deepEqual(m.special_tokens, { eos_token: "<|im_end|>", pad_token: "<|im_end|>" });
  const verbatim = m.gguf_metadata as Record<string, unknown>;
  assert.deepEqual(verbatim["tokenizer.ggml.pre"], { type: "STRING", value: "qwen2" });
  assert.deepEqual(verbatim["tokenizer.ggml.tokens"], {
    type: "ARRAY",
    array_types: ["STRING"],
    value: ["a", "b", "<|im_end|>"],
  });
  assert.equal(verbatim["tokenizer.chat_template"], undefined);
  // The APR field order: known fields, then custom keys (APR_V2.md §3).
  const keys = Object.keys(m);
  assert.ok(keys.indexOf("rope_type") < keys.indexOf("tokenizer.vocabulary"));
});

Deno.test("ggufToAprMetadata() takes rope_type and the HF class from the GGUF architecture's family (src/arch/), every family's", async (t) => {
  const cases: [string, number | undefined, string | undefined][] = [
    ["llama", 0, "LlamaForCausalLM"],
    ["llama4", 0, "Llama4ForCausalLM"],
    ["mistral3", 0, undefined],
    ["qwen2vl", 2, undefined],
    ["qwen3vl", 2, undefined],
    ["qwen3vlmoe", 2, undefined],
    ["gemma3", 2, "Gemma3ForCausalLM"],
    ["phi3", 2, "Phi3ForCausalLM"],
    ["granite", 0, "GraniteForCausalLM"],
    ["falcon", 2, "FalconForCausalLM"],
    // Not a family: llama.cpp's RoPE type only.
    ["deci", 0, undefined],
    ["tiny_made_up", undefined, undefined],
  ];
  for (const [arch, ropeType, hfClass] of cases) {
    await t.step(arch, () => {
      const m = ggufToAprMetadata(kvOf([["general.architecture", 8, arch]]));
      assert.equal(m.architecture, arch);
      assert.equal(m.rope_type, ropeType);
      assert.equal(m.hf_architecture, hfClass);
    });
  }
});

Deno.test("ggufToAprMetadata() then JSON then aprToGgufKv() gives back every KV pair exactly", async (t) => {
  for (const stem of ["example", "tiny-llama-q4_k_m", "llama-2-tiny-random", "ggml-vocab-gpt-2"]) {
    await t.step(stem, async () => {
      const source = await openFileSource(new URL(`${stem}.gguf`, DATA).pathname);
      try {
        const h = await parseGgufHeader(source);
        // APR stores metadata as JSON: the mapping must survive it (64-bit values included).
        const metadata = JSON.parse(JSON.stringify(ggufToAprMetadata(h.kv)));
        const back = aprToGgufKv(metadata);
        const expected = [...h.kv.keys()];
        assert.deepEqual([...back.keys()].sort(), expected.sort());
        for (const key of expected) {
          const a = h.kv.get(key)!;
          const b = back.get(key)!;
          assert.equal(b.type, a.type, key);
          // JSON has no -0: scores of -0.0 come back as 0 (the one loss APR's JSON imposes).
          const noNegativeZero = (v: unknown): unknown =>
            Array.isArray(v) ? v.map(noNegativeZero) : Object.is(v, -0) ? 0 : v;
          assert.deepEqual(b.value, noNegativeZero(a.value), key);
          assert.deepEqual(b.arrayTypes, a.arrayTypes, key);
        }
      } finally {
        await source.close();
      }
    });
  }
});

Deno.test("aprToGgufKv() maps plain APR metadata (no gguf_metadata) with llama.cpp's types", () => {
  const kv = aprToGgufKv({
    model_type: "",
    name: "m",
    architecture: "llama",
    hidden_size: 64,
    num_layers: 2,
    num_heads: 4,
    num_kv_heads: 2,
    intermediate_size: 128,
    max_position_embeddings: 512,
    rope_theta: 10000,
    rms_norm_eps: 1e-5,
    vocab_size: 3,
    "tokenizer.vocabulary": ["<s>", "</s>", "a"],
    "tokenizer.scores": [0, 0, -1],
    "tokenizer.bos_token_id": 0,
    "tokenizer.eos_token_id": 1,
    "tokenizer.model_type": "llama",
    chat_template: "{{x}}",
  });
  // The keys llama.cpp's converter writes for a llama checkpoint, in its order.
  assert.deepEqual([...kv].map(([k, v]) => [k, v.type]), [
    ["general.architecture", 8],
    ["general.type", 8],
    ["general.name", 8],
    ["llama.block_count", 4],
    ["llama.context_length", 4],
    ["llama.embedding_length", 4],
    ["llama.feed_forward_length", 4],
    ["llama.attention.head_count", 4],
    ["llama.attention.head_count_kv", 4],
    ["llama.rope.freq_base", 6],
    ["llama.attention.layer_norm_rms_epsilon", 6],
    ["llama.vocab_size", 4],
    ["llama.rope.dimension_count", 4],
    ["tokenizer.ggml.model", 8],
    ["tokenizer.ggml.tokens", 9],
    ["tokenizer.ggml.scores", 9],
    ["tokenizer.ggml.bos_token_id", 4],
    ["tokenizer.ggml.eos_token_id", 4],
    ["tokenizer.chat_template", 8],
  ]);
  assert.equal(kv.get("llama.rope.dimension_count")?.value, 16);
  assert.equal(kv.get("llama.vocab_size")?.value, 3);
  assert.deepEqual(kv.get("tokenizer.ggml.scores")?.arrayTypes, [6]);
  assert.equal(kv.get("llama.rope.freq_base")?.value, 10000);
});

Deno.test("aprToGgufKv() lets edited APR fields win over gguf_metadata, and rejects a malformed one", () => {
  const kv = aprToGgufKv({
    architecture: "llama",
    hidden_size: 128,
    gguf_metadata: {
      "general.architecture": { type: "STRING", value: "llama" },
      "llama.embedding_length": { type: "UINT32", value: 64 },
      "general.file_type": { type: "UINT32", value: 15 },
      "general.alignment": { type: "UINT32", value: 64 },
      "x.big": { type: "UINT64", value: "18446744073709551615" },
    },
  });
  assert.equal(kv.get("llama.embedding_length")?.value, 128);
  assert.equal(kv.get("x.big")?.value, 2n ** 64n - 1n);
  // The source's file type stays unless the export gives its own.
  assert.equal(kv.get("general.file_type")?.value, 15);
  assert.equal(
    aprToGgufKv({ gguf_metadata: { "general.file_type": { type: "UINT32", value: 15 } } }, {
      fileType: 32,
    }).get("general.file_type")?.value,
    32,
  );
  assert.equal(kv.has("general.alignment"), false);
  assert.throws(
    () => aprToGgufKv({ gguf_metadata: { "a.b": { type: "NOPE", value: 1 } } }),
    (e: unknown) =>
      e instanceof TypeError && /gguf_metadata\["a\.b"\] is malformed/.test(e.message),
  );
  assert.throws(
    () => aprToGgufKv({ gguf_metadata: [] }),
    (e: unknown) => e instanceof TypeError && /gguf_metadata is not an object/.test(e.message),
  );
});

Deno.test("aprToGgufKv() writes llama.cpp's architecture name and the export's file facts", () => {
  const kv = aprToGgufKv(
    { architecture: "mistral", hidden_size: 64, num_heads: 8, head_dim: 8, vocab_size: 100 },
    { fileType: 15, parameterCount: 7_241_732_096, quantizationVersion: 2 },
  );
  assert.equal(kv.get("general.architecture")?.value, "llama");
  assert.equal(kv.get("general.size_label")?.value, "7.2B");
  assert.equal(kv.get("general.file_type")?.value, 15);
  assert.equal(kv.get("general.quantization_version")?.value, 2);
  assert.equal(kv.get("llama.attention.key_length")?.value, 8);
  assert.equal(kv.get("llama.attention.value_length")?.value, 8);
  assert.equal(kv.get("llama.rope.dimension_count")?.value, 8);
  assert.equal(kv.get("llama.vocab_size")?.value, 100);
  assert.equal(sizeLabel(279_168), "279K");
  assert.equal(sizeLabel(1_313_024), "1.3M");
  // A GGUF-born model keeps the keys its file had: none are invented.
  const fromGguf = aprToGgufKv({
    architecture: "llama",
    head_dim: 8,
    gguf_metadata: { "general.architecture": { type: "STRING", value: "llama" } },
  });
  assert.equal(fromGguf.has("general.type"), false);
  assert.equal(fromGguf.has("llama.attention.value_length"), false);
  assert.equal(fromGguf.has("llama.rope.dimension_count"), false);
});

Deno.test("ggufToAprMetadata() writes aprender's tokenizer keys (pre_type, padding_token_id, add_bos_token) and keeps the key order for the export (issues 19, 26)", () => {
  const entry = (type: number, value: unknown, offset = 0): GgufKvEntry =>
    ({ type, value, offset }) as GgufKvEntry;
  const tokens = Array.from({ length: 100 }, (_, i) => `t${i}`);
  const kv = new Map<string, GgufKvEntry>([
    ["general.architecture", entry(8, "qwen2")],
    ["tokenizer.ggml.model", entry(8, "gpt2")],
    ["tokenizer.ggml.pre", entry(8, "qwen2")],
    ["tokenizer.ggml.tokens", { type: 9, arrayTypes: [8], value: tokens, offset: 0 }],
    ["tokenizer.ggml.padding_token_id", entry(4, 5)],
    ["tokenizer.ggml.add_bos_token", entry(7, false)],
    ["general.quantization_version", entry(4, 2)],
  ]);
  const m = ggufToAprMetadata(kv);
  assert.equal(m["tokenizer.pre_type"], "qwen2");
  assert.equal(m["tokenizer.padding_token_id"], 5);
  assert.equal(m["tokenizer.add_bos_token"], false);
  // The token list (left out of gguf_metadata) goes back to its place on export.
  assert.deepEqual([...aprToGgufKv(m).keys()], [...kv.keys()]);
});
