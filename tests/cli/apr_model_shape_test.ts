/**
 * An APR file whose tensors contradict the config it recorded (issue 34 §1,
 * APR input): converted to GGUF or SafeTensors it is refused before the first
 * output byte (exit 2, one line naming the file and tensor, nothing at the
 * output), and `apr validate` reports it. The config an import records is
 * `hf_config` (config.json as read); an APR file without it (made from a
 * GGUF, or by another writer) is not judged (src/pipeline/model_shape_check.ts).
 */

import { equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { AprSink } from "../../src/formats/apr/sink.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import type { ModelChunk } from "../../src/tensor.ts";
import { assertOneLineError, DEMO_MODEL, exists, runApr, withTempDir } from "./_run_apr.ts";

/** The demo model imported to `dir/good.apr`, and a copy whose recorded config is `edit`ed. */
async function aprFiles(
  dir: string,
  edit: (config: Record<string, unknown>) => void,
): Promise<{ good: string; bad: string }> {
  const good = join(dir, "good.apr");
  const run = await runApr(["import", DEMO_MODEL, "-o", good]);
  equal(run.code, 0, run.stderr);
  const bad = join(dir, "bad.apr");
  const model = await openModel(good);
  await model.chunks().pipeThrough(
    new TransformStream<ModelChunk, ModelChunk>({
      transform(chunk, controller) {
        if (chunk.type === "header") {
          const config = { ...(chunk.header.metadata["hf_config"] as Record<string, unknown>) };
          edit(config);
          const metadata = { ...chunk.header.metadata, hf_config: config };
          controller.enqueue({ type: "header", header: { ...chunk.header, metadata } });
        } else controller.enqueue(chunk);
      },
    }),
  ).pipeTo(await AprSink.create(bad));
  await model.close();
  return { good, bad };
}

const CASES: [string, (c: Record<string, unknown>) => void, RegExp][] = [
  ["a third layer the file lacks", (c) => (c["num_hidden_layers"] = 3), /layer 2/],
  ["a narrower MLP", (c) => (c["intermediate_size"] = 96), /mlp/],
  ["one layer where the file has two", (c) => (c["num_hidden_layers"] = 1), /layers\.1\./],
];

Deno.test("an APR file that contradicts its recorded config is refused by convert and reported by validate", async (t) => {
  for (const [name, edit, tensor] of CASES) {
    await t.step(name, async () => {
      await withTempDir(async (dir) => {
        const { good, bad } = await aprFiles(dir, edit);
        for (const out of ["x.gguf", "x.safetensors"]) {
          const run = await runApr(["convert", bad, "-o", join(dir, out)]);
          assertOneLineError(run, "bad.apr", /does not match the model's config/, tensor);
          equal(await exists(join(dir, out)), false);
          equal(await exists(join(dir, `${out}.partial`)), false);
        }
        const validate = await runApr(["validate", bad]);
        ok(validate.code !== 0, validate.stdout);
        match(validate.stdout + validate.stderr, /tensors match the config/);
        match(validate.stdout + validate.stderr, /does not match the model's config/);
        // The unmodified file converts and validates.
        const ok1 = await runApr(["convert", good, "-o", join(dir, "y.gguf")]);
        equal(ok1.code, 0, ok1.stderr);
        const ok2 = await runApr(["validate", good]);
        equal(ok2.code, 0, ok2.stdout + ok2.stderr);
        match(ok2.stdout, /ok\s+tensors match the config/);
      });
    });
  }
});
