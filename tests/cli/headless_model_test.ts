/**
 * A family's headless base class (`LlamaModel`, `MistralModel`, as e5-mistral
 * saves it) is not its causal LM: `model_type` names the family, but a
 * causal-LM GGUF of it is no embedding model (issue 32). Refused; the
 * causal-LM class of the same checkpoint still converts. `Qwen3Model` and
 * `Qwen2Model` are written as embedders (tests/interop/embeddings_test.ts).
 *
 * @module
 */

import { equal, ok } from "node:assert/strict";
import { copyCheckpoint } from "../interop/_multimodal.ts";
import { assertOneLineError, exists, runApr, testdata, withTempDir } from "./_run_apr.ts";

for (
  const [fixture, headless, converter] of [
    ["llama", "LlamaModel", "writes it as a llama GGUF with no pooling_type"],
    ["mistral", "MistralModel", "has no MistralModel class"],
  ] as const
) {
  Deno.test(`${headless} (a headless ${fixture}) is refused for GGUF, one line, nothing written`, async () => {
    await withTempDir(async (dir) => {
      const model = await copyCheckpoint(testdata(`families/hf/${fixture}`), `${dir}/model`);
      const configPath = `${model}/config.json`;
      const config = JSON.parse(await Deno.readTextFile(configPath));
      const out = `${dir}/out.gguf`;
      // The causal-LM class converts…
      const causal = await runApr(["convert", model, "-o", out, "--quiet"]);
      equal(causal.code, 0, causal.stderr);
      await Deno.remove(out);
      // …its headless base class does not.
      await Deno.writeTextFile(
        configPath,
        JSON.stringify({ ...config, architectures: [headless] }),
      );
      const run = await runApr(["convert", model, "-o", out]);
      assertOneLineError(run, headless, converter, "embedding models", "sentence-transformers");
      ok(!await exists(out), "nothing at the output");
      ok(!await exists(`${out}.partial`), "no partial file");
    });
  });
}
