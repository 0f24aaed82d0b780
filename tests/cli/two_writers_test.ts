/**
 * Two writers on one output (issue 20 item 4; docs/SECURITY.md "Two
 * writers"): a run holds an exclusive OS lock on `OUT.partial`; a second run
 * is refused at once, with `--force` too, without touching the first one's
 * partial or journal and without a false "the partial output is kept"; a run
 * never renames a partial that is not the file it wrote.
 */

import { deepEqual, equal, ok, rejects } from "node:assert/strict";
import { join } from "node:path";
import { UsageError } from "../../src/errors.ts";
import { AprSink } from "../../src/formats/apr/sink.ts";
import { SplitGgufSink } from "../../src/formats/gguf/split_sink.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import {
  assertOneLineError,
  DEMO_MODEL,
  exists,
  listDir,
  runApr,
  sha256,
  testdata,
  withTempDir,
} from "./_run_apr.ts";

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

/** Every file of `dir` but the folder `ref/`, with its SHA-256: what a refused run must not change. */
async function filesOf(dir: string): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for (const name of await listDir(dir)) {
    if (name !== "ref") found[name] = await sha256(join(dir, name));
  }
  return found;
}

/**
 * Issue 34 item 1: the split GGUF writer in `dir/q.gguf` of the tiny
 * model, paused once its first two shards are complete, and its set written
 * without a pause in `dir/ref/` for comparison.
 */
async function pausedSplitWriter(dir: string): Promise<{
  out: string;
  source: string;
  resume: () => Promise<void>;
}> {
  const source = testdata("gguf/tiny-llama-f32.gguf");
  const maxShardSize = 2_000_000;
  await Deno.mkdir(join(dir, "ref"));
  const whole = await openModel(source);
  await whole.chunks().pipeTo(
    await SplitGgufSink.create(join(dir, "ref", "q.gguf"), { maxShardSize }),
  );
  await whole.close();
  const out = join(dir, "q.gguf");
  const model = await openModel(source);
  const writer = (await SplitGgufSink.create(out, { maxShardSize })).getWriter();
  const chunks = model.chunks().getReader();
  const journal = `${out}.partial.journal`;
  const completed = async () =>
    await exists(journal) && (await Deno.readTextFile(journal)).split('"shard"').length - 1;
  while ((await completed() || 0) < 2) await writer.write((await chunks.read()).value!);
  return {
    out,
    source,
    resume: async () => {
      for (let r = await chunks.read(); !r.done; r = await chunks.read()) {
        await writer.write(r.value);
      }
      await writer.close();
      await model.close();
    },
  };
}

Deno.test("a second writer on a split GGUF set being written is refused at once, with other options or the same; the first publishes its own set", async () => {
  await withTempDir(async (dir) => {
    const { out, source, resume } = await pausedSplitWriter(dir);
    const journal = `${out}.partial.journal`;
    const before = await filesOf(dir);
    for (
      const extra of [
        ["--max-shard-size", "2MB", "--quantize", "f16", "--force"],
        ["--max-shard-size", "3MB", "--force"],
        ["--max-shard-size", "2MB", "--force"],
        ["--max-shard-size", "2MB", "--resume"],
      ]
    ) {
      const run = await runApr(["convert", source, "-o", out, ...extra]);
      assertOneLineError(run, `"${journal}": another process is writing it`);
      deepEqual(await filesOf(dir), before, extra.join(" "));
    }
    // A library caller in this process is refused by the sink itself, before it touches the set.
    for (const options of [{ maxShardSize: 3_000_000, force: true }, { maxShardSize: 2_000_000 }]) {
      const other = await openModel(source);
      await rejects(
        other.chunks().pipeTo(await SplitGgufSink.create(out, options)),
        (e: Error) =>
          e instanceof UsageError && e.message.includes("another process is writing it"),
      );
      await other.close();
      deepEqual(await filesOf(dir), before);
    }
    // The first writer completes with its own set, whole, and nothing partial left.
    await resume();
    const ref = await filesOf(join(dir, "ref"));
    deepEqual(await filesOf(dir), ref);
  });
});

Deno.test("a split GGUF set whose shard was replaced behind the writer's back is not published, not even in part", async () => {
  await withTempDir(async (dir) => {
    const { out, resume } = await pausedSplitWriter(dir);
    // Someone ignoring the lock replaces the second completed shard.
    const second = `${dir}/q-00002-of-00005.gguf.partial`;
    await Deno.remove(second);
    await Deno.writeTextFile(second, "someone else's shard");
    await rejects(resume(), /was replaced or removed by another process/);
    for (const name of await listDir(dir)) ok(!/^q-\d{5}-of-\d{5}\.gguf$/.test(name), name);
    equal(await exists(out), false);
  });
});
