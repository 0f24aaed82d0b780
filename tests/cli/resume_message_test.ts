/**
 * `apr import --resume` says first what it will not redo, and its rate
 * counts only what this run processes.
 *
 * @module
 */

import { equal, match, ok } from "node:assert/strict";
import { ProgressDisplay } from "../../src/cli/progress_display.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { assertOneLineError, DEMO_MODEL, exists, runApr, sha256, withTempDir } from "./_run_apr.ts";

/** Leave a partial import of DEMO_MODEL at `out`: stopped once `tensors` are written. */
async function partialImport(out: string, tensors: number): Promise<void> {
  const stop = new AbortController();
  try {
    await convertModel(DEMO_MODEL, out, {
      signal: stop.signal,
      onProgress: (e) => {
        if (e.itemsDone >= tensors) stop.abort(new Error("stopped by the test"));
      },
    });
  } catch (error) {
    equal((error as Error).message, "stopped by the test");
  }
  ok((await Deno.stat(`${out}.partial.journal`)).isFile, "a journal is left");
}

Deno.test("apr import --resume prints 'resuming: N of M tensors already written (X)' before any progress", async () => {
  await withTempDir(async (dir) => {
    const reference = `${dir}/reference.apr`;
    equal((await runApr(["import", DEMO_MODEL, "-o", reference, "--quiet"])).code, 0);
    const out = `${dir}/out.apr`;
    await partialImport(out, 8);
    const run = await runApr(["import", DEMO_MODEL, "-o", out, "--resume"], {
      env: { APR_PROGRESS_INTERVAL_MS: "0" },
    });
    equal(run.code, 0, run.stderr);
    const lines = run.stderr.trimEnd().split("\n");
    const first = /^resuming: (\d+) of 21 tensors already written \((\d[\d.]* [KM]iB)\)$/.exec(
      lines[0]!,
    );
    ok(first, run.stderr);
    ok(Number(first[1]) >= 8 && Number(first[1]) < 21, lines[0]);
    match(lines[1]!, /^write: /, "progress comes after it");
    equal(lines.filter((l) => l.startsWith("resuming:")).length, 1, "said once");
    match(run.stdout, new RegExp(`\\(21 BF16, ${first[1]} resumed\\)`));
    equal(await sha256(out), await sha256(reference));
  });
});

Deno.test("ProgressDisplay's rate counts this run's bytes in this phase, not resumed ones or another phase's", () => {
  let now = 0;
  const display = new ProgressDisplay({ mode: "plain", write: () => {}, now: () => now });
  const MiB = 2 ** 20;
  const download = { phase: "download", bytesTotal: 100 * MiB, itemsDone: 0, itemsTotal: 1 };
  display.update({ ...download, bytesDone: 0 });
  now = 1000;
  display.update({ ...download, bytesDone: 100 * MiB });
  equal(Math.round(display.rate() / MiB), 100);
  // The write starts with 1 GiB a resume found written, of 2 GiB.
  const write = {
    phase: "write",
    bytesTotal: 2048 * MiB,
    itemsTotal: 20,
    resumedBytes: 1024 * MiB,
  };
  now = 1100;
  display.update({ ...write, bytesDone: 1024 * MiB, itemsDone: 10, resumedItems: 10 });
  equal(display.rate(), 0, "no rate from one sample of the new phase");
  now = 3100;
  display.update({ ...write, bytesDone: 1044 * MiB, itemsDone: 11, resumedItems: 10 });
  equal(Math.round(display.rate() / MiB), 10, "20 MiB written in 2 s");
});

Deno.test("apr import without --resume keeps a partial import and says how to continue (exit 2); --force starts over", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/out.apr`;
    await partialImport(out, 5);
    const before = await sha256(`${out}.partial`);
    const journal = await Deno.readTextFile(`${out}.partial.journal`);
    const refused = await runApr(["import", DEMO_MODEL, "-o", out]);
    assertOneLineError(
      refused,
      /a partial import of this output exists \(".*out\.apr\.partial"\); add --resume to continue or --force to start over$/,
    );
    equal(await sha256(`${out}.partial`), before, "the partial is untouched");
    equal(await Deno.readTextFile(`${out}.partial.journal`), journal, "the journal is untouched");
    const forced = await runApr(["import", DEMO_MODEL, "-o", out, "--force", "--quiet"]);
    equal(forced.code, 0, forced.stderr);
    ok(!(await exists(`${out}.partial.journal`)), "started over and finished");
  });
});
