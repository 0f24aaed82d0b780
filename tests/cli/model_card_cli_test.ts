/**
 * Issue 35 item 1: a model card aprkit cannot read is a bad input like any
 * other companion file: exit 2, one line naming README.md and the line of its
 * header, nothing at the output path. One it can read reaches the GGUF.
 */

import { equal, ok } from "node:assert/strict";
import { assertOneLineError, exists, runApr, withTempDir } from "./_run_apr.ts";
import { readGgufFile } from "../interop/_files.ts";

const SOURCE = new URL("../testdata/hf/tiny-qwen2/", import.meta.url);

async function copyFolder(to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(SOURCE)) {
    if (entry.isFile) await Deno.copyFile(new URL(entry.name, SOURCE), `${to}/${entry.name}`);
  }
}

Deno.test("apr convert: a malformed model card header is exit 2, one line naming README.md, no output", async () => {
  await withTempDir(async (dir) => {
    const folder = `${dir}/Tiny-Qwen2-0.5B-Instruct`;
    await copyFolder(folder);
    await Deno.writeTextFile(`${folder}/README.md`, "---\nlicense: mit\ntags: [a, b\n---\n# x\n");
    const out = `${dir}/m.gguf`;
    const run = await runApr(["convert", folder, "-o", out]);
    assertOneLineError(run, "README.md", /line 3: unterminated/);
    ok(!(await exists(out)), "no output");
    ok(!(await exists(`${out}.partial`)), "no partial output");
  });
});

Deno.test("apr convert: the card's licence and the name's parts reach the GGUF", async () => {
  await withTempDir(async (dir) => {
    const folder = `${dir}/Tiny-Qwen2-0.5B-Instruct`;
    await copyFolder(folder);
    await Deno.writeTextFile(
      `${folder}/README.md`,
      "---\nlicense: apache-2.0\nbase_model: Qwen/Qwen2.5-0.5B\nlanguage: [en, zh]\n---\n",
    );
    const out = `${dir}/m.gguf`;
    const run = await runApr(["convert", folder, "-o", out, "--quiet"]);
    equal(run.code, 0, run.stderr);
    const kv = (await readGgufFile(out)).kv;
    equal(kv.get("general.license")?.value, "apache-2.0");
    equal(kv.get("general.basename")?.value, "Tiny-Qwen2");
    equal(kv.get("general.finetune")?.value, "0.5b-Instruct");
    equal(
      kv.get("general.base_model.0.repo_url")?.value,
      "https://huggingface.co/Qwen/Qwen2.5-0.5B",
    );
    equal(JSON.stringify(kv.get("general.languages")?.value), '["en","zh"]');
  });
});
