/**
 * Tied embeddings follow transformers' per-architecture defaults when
 * `config.json` has no `tie_word_embeddings` (issue 14): a Llama-style
 * config is untied (no lm_head copy is added), a Gemma-style one is tied
 * (the copy is added, and said in one line).
 *
 * @module
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import { tiedWordEmbeddings } from "../../src/formats/safetensors/hf_metadata.ts";
import { importModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { DEMO_MODEL, withTempDir } from "./_helpers.ts";

Deno.test("tiedWordEmbeddings(): config.json first, else the config class's default", () => {
  equal(tiedWordEmbeddings({ model_type: "llama", tie_word_embeddings: true }), true);
  equal(tiedWordEmbeddings({ model_type: "gemma2", tie_word_embeddings: false }), false);
  for (const type of ["llama", "qwen2", "mistral", "mixtral", "qwen3", "phi3"]) {
    equal(tiedWordEmbeddings({ model_type: type }), false, type);
  }
  for (const type of ["gpt2", "gemma", "gemma2", "gemma3"]) {
    equal(tiedWordEmbeddings({ model_type: type }), true, type);
  }
  equal(tiedWordEmbeddings({ model_type: "something-new" }), undefined);
  equal(tiedWordEmbeddings({ model_type: "constructor" }), undefined);
  equal(tiedWordEmbeddings({}), undefined);
});

/** The demo model with its config.json edited. */
async function demoWith(dir: string, edit: (config: Record<string, unknown>) => void) {
  const folder = `${dir}/model`;
  await Deno.mkdir(folder);
  for await (const e of Deno.readDir(DEMO_MODEL)) {
    await Deno.copyFile(`${DEMO_MODEL}/${e.name}`, `${folder}/${e.name}`);
  }
  const config = JSON.parse(await Deno.readTextFile(`${folder}/config.json`));
  edit(config);
  await Deno.writeTextFile(`${folder}/config.json`, JSON.stringify(config));
  return folder;
}

async function names(path: string): Promise<string[]> {
  const model = await openModel(path);
  try {
    return model.header.tensors.map((t) => t.name);
  } finally {
    await model.close();
  }
}

Deno.test("a Llama config without tie_word_embeddings gets no lm_head copy", async () => {
  await withTempDir(async (dir) => {
    const folder = await demoWith(dir, (c) => delete c.tie_word_embeddings);
    const notes: string[] = [];
    const result = await importModel(folder, `${dir}/out.apr`, { onNote: (m) => notes.push(m) });
    const written = await names(`${dir}/out.apr`);
    ok(!written.includes("lm_head.weight"), written.join());
    deepEqual(written.sort(), (await names(folder)).sort());
    equal(result.tensors, 20);
    deepEqual(notes, []);
    const model = await openModel(`${dir}/out.apr`);
    equal(model.header.metadata.tied_embeddings, false);
    await model.close();
  });
});

Deno.test("a Gemma config without tie_word_embeddings is tied: the copy is added and said", async () => {
  await withTempDir(async (dir) => {
    const folder = await demoWith(dir, (c) => {
      delete c.tie_word_embeddings;
      c.model_type = "gemma2";
      c.architectures = ["Gemma2ForCausalLM"];
    });
    const notes: string[] = [];
    await importModel(folder, `${dir}/out.apr`, { onNote: (m) => notes.push(m) });
    ok((await names(`${dir}/out.apr`)).includes("lm_head.weight"));
    equal(notes.length, 1);
    match(notes[0]!, /^adding lm_head\.weight as a copy of model\.embed_tokens\.weight \(/);
    match(notes[0]!, /by default for gemma2/);
    ok(!notes[0]!.includes("\n"));
  });
});
