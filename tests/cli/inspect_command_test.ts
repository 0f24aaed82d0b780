/**
 * `apr inspect` as a subprocess: text and `--json` for APR, GGUF, SafeTensors
 * files and folders.
 *
 * @module
 */

import { deepEqual, equal, match } from "node:assert/strict";
import { assertOneLineError, DEMO_MODEL, runApr, testdata, withTempDir } from "./_run_apr.ts";

Deno.test("apr inspect --json describes an APR file", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/demo.apr`;
    equal((await runApr(["import", DEMO_MODEL, "-o", out, "--quiet"])).code, 0);
    const [json, text] = await Promise.all([
      runApr(["inspect", out, "--json"]),
      runApr(["inspect", out]),
    ]);
    equal(json.code, 0, json.stderr);
    equal(json.stderr, "");
    const result = JSON.parse(json.stdout);
    equal(result.format, "apr");
    equal(result.version, "2.0");
    deepEqual(result.flags, ["LAYOUT_ROW_MAJOR"]);
    equal(result.fileSize, (await Deno.stat(out)).size);
    equal(result.tensorCount, 21); // with the explicit lm_head of the tied embedding
    equal(result.parameterCount, 311_936);
    deepEqual(result.dtypes.map((d: { dtype: string }) => d.dtype), ["BF16"]);
    equal(result.metadata.architecture, "llama");
    equal(result.metadata.param_count, 311_936);
    equal(text.code, 0);
    match(text.stdout, /^format: +apr v2\.0$/m);
    match(text.stdout, /^tensors: +21$/m);
    match(text.stdout, /^parameters: +311,936$/m);
  });
});

Deno.test("apr inspect reads GGUF, SafeTensors files and model folders", async () => {
  const [gguf, folder, file] = await Promise.all([
    runApr(["inspect", testdata("gguf/tiny-llama-q4_k_m.gguf"), "--json"]),
    runApr(["inspect", DEMO_MODEL, "--json"]),
    runApr(["inspect", testdata("safetensors/hf_samples/f.safetensors"), "--json"]),
  ]);
  equal(gguf.code, 0, gguf.stderr);
  const g = JSON.parse(gguf.stdout);
  equal(g.format, "gguf");
  equal(g.tensorCount, 21);
  deepEqual(
    g.dtypes.map((d: { dtype: string }) => d.dtype).sort(),
    ["F32", "Q4_K", "Q6_K"],
  );
  // As stored: the file's own pairs, typed (--translate gives APR's keys).
  deepEqual(g.metadata["general.architecture"], { type: "STRING", value: "llama" });
  equal(folder.code, 0, folder.stderr);
  const f = JSON.parse(folder.stdout);
  equal(f.format, "safetensors");
  equal(f.tensorCount, 20);
  equal(file.code, 0, file.stderr);
  const s = JSON.parse(file.stdout);
  equal(s.format, "safetensors");
  equal(s.tensorCount, 1);
  equal(s.parameterCount, 6);
  deepEqual(s.metadata.source_metadata, { test: "a" });
});

Deno.test("apr inspect of a file that is no model exits 2 with one line", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/notes.txt`, "hello, world\n");
    assertOneLineError(
      await runApr(["inspect", `${dir}/notes.txt`]),
      "notes.txt",
      /not an APR, GGUF\b.* file \(first bytes: 68 65 6c 6c/,
    );
    await Deno.mkdir(`${dir}/empty`);
    assertOneLineError(await runApr(["inspect", `${dir}/empty`]), "empty", /no model found/);
  });
});
