import assert from "node:assert/strict";
import { phantomTokens } from "../../src/tokenizer/wordpiece_vocab.ts";
import { TokenType } from "../../src/tokenizer/token_types.ts";

Deno.test("phantomTokens(): control tokens as they are, ##x → x, any other token (holes, user-defined) → ▁x", () => {
  const { CONTROL, NORMAL, UNUSED, USER_DEFINED } = TokenType;
  assert.deepEqual(
    phantomTokens(
      ["[PAD]", "[CLS]", "the", "##ing", "##", "[PAD5]", "<new>", "[unused0]"],
      [CONTROL, CONTROL, NORMAL, NORMAL, NORMAL, UNUSED, USER_DEFINED, NORMAL],
    ),
    ["[PAD]", "[CLS]", "▁the", "ing", "", "▁[PAD5]", "▁<new>", "▁[unused0]"],
  );
});
