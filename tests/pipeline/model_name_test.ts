import { equal } from "node:assert/strict";
import { hfFolderName } from "../../src/pipeline/model_name.ts";
import { idToTitle } from "../../src/arch/hf_model_card.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { testdata, withTempDir } from "./_helpers.ts";

Deno.test("idToTitle() titles names as gguf-py's Metadata.id_to_title", () => {
  // gguf-py's own test cases, and the fixtures' folders.
  equal(idToTitle("Mixtral-8x7B-Instruct-v0.1"), "Mixtral 8x7B Instruct v0.1");
  equal(idToTitle("Meta-Llama-3-8B"), "Meta Llama 3 8B");
  equal(idToTitle("hermes-2-pro-llama-3-8b-DPO"), "Hermes 2 Pro Llama 3 8b DPO");
  equal(idToTitle("tiny-llama"), "Tiny Llama");
  equal(idToTitle("tiny-qwen2"), "Tiny Qwen2");
  equal(idToTitle("qwen2.5-coder"), "Qwen2.5 Coder");
});

Deno.test("hfFolderName() names HF folders and repositories only", async () => {
  equal(await hfFolderName(testdata("hf/tiny-qwen2"), "safetensors"), "tiny-qwen2");
  equal(await hfFolderName(`${testdata("hf/tiny-qwen2")}/`, "safetensors"), "tiny-qwen2");
  equal(
    await hfFolderName("hf://Qwen/Qwen2.5-0.5B-Instruct", "safetensors"),
    "Qwen2.5-0.5B-Instruct",
  );
  equal(await hfFolderName(testdata("gguf/tiny-llama-f32.gguf"), "gguf"), undefined);
  equal(
    await hfFolderName(testdata("hf/tiny-qwen2/model-00001-of-00009.safetensors"), "safetensors"),
    undefined,
  );
});

Deno.test("an HF folder import is named after its folder; a name the source has is kept", async () => {
  await withTempDir(async (dir) => {
    await convertModel(testdata("hf/tiny-qwen2"), `${dir}/q.apr`);
    const apr = await openModel(`${dir}/q.apr`);
    try {
      equal(apr.header.metadata.name, "Tiny Qwen2");
    } finally {
      await apr.close();
    }
    // The GGUF's own general.name survives a GGUF → APR conversion.
    await convertModel(testdata("gguf/tiny-llama-f32.gguf"), `${dir}/l.apr`);
    const gguf = await openModel(`${dir}/l.apr`);
    const source = await openModel(testdata("gguf/tiny-llama-f32.gguf"));
    try {
      equal(gguf.header.metadata.name, source.header.metadata.name);
    } finally {
      await gguf.close();
      await source.close();
    }
  });
});
