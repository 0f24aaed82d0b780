/**
 * Issue 35 item 2: tokenization better than the converter where llama.cpp
 * allows it. For an o200k tokenizer (gpt-oss's, published) the converter
 * writes `gpt-4o`, whose llama.cpp regex drops combining marks (\p{M}) from
 * the letter classes; aprkit writes `granite-embed-multi-97m`, the same regex
 * with \p{M}. llama.cpp (the judge) must then tokenize ~40 texts with marks
 * in many scripts (tests/testdata/tokenizers/combining_marks.json, Hugging
 * Face `tokenizers`' ids, made by make_combining_marks.py) as transformers
 * does, where the converter's name (`--pre-tokenizer gpt-4o`) differs on
 * most. Mistral Nemo's `tekken` has no such name in llama.cpp: it stays.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile } from "./_files.ts";
import { llamaTokenize } from "./_llama_judge.ts";
import { tokenizationDifferences } from "./_tokenizations.ts";
import { tokenizerFiles, tokenizerPackages } from "./_tokenizer_packages.ts";
import { writeTinyLlama } from "./_tiny_llama.ts";

const reference = JSON.parse(
  await Deno.readTextFile(
    new URL("../testdata/tokenizers/combining_marks.json", import.meta.url),
  ),
) as { texts: string[]; ids: Record<string, number[][]> };

Deno.test("combining marks: llama.cpp tokenizes aprkit's o200k GGUF as transformers does; the converter's gpt-4o does not", async () => {
  const packages = await tokenizerPackages();
  await withTempDir(async (dir) => {
    const runs: { name: string; key: string; pre?: string; want: string }[] = [
      { name: "gpt-oss, aprkit's default", key: "gptoss", want: "granite-embed-multi-97m" },
      { name: "gpt-oss, the converter's name", key: "gptoss", pre: "gpt-4o", want: "gpt-4o" },
      { name: "Mistral Nemo (tekken)", key: "mistral_nemo", want: "tekken" },
    ];
    const paths: string[] = [];
    for (const [i, run] of runs.entries()) {
      const folder = `${dir}/${i}`;
      await Deno.mkdir(folder);
      const files = await tokenizerFiles(run.key);
      for (const file of ["tokenizer.json", "tokenizer_config.json"]) {
        await Deno.copyFile(`${files}/${file}`, `${folder}/${file}`);
      }
      await writeTinyLlama(folder, packages[run.key]!.vocab_size);
      const gguf = `${dir}/${i}.gguf`;
      await convertModel(folder, gguf, run.pre !== undefined ? { preTokenizer: run.pre } : {});
      const kv = (await readGgufFile(gguf)).kv;
      assert.equal(
        kv.get("tokenizer.ggml.pre")?.value,
        run.want,
        `${run.name}: tokenizer.ggml.pre`,
      );
      paths.push(gguf);
    }
    const results = await llamaTokenize(paths.map((path) => ({ path, texts: reference.texts })));
    const counts = runs.map((run, i) => {
      const { same, differences } = tokenizationDifferences(
        run.name,
        reference.texts,
        results[i]!,
        reference.ids[run.key]!,
      );
      console.log(`${run.name}: ${same}/${reference.texts.length} as transformers`);
      return { same, differences };
    });
    const n = reference.texts.length;
    assert.deepEqual(counts[0]!.differences, [], counts[0]!.differences.join("\n"));
    // What the default buys: the converter's name splits most of these texts otherwise.
    assert.ok(counts[1]!.same < n / 2, `gpt-4o: ${counts[1]!.same}/${n} as transformers`);
    // No llama.cpp name runs Tekken's regex with \p{M}: the converter's name stays, and differs.
    assert.ok(counts[2]!.same < n, `tekken: ${counts[2]!.same}/${n} as transformers`);
  });
});
