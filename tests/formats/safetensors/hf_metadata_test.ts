import assert from "node:assert/strict";
import {
  aprMetadataFromHf,
  MAX_CONFIG_BYTES,
  readHfCompanions,
} from "../../../src/formats/safetensors/hf_metadata.ts";
import { ModelFormatError } from "../../../src/errors.ts";
import { MemoryModelFiles } from "../../sources/_memory_files.ts";

const MINICPM = Deno.readTextFileSync("tests/testdata/safetensors/other/minicpm3-4b-config.json");

/** A tiny BPE tokenizer.json in the newer merges-as-pairs style, with a hole at id 5. */
const TOKENIZER = {
  version: "1.0",
  added_tokens: [
    { id: 0, content: "<s>", special: true },
    { id: 1, content: "</s>", special: true },
    { id: 7, content: "<|im_start|>", special: true },
    { id: 8, content: "<|im_end|>", special: true },
  ],
  model: {
    type: "BPE",
    vocab: { "<s>": 0, "</s>": 1, "a": 2, "b": 3, "ab": 4, "abb": 6 },
    merges: [["a", "b"], ["ab", "b"]],
  },
};

const TOKENIZER_CONFIG = {
  bos_token: { content: "<s>", lstrip: false, __type: "AddedToken" },
  eos_token: "</s>",
  unk_token: null,
  chat_template: "{% for m in messages %}{{ m.content }}{% endfor %}",
};

Deno.test("aprMetadataFromHf() maps the real MiniCPM3 config.json with one spelling per field", () => {
  const m = aprMetadataFromHf({ config: JSON.parse(MINICPM) });
  assert.deepStrictEqual(m, {
    architecture: "minicpm3",
    hf_architecture: "MiniCPM3ForCausalLM",
    hf_model_type: "minicpm3",
    hidden_size: 2560,
    num_layers: 62,
    num_heads: 40,
    num_kv_heads: 40,
    vocab_size: 73448,
    intermediate_size: 6400,
    max_position_embeddings: 32768,
    rms_norm_eps: 1e-5,
    // A family now (MiniCPM3): its Q/K rows are transformers', and its class ties by default.
    rope_type: 2,
    tied_embeddings: true,
    "tokenizer.bos_token_id": 1,
    "tokenizer.eos_token_id": 2,
    // config.json itself, for what a family derives from it on export (src/arch/).
    hf_config: JSON.parse(MINICPM),
  });
  // APR_V2.md §3 alias trap: no second spelling of any group.
  for (
    const alias of ["num_hidden_layers", "num_attention_heads", "num_key_value_heads", "n_embd"]
  ) {
    assert.equal(alias in m, false, alias);
  }
});

Deno.test("aprMetadataFromHf() maps HF architectures and alternative spellings", async (t) => {
  const rows: [string, Record<string, unknown>, Partial<Record<string, unknown>>][] = [
    ["LlamaForCausalLM → llama", { architectures: ["LlamaForCausalLM"], model_type: "llama" }, {
      architecture: "llama",
    }],
    ["Qwen2ForCausalLM → qwen2", { architectures: ["Qwen2ForCausalLM"] }, {
      architecture: "qwen2",
    }],
    ["MistralForCausalLM → mistral", { architectures: ["MistralForCausalLM"] }, {
      architecture: "mistral",
    }],
    ["Phi3ForCausalLM → phi3", { architectures: ["Phi3ForCausalLM"] }, { architecture: "phi3" }],
    ["Gemma2ForCausalLM → gemma2", { architectures: ["Gemma2ForCausalLM"] }, {
      architecture: "gemma2",
    }],
    ["unknown class → lowercased model_type", {
      architectures: ["FooForCausalLM"],
      model_type: "FooBar",
    }, { architecture: "foobar", hf_model_type: "FooBar" }],
    ["GPT-2 spellings", {
      model_type: "gpt2",
      n_embd: 768,
      n_layer: 12,
      n_head: 12,
      n_positions: 1024,
      layer_norm_epsilon: 1e-5,
    }, {
      hidden_size: 768,
      num_layers: 12,
      num_heads: 12,
      num_kv_heads: 12,
      max_position_embeddings: 1024,
      rms_norm_eps: 1e-5,
      rope_type: undefined, // no RoPE: no rope_type
    }],
    ["rope_theta, head_dim, experts, tied embeddings", {
      rope_theta: 1000000,
      head_dim: 128,
      num_local_experts: 8,
      num_experts_per_tok: 2,
      tie_word_embeddings: true,
    }, {
      rope_theta: 1000000,
      rope_type: 2, // HF layout rotates with rotate_half: NEOX
      head_dim: 128,
      num_experts: 8,
      num_experts_per_tok: 2,
      tied_embeddings: true,
    }],
    ["text_config of a multimodal config", {
      architectures: ["Gemma3ForConditionalGeneration"],
      text_config: { hidden_size: 2560, num_hidden_layers: 34 },
    }, { architecture: "gemma3", hidden_size: 2560, num_layers: 34 }],
  ];
  for (const [name, config, expected] of rows) {
    await t.step(name, () => {
      const m = aprMetadataFromHf({ config });
      for (const [k, v] of Object.entries(expected)) assert.deepStrictEqual(m[k], v, k);
    });
  }
});

