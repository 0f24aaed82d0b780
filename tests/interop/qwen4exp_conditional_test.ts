/**
 * Qwen4-Exp's image-text class (`Qwen4ExpForConditionalGeneration`): the
 * `qwen4exp` fixture's language model with a tiny Qwen3-VL vision tower
 * (`tests/testdata/families/hf/qwen4exp-cg`, transformers 5.18's
 * `model.language_model.*` / `model.visual.*` layout). aprkit writes its
 * language model as the converter does without `--mmproj` (f32, bf16, q8_0
 * and llama-quantize's presets), `ple.image_token_id` included, leaving the
 * vision tower out with one note, and llama.cpp runs it as transformers
 * computes the `qwen4exp` fixture (the same weights; make_families.py checks
 * the composite computes the same). Its vision GGUF (`--mmproj`) is refused
 * in one line, with no file.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { assertOneLineError, runApr, withTempDir } from "../cli/_run_apr.ts";
import { llamaLogProbs } from "./_llama_judge.ts";
import {
  compareWithReference,
  equalsConverterFiles,
  fail,
  familyDir,
  familyReference,
  llamaCppManifest,
} from "./_families.ts";

Deno.test("qwen4exp (Qwen4ExpForConditionalGeneration): the text GGUF equals llama.cpp's converter's and llama-quantize's", async (t) => {
  await equalsConverterFiles(t, "qwen4exp-cg");
  // What the class adds to the text model's keys: the image placeholder the PLE hash uses.
  const manifest = await llamaCppManifest("qwen4exp-cg", "f32");
  assert.equal(manifest!.kv.find((e) => e.key === "qwen4exp.ple.image_token_id")?.value, 377);
});

Deno.test("qwen4exp (Qwen4ExpForConditionalGeneration): llama.cpp runs the text GGUF as transformers computes it; the tower is left out with one note", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/cg.gguf`;
    const notes: string[] = [];
    await convertModel(familyDir("qwen4exp-cg"), out, { onNote: (m) => notes.push(m) });
    assert.equal(notes.filter((n) => /left out.*--mmproj/.test(n)).length, 1, notes.join("\n"));
    const ref = await familyReference("qwen4exp");
    const [run] = await llamaLogProbs([{ path: out, ids: ref.sequence, positions: ref.positions }]);
    assert.equal(run!.error, undefined, run!.error);
    fail("qwen4exp-cg", compareWithReference(ref, run!.logprobs));
  });
});

Deno.test("qwen4exp (Qwen4ExpForConditionalGeneration): --mmproj is refused in one line, before any warning of the text model, with no file", async () => {
  await withTempDir(async (dir) => {
    const run = await runApr([
      "convert",
      familyDir("qwen4exp-cg"),
      "-o",
      `${dir}/m.gguf`,
      "--mmproj",
      `${dir}/mm.gguf`,
    ]);
    // The refusal comes before the text layout's QSA warning, which is not printed.
    assertOneLineError(
      run,
      /vision GGUF.*aprkit writes none for Qwen4ExpForConditionalGeneration.*--mmproj/,
    );
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  });
});
