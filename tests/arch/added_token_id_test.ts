import assert from "node:assert/strict";
import { addedTokenId } from "../../src/arch/added_token_id.ts";

const TOKENIZER = {
  added_tokens: [{ id: 12, content: "[IMG_BREAK]" }, { id: 13, content: "[IMG_BREAK]" }],
  model: { vocab: { "[IMG_END]": 14 } },
};

Deno.test("addedTokenId: tokenizer_config.json's added_tokens_decoder first, as the converter's get_token_id", () => {
  const config = {
    added_tokens_decoder: { "7": { content: "[IMG]" }, "9": { content: "[IMG_BREAK]" } },
  };
  assert.equal(addedTokenId(config, TOKENIZER, "[IMG_BREAK]"), 9);
});

Deno.test("addedTokenId: else tokenizer.json's first added token of that content", () => {
  assert.equal(addedTokenId({ added_tokens_decoder: {} }, TOKENIZER, "[IMG_BREAK]"), 12);
  assert.equal(addedTokenId(undefined, TOKENIZER, "[IMG_BREAK]"), 12);
});

Deno.test("addedTokenId: the model vocabulary is not searched; malformed entries are skipped", () => {
  assert.equal(addedTokenId({}, TOKENIZER, "[IMG_END]"), undefined);
  const bad = { added_tokens: [{ id: -1, content: "x" }, { id: "3", content: "x" }, null] };
  assert.equal(
    addedTokenId({ added_tokens_decoder: { "a": { content: "x" } } }, bad, "x"),
    undefined,
  );
});
