import assert from "node:assert/strict";
import { t5VocabularyFields } from "../../src/tokenizer/t5_vocab.ts";

const tokenizer = {
  normalizer: { type: "Precompiled", precompiled_charsmap: "AAEC" },
  model: {
    type: "Unigram",
    unk_id: 3,
    vocab: [["<s>", 0], ["<pad>", 0], ["</s>", 0], ["<unk>", 0], ["▁a", -2.5], ["<x>", 0]],
  },
};

Deno.test("t5VocabularyFields: the converter's types (unknown, then special, then added), scores, [PAD] ids past the vocabulary", () => {
  const fields = t5VocabularyFields({
    tokenizer,
    tokenizerConfig: { clean_up_tokenization_spaces: true },
    tokens: ["<s>", "<pad>", "</s>", "<unk>", "▁a", "<x>", "[PAD6]"],
    added: new Set([0, 1, 2, 3, 5]),
    specialIds: new Set([0, 1, 2, 3]),
    unkId: 3,
  });
  assert.ok(typeof fields !== "string");
  assert.deepEqual(fields["tokenizer.token_type"], [3, 3, 3, 2, 1, 4, 5]);
  assert.deepEqual(fields["tokenizer.scores"], [0, 0, 0, 0, -2.5, 0, -10000]);
  assert.equal(fields["tokenizer.ggml_model"], "t5");
  assert.equal(fields["tokenizer.add_space_prefix"], true);
  assert.equal(fields["tokenizer.remove_extra_whitespaces"], true);
  assert.equal(fields["tokenizer.precompiled_charsmap"], "AAEC");
});

Deno.test("t5VocabularyFields: a normaliser other than one Precompiled charsmap is a reason, not keys", () => {
  const reason = t5VocabularyFields({
    tokenizer: { ...tokenizer, normalizer: { type: "Sequence", normalizers: [] } },
    tokenizerConfig: {},
    tokens: ["<s>"],
    added: new Set(),
    specialIds: new Set(),
    unkId: 3,
  });
  assert.equal(typeof reason, "string");
  assert.match(reason as string, /Precompiled/);
});
