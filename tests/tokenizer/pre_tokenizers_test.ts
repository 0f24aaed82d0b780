import assert from "node:assert/strict";
import {
  describePreTokenizer,
  PRE_TOKENIZERS,
  recognisePreTokenizer,
} from "../../src/tokenizer/pre_tokenizers.ts";

Deno.test("PRE_TOKENIZERS: one entry per name, each naming its published model", () => {
  const names = PRE_TOKENIZERS.map((e) => e.name);
  assert.equal(new Set(names).size, names.length);
  for (const e of PRE_TOKENIZERS) assert.match(e.model, /^[\w.-]+\/[\w.-]+/, e.name);
});

Deno.test("recognisePreTokenizer(): GPT-2's ByteLevel and StarCoder's digits are told apart; a prefix space or an unknown step is no entry", () => {
  const bpe = (pre: unknown) => ({ model: { type: "BPE" }, pre_tokenizer: pre });
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, use_regex: true };
  assert.equal(recognisePreTokenizer(bpe(byteLevel))?.name, "gpt-2");
  assert.equal(
    recognisePreTokenizer(bpe({
      type: "Sequence",
      pretokenizers: [{ type: "Digits", individual_digits: true }, byteLevel],
    }))?.name,
    "starcoder",
  );
  const prefixed = bpe({ ...byteLevel, add_prefix_space: true });
  assert.equal(recognisePreTokenizer(prefixed), undefined);
  assert.equal(describePreTokenizer(prefixed), "ByteLevel(regex)(prefix space)");
  assert.equal(recognisePreTokenizer(bpe({ type: "Whitespace" })), undefined);
  assert.equal(recognisePreTokenizer(bpe(null)), undefined);
  assert.equal(describePreTokenizer(bpe(null)), "no pre-tokenizer");
});
