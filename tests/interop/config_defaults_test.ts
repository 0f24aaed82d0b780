/**
 * A config.json that leaves out a sizing field converts to the file llama.cpp's
 * converter writes for it. The converter reads config.json through
 * transformers' `AutoConfig.to_dict()`, so it sees the field as the class
 * fills it in (Qwen3's head_dim 128, Gemma's 256, DeepSeek's
 * qk_rope_head_dim, `num_key_value_heads` as the head count, the context
 * length, the norm epsilon, `rope_parameters`) and writes KV pairs from it;
 * aprkit fills them in from the same rules (src/arch/config_defaults.ts).
 * The converter's files and the cases are made by
 * tests/testdata/config_defaults/make_config_defaults.py (which checks
 * transformers loads each copy); where the default contradicts the tensors
 * (transformers cannot load the copy, the converter writes a file llama.cpp
 * cannot load), aprkit refuses with one line.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { assertOneLineError, exists, runApr, withTempDir } from "../cli/_run_apr.ts";
import {
  fail,
  familyDir,
  fileDifference,
  ggufDescription,
  type GgufManifest,
  manifestDifferences,
} from "./_families.ts";
import { copyCheckpoint } from "./_multimodal.ts";

const HERE = new URL("../testdata/config_defaults/", import.meta.url).pathname;

interface Case {
  name: string;
  base: string;
  drop: string[];
  made?: Record<string, unknown>;
  converter?: string;
}

const CASES = JSON.parse(await Deno.readTextFile(`${HERE}cases.json`)) as {
  equal: Case[];
  refused: Case[];
};

/** The case's checkpoint copied to `<dir>/<name>` (the converter names the file after its folder) without its fields. */
function copy(c: Case, dir: string): Promise<string> {
  const from = c.made === undefined ? familyDir(c.base) : `${HERE}hf/${c.name}`;
  return copyCheckpoint(from, `${dir}/${c.name}`, (config) => {
    const text = (config["text_config"] ?? config) as Record<string, unknown>;
    for (const field of c.drop) {
      assert.ok(Object.hasOwn(text, field), `${c.name}: ${field} is not in config.json`);
      delete text[field];
    }
  });
}

for (const c of CASES.equal) {
  Deno.test(`config defaults ${c.name}: without ${c.drop.join(", ")}, the converter's file`, async () => {
    await withTempDir(async (dir) => {
      const source = await copy(c, dir);
      const out = `${dir}/${c.name}.gguf`;
      await convertModel(source, out);
      const theirs = JSON.parse(
        await Deno.readTextFile(`${HERE}llama.cpp/${c.name}-f32.json`),
      ) as GgufManifest;
      const mine = await ggufDescription(out);
      fail(c.name, manifestDifferences(mine, theirs));
      fail(c.name, await fileDifference(out, theirs));
    });
  });
}

Deno.test("config defaults: the made checkpoints' sizes are the defaults their class fills in", async () => {
  // Each made checkpoint states the field it is converted without, at the class default.
  const defaults: Record<string, number> = {
    "qwen3-head-dim": 128,
    "gemma2-head-dim": 256,
    "gemma3-head-dim": 256,
  };
  for (const c of CASES.equal.filter((c) => c.made !== undefined)) {
    const config = JSON.parse(await Deno.readTextFile(`${HERE}hf/${c.name}/config.json`));
    assert.equal(config["head_dim"], defaults[c.name], c.name);
    const theirs = JSON.parse(
      await Deno.readTextFile(`${HERE}llama.cpp/${c.name}-f32.json`),
    ) as GgufManifest;
    const key = theirs.kv.find((k) => k.key.endsWith(".attention.key_length"));
    assert.equal(key?.value, defaults[c.name], c.name);
  }
});

for (const c of CASES.refused) {
  Deno.test(`config defaults ${c.name}: without ${c.drop.join(", ")}, the default contradicts the tensors: refused`, async () => {
    // The converter writes a file (make_config_defaults.py records it) that llama.cpp cannot load.
    assert.equal(c.converter, "writes a file");
    await withTempDir(async (dir) => {
      const source = await copy(c, dir);
      const out = `${dir}/out.gguf`;
      const run = await runApr(["convert", source, "-o", out]);
      assertOneLineError(
        run,
        source,
        `no ${c.drop[0]}, so transformers' default`,
        "does not match the model's config",
      );
      assert.equal(await exists(out), false);
    });
  });
}
