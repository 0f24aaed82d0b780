/**
 * Two writers on one output (issue 20 item 4; docs/SECURITY.md "Two
 * writers"): a run holds an exclusive OS lock on `OUT.partial`; a second run
 * is refused at once, with `--force` too, without touching the first one's
 * partial or journal and without a false "the partial output is kept"; a run
 * never renames a partial that is not the file it wrote.
 */

import { equal, ok, rejects } from "node:assert/strict";
import { join } from "node:path";
import { UsageError } from "../../src/errors.ts";
import { AprSink } from "../../src/formats/apr/sink.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { assertOneLineError, DEMO_MODEL, exists, runApr, withTempDir } from "./_run_apr.ts";

Deno.test("a second import onto an output being written is refused at once, --force too", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "m.apr");
    const partial = `${out}.partial`;
    // Another process's run in progress: its partial and journal, the partial locked.
    await Deno.writeTextFile(partial, "the first run's bytes");
    await Deno.writeTextFile(`${partial}.journal`, "the first run's journal\n");
    const first = await Deno.open(partial, { read: true, write: true });
    await first.lock(true);
    try {
      for (const extra of [[], ["--force", "--quantize", "q8_0"], ["--resume"]]) {
        const started = performance.now();
        const run = await runApr(["import", DEMO_MODEL, "-o", out, ...extra]);
        assertOneLineError(run, `"${partial}": another process is writing it`);
        ok(!run.stderr.includes("is kept"), run.stderr);
        ok(performance.now() - started < 20_000, "refused at once, not after waiting");
        equal(await Deno.readTextFile(partial), "the first run's bytes");
        equal(await Deno.readTextFile(`${partial}.journal`), "the first run's journal\n");
        equal(await exists(out), false);
      }
    } finally {
      first.close();
    }
    // Once the first run is gone (the OS dropped its lock), the output is free again.
    const run = await runApr(["import", DEMO_MODEL, "-o", out, "--force"]);
    equal(run.code, 0, run.stderr);
    ok(await exists(out));
    equal(await exists(partial), false);
  });
});

Deno.test("a lock dies with its process: a killed writer leaves its partial free", async () => {
  await withTempDir(async (dir) => {
    const partial = join(dir, "x.partial");
    await Deno.writeTextFile(partial, "x");
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `const f = await Deno.open(${JSON.stringify(partial)}, { read: true, write: true });
         await f.lock(true); console.log("locked"); setInterval(() => {}, 1000);`,
      ],
      stdout: "piped",
    }).spawn();
    const reader = child.stdout.getReader();
    const { value } = await reader.read();
    ok(new TextDecoder().decode(value).includes("locked"));
    const probe = await Deno.open(partial, { read: true });
    equal(await probe.tryLock(true), false, "held by the child");
    child.kill("SIGKILL");
    await child.status;
    reader.releaseLock();
    await child.stdout.cancel();
    equal(await probe.tryLock(true), true, "released by the OS when the child died");
    probe.close();
  });
});

Deno.test("two sinks in one process on one output: the second is refused, the first completes", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "m.apr");
    const a = await openModel(DEMO_MODEL);
    const b = await openModel(DEMO_MODEL);
    const first = await AprSink.create(out);
    const writer = first.getWriter();
    const chunks = a.chunks().getReader();
    await writer.write((await chunks.read()).value!); // the header: the partial exists, locked
    const second = await AprSink.create(out, { force: true });
    await rejects(b.chunks().pipeTo(second), (e: Error) => {
      ok(e instanceof UsageError, String(e));
      ok(e.message.includes("another process is writing it"), e.message);
      return true;
    });
    for (let r = await chunks.read(); !r.done; r = await chunks.read()) await writer.write(r.value);
    await writer.close();
    equal(first.result?.path, out);
    ok(await exists(out));
    await a.close();
    await b.close();
  });
});

Deno.test("a partial replaced behind a run's back is never renamed into place", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "m.apr");
    const model = await openModel(DEMO_MODEL);
    const sink = await AprSink.create(out);
    const writer = sink.getWriter();
    const chunks = model.chunks().getReader();
    await writer.write((await chunks.read()).value!);
    // Someone ignoring locks removes the partial and writes their own.
    await Deno.remove(`${out}.partial`);
    await Deno.writeTextFile(`${out}.partial`, "someone else's file");
    for (let r = await chunks.read(); !r.done; r = await chunks.read()) await writer.write(r.value);
    await rejects(writer.close(), /was replaced or removed by another process/);
    equal(await exists(out), false, "nothing renamed");
    await model.close();
  });
});
