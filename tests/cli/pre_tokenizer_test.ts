/**
 * Issue 26 item 1: a byte-level BPE tokenizer whose pre-tokenizer llama.cpp
 * does not implement is refused for GGUF output (exit 2, one line naming the
 * steps found and the flag), never written as "default" silently, as
 * llama.cpp's converter refuses a tokenizer whose hash it does not know;
 * `--pre-tokenizer default` writes it anyway; APR output records it.
 */

import { equal, ok } from "node:assert/strict";
import { join } from "node:path";
import { assertOneLineError, DEMO_MODEL, runApr, withTempDir } from "./_run_apr.ts";
import { readGgufFile } from "../interop/_files.ts";
import { openModel } from "../../src/pipeline/open_model.ts";

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/** A copy of a model folder whose tokenizer.json splits by one regex, then ByteLevel. */
async function withSplitRegex(dir: string, source: string, regex: string): Promise<string> {
  const folder = join(dir, "model");
  await Deno.mkdir(folder);
  for (const entry of Deno.readDirSync(source)) {
    await Deno.copyFile(join(source, entry.name), join(folder, entry.name));
  }
  const tokenizer = JSON.parse(await Deno.readTextFile(join(folder, "tokenizer.json")));
  tokenizer.pre_tokenizer = {
    type: "Sequence",
    pretokenizers: [
      { type: "Split", pattern: { Regex: regex }, behavior: "Isolated", invert: false },
      { type: "ByteLevel", add_prefix_space: false, use_regex: false },
    ],
  };
  await Deno.writeTextFile(join(folder, "tokenizer.json"), JSON.stringify(tokenizer));
  return folder;
}

/** The demo model with a pre-tokenizer llama.cpp has no name for (whitespace split + ByteLevel). */
function unknownPreTokenizerModel(dir: string): Promise<string> {
  return withSplitRegex(dir, DEMO_MODEL, "\\s+|\\w+");
}

Deno.test("an unrecognised byte-level pre-tokenizer: GGUF refused (exit 2, no output), --pre-tokenizer default writes it, APR keeps it", async () => {
  await withTempDir(async (dir) => {
    const folder = await unknownPreTokenizerModel(dir);
    const gguf = join(dir, "x.gguf");
    const refused = await runApr(["convert", folder, "-o", gguf, "--quiet"]);
    assertOneLineError(
      refused,
      `Cannot write "${gguf}"`,
      "tokenizer.json's pre-tokenizer (Split(Isolated, \\s+|\\w+) + ByteLevel)",
      "llama-bpe, smaug-bpe, qwen2, deepseek-v3",
      '--pre-tokenizer default writes "default" anyway',
    );
    ok(!(await exists(gguf)) && !(await exists(`${gguf}.partial`)), "no output");

    const forced = await runApr(["convert", folder, "-o", gguf, "--pre-tokenizer", "default"]);
    equal(forced.code, 0, forced.stderr);
    equal((await readGgufFile(gguf)).kv.get("tokenizer.ggml.pre")?.value, "default");

    // APR output is written; the export from it is refused the same way.
    const apr = join(dir, "x.apr");
    equal((await runApr(["import", folder, "-o", apr, "--quiet"])).code, 0);
    const model = await openModel(apr);
    try {
      equal(model.header.metadata["tokenizer.pre"], undefined);
      equal(
        model.header.metadata["tokenizer.pre_unrecognised"],
        "Split(Isolated, \\s+|\\w+) + ByteLevel",
      );
    } finally {
      await model.close();
    }
    const exported = join(dir, "y.gguf");
    assertOneLineError(
      await runApr(["export", apr, "--format", "gguf", "-o", exported, "--quiet"]),
      "--pre-tokenizer default",
    );
    ok(!(await exists(exported)));

    assertOneLineError(
      await runApr(["convert", folder, "-o", gguf, "--force", "--pre-tokenizer", "llama5"]),
      'Unknown pre-tokenizer "llama5": expected one of default, llama-bpe, llama3,',
    );
  });
});

Deno.test("a Laguna tokenizer llama.cpp splits with custom code: the refusal names the converter's laguna, and --pre-tokenizer laguna writes it", async () => {
  await withTempDir(async (dir) => {
    // llama.cpp's first laguna regex (src/llama-vocab.cpp) as the tokenizer.json's split.
    const folder = await withSplitRegex(
      dir,
      new URL("../testdata/families/hf/laguna/", import.meta.url).pathname,
      "[^\\n]+|[\\n]+",
    );
    const gguf = join(dir, "x.gguf");
    assertOneLineError(
      await runApr(["convert", folder, "-o", gguf, "--quiet"]),
      "Split(Isolated, [^\\n]+|[\\n]+) + ByteLevel",
      'the published laguna tokenizer is "laguna"',
      "--pre-tokenizer laguna writes that name for it",
    );
    ok(!(await exists(gguf)), "no output");
    const forced = await runApr(["convert", folder, "-o", gguf, "--pre-tokenizer", "laguna"]);
    equal(forced.code, 0, forced.stderr);
    equal((await readGgufFile(gguf)).kv.get("tokenizer.ggml.pre")?.value, "laguna");
  });
});
