/**
 * A tiktoken file read as the byte-level BPE `tokenizer.json` llama.cpp's
 * converter makes of it (tests/interop/hunyuan_tiktoken_test.ts compares a
 * whole model's GGUF with the converter's).
 */

import assert from "node:assert/strict";
import { tiktokenAsTokenizerJson } from "../../src/tokenizer/tiktoken_vocab.ts";

const FACTS = { file: "x.tiktoken", specials: ["<|a|>", "<|b|>"], regex: "\\s+" };
const line = (text: string, rank: number) => `${btoa(text)} ${rank}`;

Deno.test("tiktoken: ranks in file order (a repeat skipped), bytes as GPT-2's byte-level strings, specials after", () => {
  const text = [
    line("a", 0),
    line("b", 1),
    line(" ", 2),
    line("a", 3),
    line("ab", 9),
    line(" ab", 4),
  ]
    .join("\n");
  const json = tiktokenAsTokenizerJson(text, FACTS, "x.tiktoken");
  const model = json["model"] as { vocab: Record<string, number>; merges: string[][] };
  // Hunyuan's loader counts ranks itself: the repeated "a" is skipped, the file's numbers unused.
  assert.deepEqual(model.vocab, { a: 0, b: 1, "Ġ": 2, ab: 3, "Ġab": 4 });
  // Each merged token's two parts, by BPE over the lower ranks (QwenModel.bpe).
  assert.deepEqual(model.merges, [["a", "b"], ["Ġ", "ab"]]);
  const added = json["added_tokens"] as { id: number; content: string; special: boolean }[];
  assert.deepEqual(added.map((t) => [t.id, t.content, t.special]), [[5, "<|a|>", true], [
    6,
    "<|b|>",
    true,
  ]]);
});

Deno.test("tiktoken: a line that is not a base64 token and a rank is refused, naming it", () => {
  assert.throws(
    () => tiktokenAsTokenizerJson(`${line("a", 0)}\n!!! x`, FACTS, "x.tiktoken"),
    /x\.tiktoken: line 2 is not a base64 token and its rank/,
  );
});

Deno.test("tiktoken: reserved special ids (Kimi's) named by added_tokens_decoder, the others <|reserved_token_{id}|>", () => {
  const text = [line("a", 0), line("b", 1), line("ab", 2)].join("\n");
  const facts = { file: "tiktoken.model", specials: 4, regex: "\\s+" };
  const json = tiktokenAsTokenizerJson(
    text,
    facts,
    "tiktoken.model",
    new Map([[3, "[BOS]"], [5, "[PAD]"]]),
  );
  const added = json["added_tokens"] as { id: number; content: string; special: boolean }[];
  assert.deepEqual(added.map((t) => [t.id, t.content, t.special]), [
    [3, "[BOS]", true],
    [4, "<|reserved_token_4|>", true],
    [5, "[PAD]", true],
    [6, "<|reserved_token_6|>", true],
  ]);
});
