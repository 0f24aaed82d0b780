import assert from "node:assert/strict";
import { specialVocab } from "../../src/tokenizer/special_vocab.ts";
import { aprToGgufKv } from "../../src/formats/gguf/metadata.ts";
import { aprMetadataFromHf } from "../../src/formats/safetensors/hf_metadata.ts";

const template = (single: string[], pair: string[] = []) => ({
  type: "TemplateProcessing",
  single: single.map((t) => t === "A" ? { Sequence: { id: "A" } } : { SpecialToken: { id: t } }),
  pair: pair.map((t) =>
    t === "A" || t === "B" ? { Sequence: { id: t } } : { SpecialToken: { id: t } }
  ),
});
const added = ["<s>", "</s>", "<eot>", "[SEP]", "[CLS]"].map((content, id) => ({ id, content }));

Deno.test("specialVocab(): a TemplateProcessing that starts with BOS adds BOS; tokenizer_config's flags win", () => {
  const v = specialVocab({
    tokenizer: {
      added_tokens: added,
      post_processor: template(["<s>", "A"], ["<s>", "A", "<s>", "B"]),
    },
    tokenizerConfig: { bos_token: "<s>", eos_token: "</s>" },
    vocabSize: 8,
  });
  // Llama 3's pair template (BOS A BOS B) has no separator: add_sep false, as SpecialVocab.
  assert.deepEqual(v.add, { bos: true, sep: false });
  assert.deepEqual(v.ids, { bos: 0, eos: 1 });
  const off = specialVocab({
    tokenizer: { added_tokens: added, post_processor: template(["<s>", "A"]) },
    tokenizerConfig: { bos_token: "<s>", add_bos_token: false, add_eos_token: false },
    vocabSize: 8,
  });
  assert.deepEqual(off.add, { bos: false, eos: false });
});

Deno.test("specialVocab(): a template ending with another token makes it EOS and keeps the configured one as EOT", () => {
  const v = specialVocab({
    tokenizer: { added_tokens: added, post_processor: template(["<s>", "A", "</s>"]) },
    tokenizerConfig: { bos_token: "<s>", eos_token: "<eot>" },
    vocabSize: 8,
  });
  assert.deepEqual(v.ids, { bos: 0, eos: 1, eot: 2 });
  assert.deepEqual(v.add, { bos: true, eos: true });
  // The GGUF export writes the EOT id under gguf-py's key.
  const kv = aprToGgufKv({ "tokenizer.special_ids": v.ids });
  assert.equal(kv.get("tokenizer.ggml.eot_token_id")?.value, 2);
});

Deno.test("specialVocab(): RobertaProcessing adds BOS, EOS and SEP; ids fall back to config.json and skip ids past the vocabulary", () => {
  const v = specialVocab({
    tokenizer: {
      added_tokens: added,
      post_processor: { type: "RobertaProcessing", sep: ["[SEP]", 3], cls: ["[CLS]", 4] },
    },
    tokenizerConfig: { model_max_length: 512 },
    config: { bos_token_id: 0, pad_token_id: 99, text_config: { eos_token_id: 1 } },
    vocabSize: 8,
  });
  assert.deepEqual(v.add, { bos: true, eos: true, sep: true });
  assert.deepEqual(v.ids, { sep: 3, cls: 4, bos: 0, eos: 1 });
});

Deno.test("chat templates: tokenizer_config's list of named templates becomes tokenizer.chat_template.NAME; chat_template.jinja, then chat_template.json, when it has none", () => {
  const tokenizer = { model: { type: "BPE", vocab: { a: 0 }, merges: [] }, added_tokens: [] };
  const named = aprMetadataFromHf({
    tokenizer,
    tokenizerConfig: {
      chat_template: [
        { name: "default", template: "D" },
        { name: "tool-use", template: "T" },
        { name: "rag", template: "R" },
      ],
    },
  });
  assert.equal(named.chat_template, "D");
  const kv = aprToGgufKv({ ...named, "tokenizer.pre": "gpt-2" });
  assert.equal(kv.get("tokenizer.chat_template.tool_use")?.value, "T");
  assert.equal(kv.get("tokenizer.chat_template.rag")?.value, "R");
  assert.deepEqual(kv.get("tokenizer.chat_templates")?.value, ["tool_use", "rag"]);
  assert.equal(kv.get("tokenizer.chat_template")?.value, "D");
  const keys = [...kv.keys()].filter((k) => k.startsWith("tokenizer.chat_template"));
  // gguf-py's add_chat_template order: the named ones, their list, then the default.
  assert.deepEqual(keys, [
    "tokenizer.chat_template.tool_use",
    "tokenizer.chat_template.rag",
    "tokenizer.chat_templates",
    "tokenizer.chat_template",
  ]);

  const jinja = aprMetadataFromHf({
    tokenizer,
    tokenizerConfig: { eos_token: "a" },
    chatTemplate: "J",
    chatTemplateJson: { chat_template: "S" },
  });
  assert.equal(jinja.chat_template, "J");
  const json = aprMetadataFromHf({
    tokenizer,
    tokenizerConfig: { eos_token: "a" },
    chatTemplateJson: { chat_template: "S" },
  });
  assert.equal(json.chat_template, "S");
  assert.equal(
    aprToGgufKv({ ...json, "tokenizer.pre": "gpt-2" }).get("tokenizer.chat_template")?.value,
    "S",
  );
});

Deno.test("specialVocab(): the normaliser's lowercase and strip_accents flags, a BertNormalizer's null saying nothing", async (t) => {
  const flags = (normalizer: unknown) =>
    specialVocab({ tokenizer: { normalizer }, vocabSize: 1 }).normalizer;
  await t.step("BertNormalizer", () => {
    assert.deepEqual(
      flags({ type: "BertNormalizer", lowercase: true, strip_accents: null }),
      { lowercase: true },
    );
    assert.deepEqual(
      flags({ type: "BertNormalizer", lowercase: false, strip_accents: true }),
      { lowercase: false, stripAccents: true },
    );
  });
  await t.step("Lowercase and StripAccents, alone or in a Sequence", () => {
    assert.deepEqual(flags({ type: "Lowercase" }), { lowercase: true });
    assert.deepEqual(
      flags({ type: "Sequence", normalizers: [{ type: "NFD" }, { type: "StripAccents" }] }),
      { stripAccents: true },
    );
  });
  await t.step("none", () => {
    assert.deepEqual(flags({ type: "NFC" }), {});
    assert.deepEqual(flags(undefined), {});
  });
});

Deno.test("specialVocab(): RobertaProcessing adds BOS, EOS and SEP, in gguf-py's order (the converter writes them so)", () => {
  const v = specialVocab({
    tokenizer: {
      added_tokens: added,
      post_processor: { type: "RobertaProcessing", sep: ["</s>", 1], cls: ["<s>", 0] },
    },
    tokenizerConfig: { bos_token: "<s>", eos_token: "</s>" },
    vocabSize: 8,
  });
  assert.deepEqual(Object.entries(v.add), [["bos", true], ["eos", true], ["sep", true]]);
});
