import assert from "node:assert/strict";
import { t5VocabularyFields, t5VocabularyFromSentencePiece } from "../../src/tokenizer/t5_vocab.ts";

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

Deno.test("t5VocabularyFromSentencePiece: the converter's realignment to transformers' ids, the last id a [PAD] placeholder", () => {
  const piece = (p: string, score: number, type: number) => ({ piece: p, score, type });
  const fields = t5VocabularyFromSentencePiece({
    pieces: [
      piece("<unk>", 0, 2),
      piece("<s>", 0, 3),
      piece("</s>", 0, 3),
      piece("▁a", -1.5, 1),
      piece("<u>", 0, 4),
    ],
    addDummyPrefix: true,
    removeExtraWhitespaces: true,
    precompiledCharsmap: new Uint8Array([0, 1, 2]),
    modelType: 1,
  }, 7);
  assert.ok(typeof fields !== "string");
  assert.deepEqual(fields["tokenizer.vocabulary"], [
    "<s>",
    "<pad>",
    "</s>",
    "<unk>",
    "▁a",
    "<u>",
    "[PAD5]",
  ]);
  assert.deepEqual(fields["tokenizer.scores"], [0, 0, 0, 0, -1.5, 0, -10000]);
  // A user-defined piece is NORMAL: the converter checks unknown, control, unused and byte only.
  assert.deepEqual(fields["tokenizer.token_type"], [3, 3, 3, 2, 1, 1, 5]);
  assert.equal(fields["tokenizer.precompiled_charsmap"], "AAEC");
});

Deno.test("t5VocabularyFromSentencePiece: a BPE model is a reason, as the converter asserts Unigram", () => {
  const reason = t5VocabularyFromSentencePiece({
    pieces: [{ piece: "a", score: 0, type: 1 }],
    addDummyPrefix: true,
    removeExtraWhitespaces: true,
    precompiledCharsmap: new Uint8Array(0),
    modelType: 2,
  }, 4);
  assert.match(reason as string, /Unigram/);
});
