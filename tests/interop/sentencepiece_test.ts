/**
 * Issue 10 item 1a for SentencePiece-style tokenizers: a Hugging Face llama
 * folder whose `tokenizer.json` is BPE with byte fallback (Llama 2 and
 * Mistral ship these) becomes a GGUF `llama` tokenizer — `▁` pieces, `<0x..>`
 * byte tokens typed BYTE, control tokens — that llama.cpp loads and
 * tokenizes the prompt with, text in and the same text out.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { DEMO_MODEL, withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile } from "./_files.ts";
import { llamaGenerate, PROMPT } from "./_llama_judge.ts";

/** A 256-token SentencePiece-style vocabulary (the demo model has 256 embedding rows). */
function tokenizerJson(): { tokenizer: unknown; vocab: Map<string, number> } {
  const pieces = ["<unk>", "<s>", "</s>", "<0x0A>", "<0x21>", "▁"];
  for (const c of "abcdefghijklmnopqrstuvwxyzTQ") pieces.push(c);
  const words = ["▁The", "▁quick", "▁brown", "▁fox"];
  const merges: string[] = [];
  for (const word of words) {
    // Left-to-right merges building each word from its characters.
    let left = word[0]!;
    for (const c of word.slice(1)) {
      merges.push(`${left} ${c}`);
      left += c;
      if (!pieces.includes(left)) pieces.push(left);
    }
  }
  for (let i = 0; pieces.length < 256; i++) pieces.push(`▁x${i}`);
  const vocab = new Map(pieces.map((p, i) => [p, i]));
  const tokenizer = {
    version: "1.0",
    added_tokens: [0, 1, 2].map((id) => ({
      id,
      content: pieces[id],
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: {
      type: "Sequence",
      normalizers: [{ type: "Prepend", prepend: "▁" }, {
        type: "Replace",
        pattern: { String: " " },
        content: "▁",
      }],
    },
    pre_tokenizer: null,
    decoder: { type: "Sequence", decoders: [{ type: "ByteFallback" }, { type: "Fuse" }] },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: "<unk>",
      fuse_unk: true,
      byte_fallback: true,
      vocab: Object.fromEntries(vocab),
      merges,
    },
  };
  return { tokenizer, vocab };
}

Deno.test("a SentencePiece-style HF tokenizer becomes a GGUF llama tokenizer that llama.cpp runs", async () => {
  await withTempDir(async (dir) => {
    const folder = `${dir}/spm-llama`;
    await Deno.mkdir(folder);
    for (const entry of Deno.readDirSync(DEMO_MODEL)) {
      if (entry.name.startsWith("tokenizer")) continue;
      await Deno.copyFile(`${DEMO_MODEL}/${entry.name}`, `${folder}/${entry.name}`);
    }
    const { tokenizer, vocab } = tokenizerJson();
    await Deno.writeTextFile(`${folder}/tokenizer.json`, JSON.stringify(tokenizer));
    await Deno.writeTextFile(
      `${folder}/tokenizer_config.json`,
      JSON.stringify({ bos_token: "<s>", eos_token: "</s>", unk_token: "<unk>" }),
    );
    const apr = `${dir}/spm.apr`;
    const gguf = `${dir}/spm.gguf`;
    await convertModel(folder, apr);
    await convertModel(apr, gguf);

    const kv = (await readGgufFile(gguf)).kv;
    assert.equal(kv.get("tokenizer.ggml.model")?.value, "llama");
    assert.equal(kv.get("tokenizer.ggml.pre")?.value, "default");
    const types = kv.get("tokenizer.ggml.token_type")?.value as number[];
    assert.deepEqual(types.slice(0, 6), [3, 3, 3, 6, 6, 1]);
    // Not LlamaHfVocab's -1000 for every token (issue 26): -(rank of the merge that makes the
    // token), the rest below every merge, so llama.cpp merges in transformers' order.
    const scores = kv.get("tokenizer.ggml.scores");
    assert.equal(scores?.type, 9);
    const merges = (tokenizer as { model: { merges: string[] } }).model.merges;
    const made = new Map(merges.map((m, rank) => [m.replace(" ", ""), rank]));
    assert.deepEqual(
      scores?.value,
      [...vocab.keys()].map((t) => made.has(t) ? 0 - made.get(t)! : -merges.length),
    );
    // A SentencePiece-style vocabulary from tokenizer.json: no merges in the GGUF, as the converter.
    assert.equal(kv.has("tokenizer.ggml.merges"), false);
    // The Prepend("▁") normaliser: llama.cpp puts "▁" before the text.
    assert.equal(kv.get("tokenizer.ggml.add_space_prefix")?.value, true);
    const keys = [...kv.keys()];
    assert.deepEqual(
      keys.filter((k) => /^tokenizer\.ggml\.(tokens|scores|token_type)$/.test(k)),
      ["tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"],
    );
    assert.equal(kv.get("tokenizer.ggml.bos_token_id")?.value, 1);
    assert.equal(kv.get("tokenizer.ggml.eos_token_id")?.value, 2);
    assert.equal(kv.get("tokenizer.ggml.unknown_token_id")?.value, 0);

    const [run] = await llamaGenerate([gguf], 4);
    // The four words as whole pieces (node-llama-cpp tokenizes text without BOS): no <unk>.
    const words = ["▁The", "▁quick", "▁brown", "▁fox"];
    assert.deepEqual(run!.prompt, words.map((w) => vocab.get(w)!));
    assert.equal(run!.text.trim(), PROMPT);
    assert.equal(run!.generated.length, 4);
  });
});

Deno.test("GGUF scores: a Unigram tokenizer.json keeps its vocabulary's scores; a byte-level BPE gets none (issue 10)", async () => {
  await withTempDir(async (dir) => {
    const folder = `${dir}/unigram`;
    await Deno.mkdir(folder);
    for (const entry of Deno.readDirSync(DEMO_MODEL)) {
      if (entry.name.startsWith("tokenizer")) continue;
      await Deno.copyFile(`${DEMO_MODEL}/${entry.name}`, `${folder}/${entry.name}`);
    }
    const pieces: [string, number][] = [["<unk>", 0], ["<s>", 0], ["</s>", 0]];
    for (let i = 3; i < 256; i++) pieces.push([`▁p${i}`, -Math.fround(i / 8)]);
    await Deno.writeTextFile(
      `${folder}/tokenizer.json`,
      JSON.stringify({
        version: "1.0",
        added_tokens: [],
        model: { type: "Unigram", unk_id: 0, vocab: pieces, byte_fallback: false },
      }),
    );
    await convertModel(folder, `${dir}/u.gguf`);
    const kv = (await readGgufFile(`${dir}/u.gguf`)).kv;
    assert.equal(kv.get("tokenizer.ggml.model")?.value, "llama");
    assert.deepEqual(kv.get("tokenizer.ggml.scores")?.value, pieces.map(([, s]) => s));

    // The demo model's own tokenizer is byte-level BPE (gpt2): the converter writes no scores.
    await convertModel(DEMO_MODEL, `${dir}/b.gguf`);
    const bpe = (await readGgufFile(`${dir}/b.gguf`)).kv;
    assert.equal(bpe.get("tokenizer.ggml.model")?.value, "gpt2");
    assert.equal(bpe.has("tokenizer.ggml.scores"), false);
  });
});
