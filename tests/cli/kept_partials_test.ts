/**
 * A conversion whose input fails its checksum keeps nothing to resume from,
 * whatever the output: a split GGUF set removes its completed shards and
 * journal (as the APR sink removes its partial and journal; both decide with
 * `isBadInput`, src/io/partial_file.ts), split SafeTensors and a sharded APR
 * set their partial files, and the error says nothing is kept. (What an
 * interruption keeps: tests/interop/split_gguf_output_test.ts.)
 *
 * The failure is real: a local Hub (tests/_hub_server.ts) serves the demo
 * model with one byte of its last shard changed, so `--no-cache` streaming
 * fails its sha256 check once every tensor is written (exit 2).
 *
 * @module
 */

import { equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { startHubServer } from "../_hub_server.ts";
import { DEMO_MODEL, lines, listDir, runApr, withTempDir } from "./_run_apr.ts";

const REF = "hf://test-org/tiny-model";

async function demoFiles(): Promise<{ path: string; diskPath: string }[]> {
  const files = [];
  for await (const e of Deno.readDir(DEMO_MODEL)) {
    files.push({ path: e.name, diskPath: join(DEMO_MODEL, e.name) });
  }
  return files;
}

Deno.test("a split conversion whose input fails its sha256 keeps no partial file", async () => {
  const hub = await startHubServer({
    files: await demoFiles(),
    faults: [{ kind: "corrupt", path: "model-00002-of-00002.safetensors" }],
  });
  try {
    await withTempDir(async (dir) => {
      const env = { HF_ENDPOINT: hub.endpoint, HF_HUB_OFFLINE: "0" };
      const convert = (out: string, ...flags: string[]) =>
        runApr(["convert", REF, "--no-cache", "-o", out, "--quiet", ...flags], { env });
      for (const name of ["x.gguf", "y.safetensors", "z.apr"]) {
        const out = join(dir, name);
        const run = await convert(out, "--max-shard-size", "100K");
        equal(run.code, 2, run.stderr);
        const errLines = lines(run.stderr);
        equal(errLines.length, 1, run.stderr);
        match(errLines[0]!, /sha256/);
        ok(!run.stderr.includes("kept"), run.stderr);
        const stem = name.replace(/\..*/, "");
        const left = (await listDir(dir)).filter((n) => n.startsWith(stem));
        equal(left.length, 0, `${name}: ${left}`);
      }
      // --resume has nothing to continue from: the set is written afresh, and fails the same way.
      const again = await convert(join(dir, "x.gguf"), "--max-shard-size", "100K", "--resume");
      equal(again.code, 2, again.stderr);
      equal(lines(again.stderr).length, 1, again.stderr);
      equal((await listDir(dir)).length, 0, `${await listDir(dir)}`);
    });
  } finally {
    await hub.close();
  }
});
