/**
 * Hunyuan MoE as published: a folder with `hy.tiktoken` and no
 * `tokenizer.json`. llama.cpp's converter reads that vocabulary through the
 * checkpoint's remote tokenizer code; aprkit reads the file itself (its
 * special tokens after the ranks, the merges rebuilt from the ranks), and
 * its GGUF must equal the converter's of the `hunyuan-moe` fixture, whose
 * vocabulary the converter read from `hy.tiktoken` (tests/testdata/families).
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { assertOneLineError, runApr, withTempDir } from "../cli/_run_apr.ts";
import {
  fail,
  familyDir,
  fileDifference,
  ggufDescription,
  llamaCppManifest,
  manifestDifferences,
} from "./_families.ts";

/** The fixture without its tokenizer.json, in a folder of its name (the converter's general.name). */
async function withoutTokenizerJson(dir: string): Promise<string> {
  const folder = `${dir}/hunyuan-moe`;
  await Deno.mkdir(folder);
  for await (const entry of Deno.readDir(familyDir("hunyuan-moe"))) {
    if (entry.name === "tokenizer.json") continue;
    await Deno.copyFile(`${familyDir("hunyuan-moe")}/${entry.name}`, `${folder}/${entry.name}`);
  }
  return folder;
}

Deno.test("hunyuan-moe: from hy.tiktoken alone, the GGUF equals the converter's (F32, Q8_0)", async () => {
  await withTempDir(async (dir) => {
    const folder = await withoutTokenizerJson(dir);
    for (const type of ["f32", "q8_0"] as const) {
      const out = `${dir}/hunyuan-moe-${type}.gguf`;
      await convertModel(folder, out, type === "f32" ? {} : { quantize: type });
      const theirs = await llamaCppManifest("hunyuan-moe", type);
      assert.ok(theirs !== undefined);
      fail(`hunyuan-moe ${type}`, manifestDifferences(await ggufDescription(out), theirs));
      fail(`hunyuan-moe ${type}`, await fileDifference(out, theirs));
    }
  });
});

Deno.test("hunyuan-moe: a hy.tiktoken line that is not a token and its rank is refused, naming the file", async () => {
  await withTempDir(async (dir) => {
    const folder = await withoutTokenizerJson(dir);
    await Deno.writeTextFile(`${folder}/hy.tiktoken`, "IQ== 0\nnot-a-line\n");
    const out = `${dir}/out.gguf`;
    const run = await runApr(["convert", folder, "-o", out]);
    assertOneLineError(run, /hy\.tiktoken.*line 2 is not a base64 token and its rank/);
    await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
  });
});