Deno.test("aprMetadataFromHf() turns tokenizer files into realizar's tokenizer keys", () => {
  const m = aprMetadataFromHf({
    config: { vocab_size: 12 },
    tokenizer: TOKENIZER,
    tokenizerConfig: TOKENIZER_CONFIG,
  });
  assert.deepStrictEqual(m["tokenizer.vocabulary"], [
    "<s>",
    "</s>",
    "a",
    "b",
    "ab",
    "[PAD5]",
    "abb",
    "<|im_start|>",
    "<|im_end|>",
    "[PAD9]",
    "[PAD10]",
    "[PAD11]",
  ]);
  assert.deepStrictEqual(m["tokenizer.merges"], ["a b", "ab b"]);
  assert.equal(m["tokenizer.vocab_size"], 12);
  assert.equal(m["tokenizer.model_type"], "BPE");
  // No ids in config: looked up from the token strings.
  assert.equal(m["tokenizer.bos_token_id"], 0);
  assert.equal(m["tokenizer.eos_token_id"], 1);
  assert.deepStrictEqual(m.special_tokens, {
    bos_token: "<s>",
    eos_token: "</s>",
    im_start_token: "<|im_start|>",
    im_end_token: "<|im_end|>",
  });
  assert.equal(m.chat_template, TOKENIZER_CONFIG.chat_template);
  assert.equal(m["tokenizer.chat_template"], TOKENIZER_CONFIG.chat_template);
});

Deno.test("aprMetadataFromHf() prefers generation_config ids and reads Unigram scores and string merges", () => {
  const m = aprMetadataFromHf({
    config: { bos_token_id: 5, eos_token_id: [9, 10] },
    generationConfig: { eos_token_id: [2, 3] },
    tokenizer: { model: { type: "Unigram", vocab: [["<unk>", 0], ["▁a", -1.5], ["b", -2]] } },
    tokenizerConfig: {
      chat_template: [{ name: "tool_use", template: "T" }, { name: "default", template: "D" }],
    },
  });
  assert.equal(m["tokenizer.bos_token_id"], 5);
  assert.equal(m["tokenizer.eos_token_id"], 2);
  assert.deepStrictEqual(m["tokenizer.vocabulary"], ["<unk>", "▁a", "b"]);
  assert.deepStrictEqual(m["tokenizer.scores"], [0, -1.5, -2]);
  assert.equal(m["tokenizer.model_type"], "Unigram");
  assert.equal(m.chat_template, "D");
  const bpe = aprMetadataFromHf({
    tokenizer: { model: { type: "BPE", vocab: { a: 0 }, merges: ["a a"] } },
  });
  assert.deepStrictEqual(bpe["tokenizer.merges"], ["a a"]);
});

Deno.test("readHfCompanions() reads the companions present, in a subfolder too", async () => {
  const files = new MemoryModelFiles({
    "config.json": MINICPM,
    "tokenizer.json": JSON.stringify(TOKENIZER),
    "tokenizer_config.json": JSON.stringify({ eos_token: "</s>" }),
    "chat_template.jinja": "{{ bos_token }}",
    "sub/config.json": JSON.stringify({ architectures: ["LlamaForCausalLM"] }),
  });
  const m = await readHfCompanions(files);
  assert.equal(m.architecture, "minicpm3");
  assert.equal((m["tokenizer.vocabulary"] as string[]).length, 73448);
  assert.equal(m.chat_template, "{{ bos_token }}");
  assert.equal(files.openCount, 0);
  const sub = await readHfCompanions(files, { directory: "sub" });
  assert.deepStrictEqual(sub, {
    architecture: "llama",
    hf_architecture: "LlamaForCausalLM",
    // A known family always gets rope_type (issue 18 item 5), rope_theta or not.
    rope_type: 2,
    hf_config: { architectures: ["LlamaForCausalLM"] },
  });
  assert.deepStrictEqual(await readHfCompanions(new MemoryModelFiles({})), {});
});

