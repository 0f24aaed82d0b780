/**
 * Issue 25 items 1 and 3 on the local test Hub: a GGUF repository laid out
 * as they are published — a split set (llama-gguf-split's files) beside
 * single files — read as `hf://org/repo:QUANT` (llama.cpp's `-hf repo:quant`)
 * and by a shard's path, through the cache and with `--no-cache`.
 *
 * @module
 */

import { equal, match, ok } from "node:assert/strict";
import { startHubServer } from "../_hub_server.ts";
import { assertOneLineError, runApr, sha256, testdata, withTempDir } from "./_run_apr.ts";

const REF = "hf://test-org/tiny-gguf";
const SET = "tiny-qwen2-Q4_K_S";

async function repository() {
  const files = [];
  for (let i = 1; i <= 3; i++) {
    const name = `${SET}-0000${i}-of-00003.gguf`;
    files.push({ path: name, data: await Deno.readFile(testdata(`gguf_split/llama/${name}`)) });
  }
  files.push({
    path: "tiny-qwen2-Q4_K_M.gguf",
    data: await Deno.readFile(testdata("gguf/tiny-qwen2-Q4_K_M.gguf")),
  });
  files.push({
    path: "mmproj-tiny-qwen2-Q4_K_M.gguf",
    data: await Deno.readFile(testdata("gguf/tiny-qwen2-Q4_K_M.gguf")),
  });
  files.push({ path: "README.md", data: new TextEncoder().encode("# tiny\n") });
  return files;
}

Deno.test("hf://org/repo:QUANT and a shard's path read the split set or the file of that quantization", async (t) => {
  const server = await startHubServer({ repoId: "test-org/tiny-gguf", files: await repository() });
  try {
    await withTempDir(async (dir) => {
      const env = { HF_ENDPOINT: server.endpoint, HF_HOME: `${dir}/hf`, HF_HUB_OFFLINE: "0" };
      const local = `${dir}/local.apr`;
      equal((await runApr(["import", testdata(`gguf/${SET}.gguf`), "-o", local])).code, 0);
      const want = await sha256(await Deno.readFile(local));

      await t.step(
        ":q4_k_s (any case) pulls the three shards and imports the whole set",
        async () => {
          const out = `${dir}/tag.apr`;
          const run = await runApr(["import", `${REF}:q4_k_s`, "-o", out, "--json"], { env });
          equal(run.code, 0, run.stderr);
          equal(JSON.parse(run.stdout).tensors, 27);
          // Only the set was downloaded, not the other quantization.
          const served = [...server.counters.bytesByFile.keys()].filter((f) => f.endsWith(".gguf"));
          equal(served.sort().join(), [1, 2, 3].map((i) => `${SET}-0000${i}-of-00003.gguf`).join());
          // Same tensors and values as the unsplit file (metadata.source names the Hub).
          const diff = await runApr(["diff", out, local]);
          equal(diff.code, 0, diff.stdout + diff.stderr);
        },
      );

      await t.step("apr pull :Q4_K_S prints the first shard's path", async () => {
        const run = await runApr(["pull", `${REF}:Q4_K_S`], { env });
        equal(run.code, 0, run.stderr);
        ok(run.stdout.trim().endsWith(`/${SET}-00001-of-00003.gguf`), run.stdout);
        const inspect = await runApr(["inspect", run.stdout.trim(), "--json"]);
        equal(JSON.parse(inspect.stdout).tensorCount, 26);
      });

      await t.step("--no-cache streams the set from a shard's path", async () => {
        const out = `${dir}/nocache.apr`;
        const run = await runApr(
          ["import", `${REF}/${SET}-00002-of-00003.gguf`, "-o", out, "--no-cache"],
          { env: { ...env, HF_HOME: `${dir}/empty-hf` } },
        );
        equal(run.code, 0, run.stderr);
        const diff = await runApr(["diff", out, local]);
        equal(diff.code, 0, diff.stdout);
      });

      await t.step(":Q4_K_M picks the single file, not the projector", async () => {
        const run = await runApr(["inspect", `${REF}:Q4_K_M`, "--json"], { env });
        equal(run.code, 0, run.stderr);
        equal(JSON.parse(run.stdout).tensorCount, 26);
        const nocache = await runApr([
          "import",
          `${REF}:q4_k_m`,
          "-o",
          `${dir}/km.apr`,
          "--no-cache",
        ], {
          env: { ...env, HF_HOME: `${dir}/empty-hf2` },
        });
        equal(nocache.code, 0, nocache.stderr);
      });

      await t.step("a tag no file carries: one line listing the tags", async () => {
        const run = await runApr(["import", `${REF}:Q8_0`, "-o", `${dir}/x.apr`], { env });
        assertOneLineError(run, /quantization "Q8_0"/, /available: Q4_K_M, Q4_K_S/);
        ok(!(await Deno.stat(`${dir}/x.apr`).catch(() => undefined)));
      });

      await t.step("the repository root holds two models: refused, naming the tags", async () => {
        const inspect = await runApr(["inspect", REF], { env });
        assertOneLineError(
          inspect,
          // The real names to type, not a literal hf://org/name (issue 22).
          /2 model files \(tiny-qwen2-Q4_K_M\.gguf, tiny-qwen2-Q4_K_S-00001-of-00003\.gguf\); name one, e\.g\. "hf:\/\/test-org\/tiny-gguf@[0-9a-f]{40}\/tiny-qwen2-Q4_K_M\.gguf", or a quantization with hf:\/\/test-org\/tiny-gguf:TAG \(available: Q4_K_M, Q4_K_S\)/,
        );
        const pull = await runApr(["pull", REF], { env });
        assertOneLineError(
          pull,
          /2 GGUF files or split sets/,
          /hf:\/\/test-org\/tiny-gguf\/tiny-qwen2-Q4_K_M\.gguf/,
          /hf:\/\/test-org\/tiny-gguf:TAG \(available: Q4_K_M, Q4_K_S\)/,
          /--include/,
        );
      });

      await t.step("a tag with a path is refused", async () => {
        const run = await runApr(["inspect", `${REF}:Q4_K_M/x.gguf`], { env });
        assertOneLineError(run, /give no path after it/);
      });
      ok(want.length > 0);
    });
  } finally {
    await server.close();
  }
});

Deno.test("several models carrying the tag: one line listing them", async () => {
  const files = await repository();
  files.push({ path: "alt/tiny-qwen2-Q4_K_M.gguf", data: files[3]!.data });
  const server = await startHubServer({ repoId: "test-org/tiny-gguf", files });
  try {
    await withTempDir(async (dir) => {
      const env = { HF_ENDPOINT: server.endpoint, HF_HOME: `${dir}/hf`, HF_HUB_OFFLINE: "0" };
      const run = await runApr(["inspect", `${REF}:Q4_K_M`], { env });
      assertOneLineError(
        run,
        /2 GGUF models match "Q4_K_M" \(alt\/tiny-qwen2-Q4_K_M\.gguf, tiny-qwen2-Q4_K_M\.gguf\)/,
      );
      match(run.stderr, /hf:\/\/org\/name\/PATH/);
    });
  } finally {
    await server.close();
  }
});
