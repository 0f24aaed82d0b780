/**
 * Issue 26: text in, text out. Tiny checkpoints carrying the real
 * `tokenizer.json` + `tokenizer_config.json` of published models
 * (`_tokenizer_packages.ts`) are converted to GGUF; llama.cpp (the judge,
 * vocabulary only) tokenizes ~40 strings with each file, and the ids must be
 * transformers 4.57.6's, recorded once in tests/testdata/tokenizers/expected.json
 * by make_expected.py. HF → APR → GGUF and GGUF → APR → GGUF must give the
 * same tokenizer keys as HF → GGUF.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile } from "./_files.ts";
import { llamaTokenize } from "./_llama_judge.ts";
import { tokenizationDifferences } from "./_tokenizations.ts";
import { tokenizerFiles, tokenizerPackages } from "./_tokenizer_packages.ts";
import { writeTinyLlama } from "./_tiny_llama.ts";
import type { GgufKvEntry } from "../../src/formats/gguf/header.ts";

const TESTDATA = new URL("../testdata/tokenizers/", import.meta.url);
const strings = JSON.parse(
  await Deno.readTextFile(new URL("strings.json", TESTDATA)),
) as { common: string[] };
const expected = JSON.parse(await Deno.readTextFile(new URL("expected.json", TESTDATA))) as {
  tokenizers: Record<string, { texts: string[]; ids: number[][] }>;
};

/**
 * Strings where llama.cpp cannot agree with transformers whatever the GGUF
 * says, with the reason. Each must still differ, so the list stays true.
 */
const KNOWN_DIFFERENCES: Record<string, Record<string, string>> = {
  qwen3: {
    "e\u0301 decomposed accent":
      "Qwen's tokenizer.json normalises to NFC (e + U+0301 → é); llama.cpp applies no normaliser",
  },
  command_r_plus: {
    "e\u0301 decomposed accent":
      "Cohere's tokenizer.json normalises to NFC (e + U+0301 → é); llama.cpp applies no normaliser",
  },
  mistral_nemo: {
    "नमस्ते दुनिया":
      "llama.cpp's tekken regex (src/llama-vocab.cpp) rewrites the letter classes with " +
      "lookaheads on \\p{L} only, so combining marks (\\p{M}, Devanagari's vowel signs) split words",
  },
};

/** What each tokenizer's GGUF must say, beside the token ids. */
const EXPECTED_KEYS: Record<string, Record<string, unknown>> = {
  llama3_1: { "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "llama-bpe" },
  qwen3: { "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "qwen2" },
  gemma3: {
    "tokenizer.ggml.model": "llama",
    "tokenizer.ggml.pre": "default",
    "tokenizer.ggml.add_space_prefix": false,
    "tokenizer.ggml.add_bos_token": true,
  },
  deepseek_v3: { "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "deepseek-v3" },
  // Not the converter's gpt-4o: the same regex with \p{M} (combining_marks_test.ts).
  gptoss: { "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "granite-embed-multi-97m" },
  mistral_nemo: { "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "tekken" },
  command_r_plus: { "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "command-r" },
  gpt2: { "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gpt-2" },
  llama2: {
    "tokenizer.ggml.model": "llama",
    "tokenizer.ggml.pre": "default",
    "tokenizer.ggml.add_space_prefix": true,
    "tokenizer.ggml.add_bos_token": true,
  },
};

/** A one-layer llama checkpoint (BF16 zeros) with the package's tokenizer files. */
async function tinyCheckpoint(folder: string, tokenizerDir: string, vocabSize: number) {
  await Deno.mkdir(folder);
  for (const file of ["tokenizer.json", "tokenizer_config.json"]) {
    await Deno.copyFile(`${tokenizerDir}/${file}`, `${folder}/${file}`);
  }
  await writeTinyLlama(folder, vocabSize);
}

function tokenizerKv(kv: ReadonlyMap<string, GgufKvEntry>): [string, unknown][] {
  return [...kv].filter(([key]) => key.startsWith("tokenizer.")).map((
    [key, e],
  ) => [key, { type: e.type, value: e.value }]);
}

Deno.test("real tokenizers: llama.cpp on aprkit's GGUF tokenizes ~40 strings as transformers does; APR round trips keep every tokenizer key", async () => {
  const packages = await tokenizerPackages();
  await withTempDir(async (dir) => {
    const jobs: { key: string; path: string; texts: string[] }[] = [];
    for (const [key, pkg] of Object.entries(packages)) {
      const folder = `${dir}/${key}`;
      await tinyCheckpoint(folder, await tokenizerFiles(key), pkg.vocab_size);
      const gguf = `${dir}/${key}.gguf`;
      await convertModel(folder, gguf);
      const direct = await readGgufFile(gguf);
      for (const [k, v] of Object.entries(EXPECTED_KEYS[key] ?? {})) {
        assert.equal(direct.kv.get(k)?.value, v, `${key}: ${k}`);
      }
      // The same keys, in the same order, through APR both ways.
      await convertModel(folder, `${dir}/${key}.apr`);
      await convertModel(`${dir}/${key}.apr`, `${dir}/${key}-via-apr.gguf`);
      await convertModel(gguf, `${dir}/${key}-from-gguf.apr`);
      await convertModel(`${dir}/${key}-from-gguf.apr`, `${dir}/${key}-round.gguf`);
      for (const other of [`${key}-via-apr.gguf`, `${key}-round.gguf`]) {
        const kv = (await readGgufFile(`${dir}/${other}`)).kv;
        assert.deepEqual(tokenizerKv(kv), tokenizerKv(direct.kv), `${other}: tokenizer keys`);
      }
      jobs.push({
        key,
        path: gguf,
        texts: [...strings.common, ...expected.tokenizers[key]!.texts],
      });
    }
    const results = await llamaTokenize(jobs.map(({ path, texts }) => ({ path, texts })));
    const report: string[] = [];
    for (const [i, { key, texts }] of jobs.entries()) {
      const { same, differences } = tokenizationDifferences(
        key,
        texts,
        results[i]!,
        expected.tokenizers[key]!.ids,
        KNOWN_DIFFERENCES[key],
      );
      report.push(...differences);
      console.log(`${key}: ${same}/${texts.length} strings tokenized as transformers does`);
    }
    assert.deepEqual(report, [], report.join("\n"));
  });
});
