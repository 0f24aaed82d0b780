/**
 * What a failed conversion says it kept is what is on disk: a split GGUF set
 * keeps its completed shards (`OUT-0000i-of-0000N.gguf.partial`), never an
 * `OUT.gguf.partial`; outputs that keep nothing (split SafeTensors, an APR
 * set whose input failed its checksum) say nothing is kept.
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
import { DEMO_MODEL, exists, lines, listDir, runApr, withTempDir } from "./_run_apr.ts";

const REF = "hf://test-org/tiny-model";

async function demoFiles(): Promise<{ path: string; diskPath: string }[]> {
  const files = [];
  for await (const e of Deno.readDir(DEMO_MODEL)) {
    files.push({ path: e.name, diskPath: join(DEMO_MODEL, e.name) });
  }
  return files;
}

Deno.test("a failed split conversion names the partial files it really keeps, or none", async () => {
  const hub = await startHubServer({
    files: await demoFiles(),
    faults: [{ kind: "corrupt", path: "model-00002-of-00002.safetensors" }],
  });
  try {
    await withTempDir(async (dir) => {
      const env = { HF_ENDPOINT: hub.endpoint, HF_HUB_OFFLINE: "0" };
      const convert = (out: string, ...flags: string[]) =>
        runApr(["convert", REF, "--no-cache", "-o", out, "--quiet", ...flags], { env });

      // Split GGUF: the completed shards stay for --resume, and are named.
      const gguf = join(dir, "x.gguf");
      const run = await convert(gguf, "--max-shard-size", "100K");
      equal(run.code, 2, run.stderr);
      const errLines = lines(run.stderr);
      equal(errLines.length, 2, run.stderr);
      match(errLines.at(-1)!, /sha256/);
      const left = (await listDir(dir)).filter((n) => n.endsWith(".partial"));
      ok(left.length > 1, `shards kept: ${left}`);
      ok(left.every((n) => /^x-\d{5}-of-\d{5}\.gguf\.partial$/.test(n)), `${left}`);
      ok(!(await exists(`${gguf}.partial`)));
      ok(!errLines[0]!.includes("x.gguf.partial"), errLines[0]);
      equal(
        errLines[0],
        `apr: the ${left.length} partial shards of "${gguf}" (${left[0]} … ${left.at(-1)}) ` +
          "are kept; run the same command with --resume to continue",
      );

      // Split SafeTensors and sharded APR remove their partial files: nothing is said to be kept.
      for (const name of ["y.safetensors", "z.apr"]) {
        const out = join(dir, name);
        const other = await convert(out, "--max-shard-size", "100K");
        equal(other.code, 2, other.stderr);
        equal(lines(other.stderr).length, 1, other.stderr);
        ok(!other.stderr.includes("kept"), other.stderr);
        const stem = name.replace(/\..*/, "");
        const partials = (await listDir(dir)).filter((n) => n.startsWith(stem));
        equal(partials.length, 0, `${partials}`);
      }
    });
  } finally {
    await hub.close();
  }
});
