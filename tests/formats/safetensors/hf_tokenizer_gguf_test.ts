import assert from "node:assert/strict";
import { ggufTokenizerFields } from "../../../src/formats/safetensors/hf_tokenizer_gguf.ts";
import { aprMetadataFromHf } from "../../../src/formats/safetensors/hf_metadata.ts";

Deno.test("ggufTokenizerFields(): byte-level BPE is gpt2, with the converter's token types and special ids", () => {
  const m = ggufTokenizerFields({
    tokenizer: {
      model: { type: "BPE", vocab: { a: 0, b: 1, ab: 2 }, merges: ["a b"] },
      added_tokens: [
        { id: 4, content: "<|end|>", special: true },
        { id: 5, content: "<tool>", special: false },
        { id: 6, content: "<|looks|>", special: false },
      ],
      pre_tokenizer: { type: "ByteLevel", use_regex: true },
    },
    tokenizerConfig: {
      eos_token: "<|end|>",
      pad_token: { content: "<|end|>" },
      add_bos_token: false,
    },
    config: { bos_token_id: 0, eos_token_id: 1 },
    tokens: ["a", "b", "ab", "[PAD3]", "<|end|>", "<tool>", "<|looks|>"],
  });
  assert.equal(m["tokenizer.ggml_model"], "gpt2");
  // GPT-2's own pre-tokenizer: ByteLevel with its regex.
  assert.equal(m["tokenizer.pre"], "gpt-2");
  assert.equal(m["tokenizer.pre_type"], "gpt-2");
  // NORMAL, NORMAL, NORMAL, UNUSED (a hole), CONTROL, USER_DEFINED, CONTROL (looks special).
  assert.deepEqual(m["tokenizer.token_type"], [1, 1, 1, 5, 3, 4, 3]);
  // SpecialVocab: tokenizer_config strings among the added tokens first, then config.json ids.
  assert.deepEqual(m["tokenizer.special_ids"], { eos: 4, pad: 4, bos: 0 });
  assert.deepEqual(Object.keys(m["tokenizer.special_ids"] as object), ["eos", "pad", "bos"]);
  assert.deepEqual(m["tokenizer.add_special"], { bos: false });
  // aprender's importer's keys.
  assert.equal(m["tokenizer.padding_token_id"], 4);
  assert.equal(m["tokenizer.add_bos_token"], false);
});

Deno.test("ggufTokenizerFields(): pre-tokenizers llama.cpp knows are named, others are recorded as unrecognised", () => {
  const split = (regex: string, ignoreMerges = false) => ({
    model: { type: "BPE", vocab: { a: 0 }, merges: [], ignore_merges: ignoreMerges },
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: regex }, behavior: "Isolated" },
        { type: "ByteLevel", add_prefix_space: false, use_regex: false },
      ],
    },
  });
  const llama3 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  const qwen2 = llama3.replace("\\p{N}{1,3}", "\\p{N}");
  const fields = (regex: string, ignoreMerges = false) =>
    ggufTokenizerFields({ tokenizer: split(regex, ignoreMerges), tokens: ["a"] });
  assert.equal(fields(llama3, true)["tokenizer.pre"], "llama-bpe");
  assert.equal(fields(qwen2)["tokenizer.pre"], "qwen2");
  // Llama 3's regex without ignore_merges is not Llama 3's tokenizer (llama.cpp's llama-bpe
  // ignores merges) but Smaug's (and DBRX's, GLM-4's): llama.cpp's smaug-bpe.
  assert.equal(fields(llama3)["tokenizer.pre"], "smaug-bpe");
  const unknown = fields("\\s+");
  assert.equal(unknown["tokenizer.pre"], undefined);
  assert.equal(unknown["tokenizer.pre_type"], undefined);
  assert.equal(unknown["tokenizer.pre_unrecognised"], "Split(Isolated, \\s+) + ByteLevel");
});

Deno.test("ggufTokenizerFields(): SentencePiece-style tokenizers are llama, with byte tokens", () => {
  const m = ggufTokenizerFields({
    tokenizer: {
      model: {
        type: "BPE",
        byte_fallback: true,
        vocab: { "<unk>": 0, "<s>": 1, "</s>": 2, "<0x0A>": 3, "▁a": 4 },
      },
      added_tokens: [
        { id: 0, content: "<unk>", special: true },
        { id: 1, content: "<s>", special: true },
        { id: 2, content: "</s>", special: true },
      ],
    },
    tokenizerConfig: { bos_token: "<s>", eos_token: "</s>", unk_token: "<unk>" },
    tokens: ["<unk>", "<s>", "</s>", "<0x0A>", "▁a"],
    merges: ["▁ a"],
  });
  assert.equal(m["tokenizer.ggml_model"], "llama");
  assert.equal(m["tokenizer.pre"], "default");
  assert.deepEqual(m["tokenizer.token_type"], [3, 3, 3, 6, 1]);
  // Scores from merge ranks: "▁a" is made by merge 0; the rest by none (below every merge).
  assert.deepEqual(m["tokenizer.scores"], [-1, -1, -1, -1, 0]);
  // No Prepend("▁") normaliser, no Metaspace: llama.cpp must not put "▁" before the text.
  assert.equal(m["tokenizer.add_space_prefix"], false);
  assert.deepEqual(m["tokenizer.special_ids"], { bos: 1, eos: 2, unk: 0 });
  const unigram = ggufTokenizerFields({
    tokenizer: { model: { type: "Unigram", vocab: [["a", -1], ["b", -2]] } },
    tokens: ["a", "b"],
  });
  assert.equal(unigram["tokenizer.ggml_model"], "llama");
  // WordPiece and others: llama.cpp's converter has no such HF tokenizer path here.
  assert.deepEqual(
    ggufTokenizerFields({ tokenizer: { model: { type: "WordLevel" } }, tokens: [] }),
    {},
  );
});

Deno.test("aprMetadataFromHf() records the GGUF tokenizer fields beside realizar's", () => {
  const m = aprMetadataFromHf({
    tokenizer: { model: { type: "BPE", vocab: { a: 0, b: 1 }, merges: ["a b"] } },
  });
  assert.equal(m["tokenizer.model_type"], "BPE");
  assert.equal(m["tokenizer.ggml_model"], "gpt2");
  assert.deepEqual(m["tokenizer.token_type"], [1, 1]);
});
