/**
 * Gemma 4's speculative-decoding drafters (`Gemma4AssistantForCausalLM`,
 * `Gemma4UnifiedAssistantForCausalLM`; fixtures `gemma4-assistant` and
 * `gemma4-unified-assistant`): aprkit writes them as llama.cpp's converter
 * does (`gemma4-assistant`: f32, bf16, q8_0 and llama-quantize's presets,
 * sha256 for sha256). A drafter runs on its target's hidden states and KV
 * (`nextn_predict_layers` = every layer), so it has no log-probabilities of
 * its own to judge: llama.cpp (node-llama-cpp 3.22.1) gives it no context
 * alone, which is checked so that a llama.cpp that does is noticed.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { assertOneLineError, runApr, withTempDir } from "../cli/_run_apr.ts";
import { llamaLogProbs } from "./_llama_judge.ts";
import { equalsConverterFiles, familyDir } from "./_families.ts";
import { copyCheckpoint } from "./_multimodal.ts";

for (const fixture of ["gemma4-assistant", "gemma4-unified-assistant"]) {
  Deno.test(`${fixture}: the GGUF equals llama.cpp's converter's and llama-quantize's`, async (t) => {
    await equalsConverterFiles(t, fixture);
  });
}

Deno.test("gemma4-assistant: llama.cpp makes no context for a drafter alone", async () => {
  await withTempDir(async (dir) => {
    await convertModel(familyDir("gemma4-assistant"), `${dir}/a.gguf`);
    const [run] = await llamaLogProbs([{
      path: `${dir}/a.gguf`,
      ids: [5, 6, 7, 8],
      positions: [3],
    }]);
    assert.match(run!.error ?? "", /Failed to create context/);
  });
});

Deno.test("gemma4-assistant: a drafter whose layers do not all read the target's KV is refused", async () => {
  await withTempDir(async (dir) => {
    const folder = await copyCheckpoint(familyDir("gemma4-assistant"), `${dir}/in`, (config) => {
      (config["text_config"] as Record<string, unknown>)["num_kv_shared_layers"] = 2;
    });
    const run = await runApr(["convert", folder, "-o", `${dir}/a.gguf`]);
    assertOneLineError(run, /num_kv_shared_layers 2 of 4 layers.*target's KV/);
    assert.equal([...Deno.readDirSync(dir)].some((e) => e.name === "a.gguf"), false);
  });
});

Deno.test("gemma4-assistant: the GGUF reads back under the checkpoint's names, the rope_freqs it made dropped", async () => {
  await withTempDir(async (dir) => {
    await convertModel(familyDir("gemma4-assistant"), `${dir}/a.gguf`);
    await convertModel(`${dir}/a.gguf`, `${dir}/back.safetensors`);
    const bytes = await Deno.readFile(`${dir}/back.safetensors`);
    const length = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length)));
    const index = JSON.parse(
      await Deno.readTextFile(`${familyDir("gemma4-assistant")}/model.safetensors.index.json`),
    );
    const names = (o: Record<string, unknown>) =>
      Object.keys(o).filter((k) => k !== "__metadata__");
    assert.deepEqual(names(header).sort(), Object.keys(index.weight_map).sort());
  });
});

Deno.test("gemma4-assistant: a masked embedder (use_ordered_embeddings) is left out with one warning", async () => {
  await withTempDir(async (dir) => {
    const folder = await copyCheckpoint(familyDir("gemma4-assistant"), `${dir}/in`, (config) => {
      config["use_ordered_embeddings"] = true;
    });
    const run = await runApr(["convert", folder, "-o", `${dir}/a.gguf`]);
    assert.equal(run.code, 0, run.stderr);
    const warnings = run.stderr.split("\n").filter((l) =>
      /masked embedder.*whole vocabulary/.test(l)
    );
    assert.equal(warnings.length, 1, run.stderr);
  });
});
