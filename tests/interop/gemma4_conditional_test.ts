/**
 * Gemma 4 as published (`Gemma4ForConditionalGeneration`): the `gemma4`
 * fixture's language model inside the image-text class with a tiny vision
 * tower (`tests/testdata/families/hf/gemma4-cg`, transformers 5.18's
 * `model.language_model.*` layout). aprkit writes its language model as the
 * converter does without `--mmproj` (f32, bf16, q8_0 and llama-quantize's
 * presets, sha256 for sha256), leaving the towers out with one note, and
 * llama.cpp runs it as transformers computes the `gemma4` fixture (the same
 * weights; make_families.py checks the composite computes the same). Its
 * vision GGUF (`--mmproj`) equals the converter's; with an audio tower (which
 * the converter writes into the same file) it is refused in one line, with no
 * file.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { assertOneLineError, runApr, testdata, withTempDir } from "../cli/_run_apr.ts";
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

Deno.test("gemma4 (Gemma4ForConditionalGeneration): the text GGUF equals llama.cpp's converter's and llama-quantize's", async (t) => {
  await equalsConverterFiles(t, "gemma4-cg");
});

Deno.test("gemma4 (Gemma4ForConditionalGeneration): llama.cpp runs the text GGUF as transformers computes it; the towers are left out with one note", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/cg.gguf`;
    const notes: string[] = [];
    await convertModel(familyDir("gemma4-cg"), out, { onNote: (m) => notes.push(m) });
    assert.equal(
      notes.filter((n) => /vision and audio towers .* left out.*--mmproj/.test(n)).length,
      1,
      notes.join("\n"),
    );
    const ref = await familyReference("gemma4");
    const [run] = await llamaLogProbs([{ path: out, ids: ref.sequence, positions: ref.positions }]);
    assert.equal(run!.error, undefined, run!.error);
    fail("gemma4-cg", compareWithReference(ref, run!.logprobs));
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
