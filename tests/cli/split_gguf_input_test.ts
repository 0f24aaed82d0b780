/**
 * Issue 25 item 1 through the CLI: every command that reads a GGUF reads a
 * split set (llama-gguf-split's files, tests/testdata/gguf_split/) from any
 * shard or its folder, as it reads the unsplit original; a broken set is one
 * line, exit 2, nothing written; an interrupted import of a set resumes.
 *
 * @module
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import { assertOneLineError, exists, runApr, sha256, testdata, withTempDir } from "./_run_apr.ts";

const SET = testdata("gguf_split/llama");
const SHARD2 = `${SET}/tiny-qwen2-Q4_K_S-00002-of-00003.gguf`;
const ORIGINAL = testdata("gguf/tiny-qwen2-Q4_K_S.gguf");
const KILL_CHILD = new URL("../pipeline/_kill_child.ts", import.meta.url).pathname;

Deno.test("inspect, tensors, validate, diff read a set as its unsplit original", async () => {
  const strip = (text: string, path: string) => text.replaceAll(path, "SOURCE");
  // As a conversion reads them (--translate); as stored, the set shows its own split keys.
  const commands = [["inspect", "--translate"], ["tensors", "--stats", "--translate"], [
    "validate",
    "--deep",
  ]];
  for (const command of commands) {
    const a = await runApr([...command, SHARD2, "--json"]);
    const b = await runApr([...command, ORIGINAL, "--json"]);
    equal(a.code, 0, a.stderr);
    equal(b.code, 0, b.stderr);
    const ja = JSON.parse(strip(a.stdout, SHARD2));
    const jb = JSON.parse(strip(b.stdout, ORIGINAL));
    deepEqual(ja, jb, command[0]);
  }
  const stored = JSON.parse((await runApr(["inspect", SHARD2, "--json"])).stdout);
  equal(stored.view, "stored");
  equal(stored.metadata["split.count"].value, 3);
  equal(stored.tensorCount, 26);
  const diff = await runApr(["diff", SET, ORIGINAL]);
  equal(diff.code, 0, diff.stdout);
  match(diff.stdout, /26 tensors: 26 same/);
});

Deno.test("import and convert of a set write the bytes of the unsplit original's", async () => {
  await withTempDir(async (dir) => {
    const cases: [string, string[]][] = [["apr", []], ["gguf", []], ["safetensors", [
      "--dtype",
      "f32",
    ]]];
    for (const [ext, args] of cases) {
      const a = `${dir}/set.${ext}`;
      const b = `${dir}/one.${ext}`;
      const ra = await runApr(["convert", SHARD2, "-o", a, ...args]);
      const rb = await runApr(["convert", ORIGINAL, "-o", b, ...args]);
      equal(ra.code, 0, ra.stderr);
      equal(rb.code, 0, rb.stderr);
      equal(await sha256(await Deno.readFile(a)), await sha256(await Deno.readFile(b)), ext);
    }
    // No split key reaches the unsplit GGUF (llama.cpp would look for shards).
    const text = new TextDecoder("latin1").decode(await Deno.readFile(`${dir}/set.gguf`));
    ok(!text.includes("split.count"));
  });
});

Deno.test("a broken set is one line, exit 2, and no output", async () => {
  await withTempDir(async (dir) => {
    await Deno.copyFile(
      `${SET}/tiny-qwen2-Q4_K_S-00001-of-00003.gguf`,
      `${dir}/m-00001-of-00003.gguf`,
    );
    await Deno.copyFile(SHARD2, `${dir}/m-00002-of-00003.gguf`);
    const run = await runApr(["import", `${dir}/m-00001-of-00003.gguf`, "-o", `${dir}/out.apr`]);
    assertOneLineError(run, /missing shard "m-00003-of-00003\.gguf"/, "m-00001-of-00003.gguf");
    ok(!(await exists(`${dir}/out.apr`)));
    const folder = await runApr(["inspect", dir]);
    assertOneLineError(folder, /missing shard "m-00003-of-00003\.gguf"/);
  });
});

Deno.test("an import of a set killed after a commit resumes to the same bytes", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/ref`);
    await Deno.mkdir(`${dir}/out`);
    const ref = await runApr(["import", SET, "-o", `${dir}/ref/m.apr`]);
    equal(ref.code, 0, ref.stderr);
    let killed = false;
    for (let attempt = 0; attempt < 4 && !killed; attempt++) {
      for await (const e of Deno.readDir(`${dir}/out`)) await Deno.remove(`${dir}/out/${e.name}`);
      const child = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", KILL_CHILD, SET, `${dir}/out/m.apr`, "none"],
        env: { APR_KILL_ON: "commit" },
        stdout: "null",
        stderr: "piped",
      }).output();
      killed = child.signal === "SIGKILL";
    }
    ok(killed, "the import always ended before its first commit");
    ok(await exists(`${dir}/out/m.apr.partial`));
    const resumed = await runApr(["import", SET, "-o", `${dir}/out/m.apr`, "--resume", "--json"]);
    equal(resumed.code, 0, resumed.stderr);
    ok(JSON.parse(resumed.stdout).resumedBytes > 0);
    equal(
      await sha256(await Deno.readFile(`${dir}/out/m.apr`)),
      await sha256(await Deno.readFile(`${dir}/ref/m.apr`)),
    );
  });
});
