/**
 * Gemma 4 as published (`Gemma4ForConditionalGeneration`): the `gemma4`
 * fixture's language model inside the image-text class with a tiny vision
 * tower (`tests/testdata/families/hf/gemma4-cg`, transformers 5.18's
 * `model.language_model.*` layout); and `Gemma4UnifiedForConditionalGeneration`:
 * the `gemma4-dense` fixture's inside the unified class with its tiny vision
 * and audio embedders and `suppress_tokens` in generation_config.json
 * (`hf/gemma4-unified`). aprkit writes each language model as the converter
 * does without `--mmproj` (f32, bf16, q8_0 and llama-quantize's presets,
 * sha256 for sha256; the unified one with `tokenizer.ggml.suppress_tokens`),
 * leaving the towers out with one note, and llama.cpp runs it as transformers
 * computes the text fixture (the same weights; make_families.py checks the
 * composite computes the same). Gemma4ForConditionalGeneration's vision GGUF
 * (`--mmproj`) equals the converter's; with an audio tower (which the converter
 * writes into the same file) it is refused in one line, with no file, as the
 * unified class's `--mmproj` is.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { assertOneLineError, runApr, testdata, withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile } from "./_files.ts";
import { llamaLogProbs } from "./_llama_judge.ts";
import {
  compareWithReference,
  equalsConverterFiles,
  fail,
  familyDir,
  familyReference,
  type GgufManifest,
} from "./_families.ts";
import { assertMmprojAsConverter, copyCheckpoint, fixtureJson } from "./_multimodal.ts";

/** Each image-text fixture: its class, its text fixture, how its towers are named in the note. */
const COMPOSITES = [
  {
    fixture: "gemma4-cg",
    hfClass: "Gemma4ForConditionalGeneration",
    text: "gemma4",
    note: /vision and audio towers .* left out.*--mmproj/,
  },
  {
    fixture: "gemma4-unified",
    hfClass: "Gemma4UnifiedForConditionalGeneration",
    text: "gemma4-dense",
    note: /vision and audio embedders .* left out.*--mmproj/,
  },
] as const;

for (const { fixture, hfClass, text, note } of COMPOSITES) {
  Deno.test(`${text} (${hfClass}): the text GGUF equals llama.cpp's converter's and llama-quantize's`, async (t) => {
    await equalsConverterFiles(t, fixture);
  });

  Deno.test(`${text} (${hfClass}): llama.cpp runs the text GGUF as transformers computes it; the towers are left out with one note`, async () => {
    await withTempDir(async (dir) => {
      const out = `${dir}/cg.gguf`;
      const notes: string[] = [];
      await convertModel(familyDir(fixture), out, { onNote: (m) => notes.push(m) });
      assert.equal(notes.filter((n) => note.test(n)).length, 1, notes.join("\n"));
      const ref = await familyReference(text);
      const [run] = await llamaLogProbs([{
        path: out,
        ids: ref.sequence,
        positions: ref.positions,
      }]);
      assert.equal(run!.error, undefined, run!.error);
      fail(fixture, compareWithReference(ref, run!.logprobs));
    });
  });

  // Gemma4ForConditionalGeneration's vision GGUF is written (below); the unified class's is not.
  if (fixture === "gemma4-cg") continue;
  Deno.test(`${text} (${hfClass}): --mmproj is refused in one line, with no file`, async () => {
    await withTempDir(async (dir) => {
      const run = await runApr([
        "convert",
        familyDir(fixture),
        "-o",
        `${dir}/m.gguf`,
        "--mmproj",
        `${dir}/mm.gguf`,
      ]);
      assertOneLineError(
        run,
        new RegExp(`vision GGUF.*aprkit writes none for ${hfClass}.*--mmproj`),
      );
      assert.deepEqual([...Deno.readDirSync(dir)], []);
    });
  });
}

Deno.test("gemma4: tokenizer.ggml.suppress_tokens only for Gemma4UnifiedForConditionalGeneration, as only its converter class writes it", async () => {
  await withTempDir(async (dir) => {
    await convertModel(familyDir("gemma4-unified"), `${dir}/unified.gguf`);
    const unified = (await readGgufFile(`${dir}/unified.gguf`)).kv;
    assert.deepEqual(unified.get("tokenizer.ggml.suppress_tokens")?.value, [3, 5, 7]);
    // The text fixture (Gemma4ForCausalLM) with the same generation_config.json.
    const folder = `${dir}/dense`;
    await Deno.mkdir(folder);
    for (const entry of Deno.readDirSync(familyDir("gemma4-dense"))) {
      await Deno.copyFile(`${familyDir("gemma4-dense")}/${entry.name}`, `${folder}/${entry.name}`);
    }
    await Deno.copyFile(
      `${familyDir("gemma4-unified")}/generation_config.json`,
      `${folder}/generation_config.json`,
    );
    await convertModel(folder, `${dir}/dense.gguf`);
    const dense = (await readGgufFile(`${dir}/dense.gguf`)).kv;
    assert.equal(dense.has("tokenizer.ggml.suppress_tokens"), false);
  });
});

Deno.test("gemma4 (Gemma4ForConditionalGeneration): --mmproj writes the vision GGUF equal to llama.cpp's converter's", async () => {
  await withTempDir(async (dir) => {
    const theirs = await fixtureJson<GgufManifest>(
      testdata("families"),
      "llama.cpp/gemma4-cg-mmproj-f32.json",
    );
    assert.ok(theirs.tensors.length > 10);
    await assertMmprojAsConverter(
      familyDir("gemma4-cg"),
      `${dir}/m.gguf`,
      theirs,
      await fixtureJson<GgufManifest>(testdata("families"), "llama.cpp/gemma4-cg-f32.json"),
      () => false,
    );
  });
});

Deno.test("gemma4 (Gemma4ForConditionalGeneration): --mmproj with an audio tower (the converter writes both in one file) is refused in one line, with no file", async () => {
  await withTempDir(async (dir) => {
    const model = await copyCheckpoint(familyDir("gemma4-cg"), `${dir}/src`, (config) => {
      config["audio_config"] = { model_type: "gemma4_audio", hidden_size: 32 };
    });
    const out = `${dir}/out`;
    await Deno.mkdir(out);
    const run = await runApr([
      "convert",
      model,
      "-o",
      `${out}/m.gguf`,
      "--mmproj",
      `${out}/mm.gguf`,
    ]);
    assertOneLineError(run, /vision GGUF.*audio_config.*does not yet/);
    assert.deepEqual([...Deno.readDirSync(out)], []);
  });
});
