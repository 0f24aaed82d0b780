/**
 * Resumable imports (DESIGN.md §1.4, §2.3): an `apr import` killed with
 * SIGKILL after its first journal commit, run again with `--resume`, gives
 * the same bytes as an uninterrupted import; a resume with other options is
 * refused without destroying the partial output.
 *
 * The sink commits every 64 MiB (APR_SINK_COMMIT_BYTES), so the model is
 * 128 MiB of F32 in 8 tensors: the first commit lands halfway, and the
 * second half leaves a window of a hundred milliseconds or more to kill in.
 *
 * @module
 */

import { equal, match, ok } from "node:assert/strict";
import { APR_SINK_COMMIT_BYTES } from "../../src/formats/apr/sink.ts";
import { importModel } from "../../src/pipeline/convert_model.ts";
import { CLI_PATH, sha256, withTempDir, writeBigSafetensors } from "./_helpers.ts";

const TENSOR_ELEMENTS = 4 << 20; // 16 MiB of F32 each
const TENSORS = 8;

function apr(args: string[]): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI_PATH, ...args],
    env: { HF_HUB_OFFLINE: "1", NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
}

async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await apr(args).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

async function committedLines(journal: string): Promise<number> {
  try {
    const text = await Deno.readTextFile(journal);
    return text.split("\n").filter((l) => l.includes('"crc"')).length;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return 0;
    throw error;
  }
}

/** Start an import and SIGKILL it once its journal holds a committed tensor. */
async function killMidway(source: string, out: string): Promise<boolean> {
  const child = apr(["import", source, "-o", out, "--quiet"]).spawn();
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  // Drain the pipes so the child never blocks on them.
  const drained = Promise.all([child.stdout.cancel(), child.stderr.cancel()]);
  while (!exited) {
    if (await committedLines(`${out}.partial.journal`) > 0) {
      child.kill("SIGKILL");
      break;
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  const s = await status;
  await drained;
  return !s.success && s.signal === "SIGKILL";
}

Deno.test("apr import --resume after SIGKILL gives the bytes of an uninterrupted import", async () => {
  ok(
    TENSOR_ELEMENTS * 4 * TENSORS >= 2 * APR_SINK_COMMIT_BYTES,
    "model too small to commit midway",
  );
  await withTempDir(async (dir) => {
    const source = `${dir}/big.safetensors`;
    const tensors: Record<string, number> = {};
    for (let i = 0; i < TENSORS; i++) tensors[`model.layers.${i}.weight`] = TENSOR_ELEMENTS;
    await writeBigSafetensors(source, tensors);
    const reference = `${dir}/reference.apr`;
    await importModel(source, reference);
    const expected = await sha256(reference);
    await Deno.remove(reference);

    const out = `${dir}/out.apr`;
    let killed = false;
    // On a very slow or very fast machine the window can be missed: try again.
    for (let attempt = 0; attempt < 3 && !killed; attempt++) {
      await Deno.remove(out).catch(() => {});
      killed = await killMidway(source, out);
    }
    ok(killed, "could not kill the import between its first commit and its end");
    ok(!(await Deno.stat(out).catch(() => undefined)), "no OUT after a kill");
    const committed = await committedLines(`${out}.partial.journal`);
    ok(committed >= 1 && committed < TENSORS, `committed ${committed}`);

    // Other options than the interrupted run: refused, partial kept.
    const other = await run(["import", source, "-o", out, "--resume", "--quantize", "f16"]);
    equal(other.code, 2, other.stderr);
    const errLines = other.stderr.split("\n").filter((l) => l !== "");
    equal(errLines.length, 1, other.stderr);
    match(errLines[0]!, /^apr: Cannot resume "/);
    match(errLines[0]!, /different input or options/);
    ok(!/^\s+at /m.test(other.stderr));
    equal(await committedLines(`${out}.partial.journal`), committed, "journal kept");

    const resumed = await run(["import", source, "-o", out, "--resume", "--json"]);
    equal(resumed.code, 0, resumed.stderr);
    const result = JSON.parse(resumed.stdout);
    ok(result.resumedTensors >= 1, `resumedTensors ${result.resumedTensors}`);
    equal(result.tensors, TENSORS);
    equal(await sha256(out), expected);
    ok(!(await Deno.stat(`${out}.partial`).catch(() => undefined)), "partial removed");
    ok(!(await Deno.stat(`${out}.partial.journal`).catch(() => undefined)), "journal removed");
  });
});
