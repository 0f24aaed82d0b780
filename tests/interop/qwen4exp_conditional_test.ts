/**
 * Qwen4-Exp's image-text class (`Qwen4ExpForConditionalGeneration`): the
 * `qwen4exp` fixture's language model with a tiny Qwen3-VL vision tower
 * (`tests/testdata/families/hf/qwen4exp-cg`, transformers 5.18's
 * `model.language_model.*` / `model.visual.*` layout). aprkit writes its
 * language model as the converter does without `--mmproj` (f32, bf16, q8_0
 * and llama-quantize's presets), `ple.image_token_id` included, leaving the
 * vision tower out with one note, and llama.cpp runs it as transformers
 * computes the `qwen4exp` fixture (the same weights; make_families.py checks
 * the composite computes the same). Its vision GGUF (`--mmproj`) equals the
 * converter's (Qwen3-VL's tower, `Qwen4ExpVisionModel`); a tower RoPE base
 * other than the 10000 llama.cpp's `qwen3vl_merger` graph hard-codes is
 * refused in one line, with no file.
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
  llamaCppManifest,
} from "./_families.ts";
import { assertMmprojAsConverter, copyCheckpoint, fixtureJson } from "./_multimodal.ts";

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

Deno.test("qwen4exp (Qwen4ExpForConditionalGeneration): --mmproj writes the vision GGUF equal to llama.cpp's converter's", async () => {
  await withTempDir(async (dir) => {
    const theirs = await fixtureJson<GgufManifest>(
      testdata("families"),
      "llama.cpp/qwen4exp-cg-mmproj-f32.json",
    );
    // The tower's block, merger, patch kernel (two frames) and position embeddings.
    assert.equal(theirs.tensors.length, 22);
    await assertMmprojAsConverter(
      familyDir("qwen4exp-cg"),
      `${dir}/m.gguf`,
      theirs,
      await fixtureJson<GgufManifest>(testdata("families"), "llama.cpp/qwen4exp-cg-f32.json"),
    );
  });
});

Deno.test("qwen4exp (Qwen4ExpForConditionalGeneration): --mmproj with a tower RoPE base other than llama.cpp's 10000 is refused in one line, before any warning of the text model, with no file", async () => {
  await withTempDir(async (dir) => {
    const model = await copyCheckpoint(familyDir("qwen4exp-cg"), `${dir}/src`, (config) => {
      const vision = config["vision_config"] as Record<string, unknown>;
      vision["rope_parameters"] = { rope_type: "axial", rope_theta: 20000 };
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
    // The refusal comes before the text layout's QSA warning, which is not printed.
    assertOneLineError(
      run,
      /vision GGUF.*rope_parameters has rope_theta 20000.*qwen3vl_merger.*base 10000/,
    );
    assert.deepEqual([...Deno.readDirSync(out)], []);
  });
});
