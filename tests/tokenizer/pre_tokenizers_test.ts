import assert from "node:assert/strict";
import {
  describePreTokenizer,
  PRE_TOKENIZER_NAMES,
  PRE_TOKENIZERS,
  type PreTokenizerEntry,
  recognisePreTokenizer,
  tokenizeAlike,
} from "../../src/tokenizer/pre_tokenizers.ts";

Deno.test("PRE_TOKENIZERS: one entry per name, each naming its published model", () => {
  assert.equal(new Set(PRE_TOKENIZER_NAMES).size, PRE_TOKENIZER_NAMES.length);
  for (const e of PRE_TOKENIZERS) assert.match(e.model, /^[\w.-]+\/[\w.-]+/, e.name);
});

/**
 * Names llama.cpp's converter writes for tokenizers that are not byte-level
 * BPE, so are not in the table, with the reason.
 */
const NOT_BYTE_LEVEL: Record<string, string> = {
  "bert-bge": "WordPiece (BERT)",
  "bert-bge-large": "WordPiece (BERT)",
  "jina-v2-en": "WordPiece (BERT; the converter's hash is bert-bge's)",
  gemma4: "BPE on raw UTF-8 with ▁ for spaces (llama.cpp: byte_encode false)",
  "granite-embed-multi-311m": "BPE on raw UTF-8 with ▁ for spaces (gemma4's handling)",
  "sarvam-moe": "BPE on raw UTF-8 with ▁ for spaces (llama.cpp: byte_encode false)",
};

Deno.test("PRE_TOKENIZER_NAMES: every byte-level name llama.cpp's converter (de3ff81) can write", async () => {
  const names = JSON.parse(
    await Deno.readTextFile(
      new URL("../testdata/tokenizers/pre_tokenizers/converter_names.json", import.meta.url),
    ),
  ) as { name: string; models: string[] }[];
  assert.ok(names.length > 80);
  const missing = names.map((n) => n.name).filter((n) =>
    !PRE_TOKENIZER_NAMES.includes(n) && !Object.hasOwn(NOT_BYTE_LEVEL, n)
  );
  assert.deepEqual(missing, []);
  for (const n of Object.keys(NOT_BYTE_LEVEL)) assert.ok(!PRE_TOKENIZER_NAMES.includes(n), n);
});

/** A tokenizer.json with the entry's normaliser and `ignore_merges`, and the given pre-tokenizer. */
function withEntryFlags(e: PreTokenizerEntry, preTokenizer: unknown) {
  return {
    model: { type: "BPE", ignore_merges: e.ignoreMerges === true },
    normalizer: e.normalizer === undefined || e.normalizer === "none"
      ? null
      : { type: e.normalizer },
    pre_tokenizer: preTokenizer,
  };
}

Deno.test("PRE_TOKENIZERS: each entry's own tokenizer.json structure is recognised as that entry, none hidden by an earlier one", () => {
  for (const e of PRE_TOKENIZERS) {
    if (e.preTokenizer === undefined) continue;
    assert.equal(recognisePreTokenizer(withEntryFlags(e, e.preTokenizer))?.name, e.name);
  }
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

Deno.test("recognisePreTokenizer(): a Split that keeps its matches and removes the rest is its entry's only where the regex leaves nothing between matches", () => {
  const bpe = (split: Record<string, unknown>) => ({
    model: { type: "BPE" },
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [split, { type: "ByteLevel", add_prefix_space: false, use_regex: false }],
    },
  });
  const llama3 = PRE_TOKENIZERS.find((e) => e.name === "smaug-bpe")!.preTokenizer as {
    pretokenizers: { pattern: { Regex: string } }[];
  };
  const regex = llama3.pretokenizers[0]!.pattern.Regex;
  // Xenova/gpt-4's and phi-4's spelling of Llama 3's regex (the fixture smaug-bpe-inverted.json).
  const kept = { type: "Split", pattern: { Regex: regex }, behavior: "Removed", invert: true };
  assert.equal(recognisePreTokenizer(bpe(kept))?.name, "smaug-bpe");
  // Not inverted, Removed deletes the matches: nothing of the text would be left.
  assert.equal(recognisePreTokenizer(bpe({ ...kept, invert: false })), undefined);
  // DeepSeek-V3's digit step leaves everything but digits between its matches.
  const digits = {
    type: "Split",
    pattern: { Regex: "\\p{N}{1,3}" },
    behavior: "Removed",
    invert: true,
  };
  assert.match(describePreTokenizer(bpe(digits)), /^Split\(Removed, inverted, /);
});

Deno.test("recognisePreTokenizer(): the published chains a census of Hub tokenizer.json files records are recognised as their entries (Laguna's, Nemotron 3's, Seed-Coder's, MiniCPM5's…)", async () => {
  const census = JSON.parse(
    await Deno.readTextFile(
      new URL("../testdata/tokenizers/pre_tokenizers/census_chains.json", import.meta.url),
    ),
  ) as { chains: { pattern: string; models: string[]; entry: string; pre_tokenizer: unknown }[] };
  assert.ok(census.chains.length >= 11);
  for (const chain of census.chains) {
    const entry = PRE_TOKENIZERS.find((e) => e.name === chain.entry)!;
    assert.equal(
      recognisePreTokenizer(withEntryFlags(entry, chain.pre_tokenizer))?.name,
      chain.entry,
      `${chain.pattern} (${chain.models[0]})`,
    );
  }
});

Deno.test("recognisePreTokenizer(): published tokenizer.json files (Trinity Large's, Seed-OSS's, Granite 4.0's) are recognised as an entry llama.cpp runs alike with the name the converter gives them by their hash", async () => {
  const published = JSON.parse(
    await Deno.readTextFile(
      new URL("../testdata/tokenizers/pre_tokenizers/published_chains.json", import.meta.url),
    ),
  ) as {
    chains: {
      model: string;
      converter_name: string;
      entry: string;
      normalizer: unknown;
      pre_tokenizer: unknown;
      ignore_merges: boolean;
    }[];
  };
  const models = published.chains.map((c) => c.model);
  for (
    const model of [
      "arcee-ai/Trinity-Large-Base",
      "ByteDance-Seed/Seed-OSS-36B-Base",
      "ibm-granite/granite-4.0-350m-base",
    ]
  ) assert.ok(models.includes(model), model);
  for (const chain of published.chains) {
    // The file's own normaliser, pre-tokenizer and ignore_merges, as published.
    const tokenizer = {
      model: { type: "BPE", ignore_merges: chain.ignore_merges },
      normalizer: chain.normalizer,
      pre_tokenizer: chain.pre_tokenizer,
    };
    assert.equal(recognisePreTokenizer(tokenizer)?.name, chain.entry, chain.model);
    assert.ok(tokenizeAlike(chain.entry, chain.converter_name), `${chain.model}: ${chain.entry}`);
  }
});