Deno.test("readHfCompanions() rejects bad companion files", async (t) => {
  await t.step("not JSON", async () => {
    const error = await readHfCompanions(new MemoryModelFiles({ "config.json": "{oops" })).catch((
      e,
    ) => e);
    assert.ok(error instanceof ModelFormatError);
    assert.match(error.message, /^Cannot read JSON file "mem\/config\.json": invalid JSON/);
  });
  await t.step("not an object", async () => {
    const error = await readHfCompanions(new MemoryModelFiles({ "tokenizer.json": "[1]" })).catch((
      e,
    ) => e);
    assert.ok(error instanceof ModelFormatError);
    assert.match(error.message, /"mem\/tokenizer\.json": invalid JSON: not an object/);
  });
  await t.step("over the size cap, before reading", async () => {
    const files = new MemoryModelFiles({ "config.json": new Uint8Array(MAX_CONFIG_BYTES + 1) });
    const error = await readHfCompanions(files).catch((e) => e);
    assert.ok(error instanceof ModelFormatError);
    assert.match(error.message, /too large: 32000001 bytes exceeds the 32000000-byte limit/);
    assert.equal(files.openCount, 0);
  });
});

Deno.test("aprMetadataFromHf(): a sentence-transformers model's pooling and normalisation, as the converter reads modules.json", async (t) => {
  const modules = (...types: string[]) =>
    types.map((type, i) => ({ idx: i, path: `${i}_x`, type }));
  const st = "sentence_transformers.models.";
  await t.step("the pooling flags, in the converter's order, and a Normalize module", () => {
    const m = aprMetadataFromHf({
      sentenceModules: modules(`${st}Transformer`, `${st}Pooling`, `${st}Normalize`),
      sentencePooling: { pooling_mode_cls_token: true, pooling_mode_mean_tokens: true },
    });
    assert.equal(m["embedding.pooling"], "mean");
    assert.equal(m["embedding.normalize"], true);
  });
  await t.step("sentence-transformers 5's pooling_mode; no Normalize", () => {
    const m = aprMetadataFromHf({
      sentenceModules: modules(`${st}Transformer`, `${st}Pooling`),
      sentencePooling: { pooling_mode: "lasttoken" },
    });
    assert.equal(m["embedding.pooling"], "lasttoken");
    assert.equal(m["embedding.normalize"], false);
  });
  await t.step(
    "a module none of embedding.* says is listed (APR and GGUF output refuse it)",
    () => {
      const m = aprMetadataFromHf({
        sentenceModules: modules(`${st}Transformer`, `${st}Pooling`, `${st}LayerNorm`),
        sentencePooling: { pooling_mode: "mean" },
      });
      assert.deepEqual(m["embedding.unrecorded_modules"], [`2_x (${st}LayerNorm)`]);
    },
  );
  await t.step("a mode llama.cpp has not is kept by name (GGUF export refuses it)", () => {
    const m = aprMetadataFromHf({
      sentenceModules: [],
      sentencePooling: { pooling_mode_max_tokens: true },
    });
    assert.equal(m["embedding.pooling"], "max");
  });
  await t.step("no modules.json: nothing", () => {
    const m = aprMetadataFromHf({ config: { architectures: ["BertModel"] } });
    assert.equal(m["embedding.pooling"], undefined);
    assert.equal(m["embedding.normalize"], undefined);
  });
});

Deno.test("readHfCompanions(): modules.json and its pooling module's config.json; a modules.json that is not an array is one clear error", async () => {
  const modules = [
    { idx: 0, name: "0", path: "", type: "sentence_transformers.models.Transformer" },
    { idx: 1, name: "1", path: "1_Pooling", type: "sentence_transformers.models.Pooling" },
  ];
  const m = await readHfCompanions(
    new MemoryModelFiles({
      "modules.json": JSON.stringify(modules),
      "1_Pooling/config.json": JSON.stringify({ pooling_mode: "cls" }),
    }),
  );
  assert.equal(m["embedding.pooling"], "cls");
  assert.equal(m["embedding.normalize"], false);
  const files = new MemoryModelFiles({ "modules.json": '{"a": 1}' });
  await assert.rejects(
    readHfCompanions(files),
    (e: unknown) => e instanceof ModelFormatError && /modules\.json.*not an array/.test(e.message),
  );
});
