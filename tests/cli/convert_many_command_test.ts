/**
 * `apr convert SOURCE --quantize A,B -o 'NAME-{QUANT}.gguf'`: one file per
 * type, each the bytes of its own run, a summary line each, `--json` with
 * every output, and mistakes refused in one line before anything is written.
 *
 * @module
 */

import { deepEqual, equal, ok } from "node:assert/strict";
import { type Schema, validateJson } from "../_json_schema.ts";
import { assertOneLineError, listDir, runApr, sha256, testdata, withTempDir } from "./_run_apr.ts";

const MODEL = testdata("families/hf/llama");
const SCHEMA: Schema = JSON.parse(
  await Deno.readTextFile(new URL("../../docs/apr-json.schema.json", import.meta.url)),
);

Deno.test("apr convert --quantize Q4_K_M,Q8_0 -o 'm-{QUANT}.gguf' writes each single run's file", async () => {
  await withTempDir(async (dir) => {
    const run = await runApr([
      "convert",
      MODEL,
      "--quantize",
      "Q4_K_M,Q8_0",
      "-o",
      `${dir}/m-{QUANT}.gguf`,
    ]);
    equal(run.code, 0, run.stderr);
    deepEqual(await listDir(dir), ["m-Q4_K_M.gguf", "m-Q8_0.gguf"]);
    equal(run.stdout.split("\n").filter((l) => l.startsWith("wrote ")).length, 2, run.stdout);
    for (const type of ["Q4_K_M", "Q8_0"]) {
      const single = await runApr([
        "convert",
        MODEL,
        "--quantize",
        type,
        "-o",
        `${dir}/s-${type}.gguf`,
      ]);
      equal(single.code, 0, single.stderr);
      equal(
        await sha256(await Deno.readFile(`${dir}/m-${type}.gguf`)),
        await sha256(await Deno.readFile(`${dir}/s-${type}.gguf`)),
        type,
      );
    }
    // --resume keeps what is there and writes what is missing.
    await Deno.remove(`${dir}/m-Q8_0.gguf`);
    const json = await runApr([
      "convert",
      MODEL,
      "--quantize",
      "Q4_K_M,Q8_0",
      "-o",
      `${dir}/m-{QUANT}.gguf`,
      "--resume",
      "--json",
    ]);
    equal(json.code, 0, json.stderr);
    const doc = JSON.parse(json.stdout);
    deepEqual(validateJson(SCHEMA, doc), [], "the document follows docs/apr-json.schema.json");
    deepEqual(doc.outputs.map((o: { output: string }) => o.output), [`${dir}/m-Q8_0.gguf`]);
    ok(doc.notes.some((n: string) => n.includes("m-Q4_K_M.gguf") && n.includes("kept")));
  });
});

Deno.test("several --quantize types: mistakes are one line, nothing written", async () => {
  await withTempDir(async (dir) => {
    assertOneLineError(
      await runApr(["convert", MODEL, "--quantize", "Q4_K_M,Q8_0", "-o", `${dir}/m.gguf`]),
      "{QUANT}",
    );
    assertOneLineError(
      await runApr(["convert", MODEL, "--quantize", "Q4_K_M,q9", "-o", `${dir}/m-{QUANT}.gguf`]),
      '"q9"',
    );
    assertOneLineError(
      await runApr(["convert", MODEL, "--quantize", "Q8_0,q8_0", "-o", `${dir}/m-{QUANT}.gguf`]),
      "twice",
    );
    deepEqual(await listDir(dir), []);
  });
});
