/**
 * Sharded APR and SafeTensors outputs (`--max-shard-size`) follow the split
 * GGUF set's rules (issue 34 §1; `src/io/set_journal.ts`): one lock per
 * output set, held from before any file of it is touched, so a second writer
 * is refused at once whatever its options; the whole set is published or
 * nothing; another set of the output (another shard size) is refused without
 * `--force` and replaced with it; an APR `--resume` from a changed source
 * (any of its files) is refused. The races are forced with a writer paused
 * in this process while it holds the set's lock.
 */

import { deepEqual, equal, ok, rejects } from "node:assert/strict";
import { join } from "node:path";
import { ShardedAprSink } from "../../src/formats/apr/sharded_sink.ts";
import { SafetensorsSink } from "../../src/formats/safetensors/writer.ts";
import type { ModelChunk } from "../../src/tensor.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import {
  assertOneLineError,
  copyModel,
  DEMO_MODEL,
  listDir,
  runApr,
  sha256,
  withTempDir,
} from "./_run_apr.ts";

const MAX_SHARD = 150_000;

interface SetFormat {
  name: string;
  out: string;
  journal: string;
  /** A final shard name of this format's sets. */
  shard: RegExp;
  sink: (out: string, options: { maxShardSize: number; force?: boolean }) => Promise<
    WritableStream<ModelChunk>
  >;
}

const FORMATS: SetFormat[] = [
  {
    name: "APR",
    out: "m.apr",
    journal: "m.apr.partial.journal",
    shard: /^m-\d{5}-of-\d{5}\.apr$/,
    sink: (out, options) => ShardedAprSink.create(out, options),
  },
  {
    name: "SafeTensors",
    out: "m.safetensors",
    journal: "m.safetensors.index.json.partial.journal",
    shard: /^m-\d{5}-of-\d{5}\.safetensors$/,
    sink: (out, options) => SafetensorsSink.create(out, options),
  },
];

/** Every file of `dir` but the folder `ref/`, with its SHA-256. */
async function filesOf(dir: string): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for (const name of await listDir(dir)) {
    if (name !== "ref" && name !== "model") found[name] = await sha256(join(dir, name));
  }
  return found;
}

/**
 * A writer of the demo model's set in `dir`, paused after its first two
 * tensors (it holds the set's lock), and the same set written without a
 * pause in `dir/ref/`.
 */
async function pausedWriter(dir: string, format: SetFormat): Promise<{
  out: string;
  resume: () => Promise<void>;
}> {
  await Deno.mkdir(join(dir, "ref"));
  const whole = await openModel(DEMO_MODEL);
  await whole.chunks().pipeTo(
    await format.sink(join(dir, "ref", format.out), { maxShardSize: MAX_SHARD }),
  );
  await whole.close();
  const out = join(dir, format.out);
  const model = await openModel(DEMO_MODEL);
  const writer = (await format.sink(out, { maxShardSize: MAX_SHARD })).getWriter();
  const chunks = model.chunks().getReader();
  for (let i = 0; i < 3; i++) await writer.write((await chunks.read()).value!);
  return {
    out,
    resume: async () => {
      for (let r = await chunks.read(); !r.done; r = await chunks.read()) {
        await writer.write(r.value);
      }
      await writer.close();
      await model.close();
    },
  };
}

for (const format of FORMATS) {
  Deno.test(`a second writer on a sharded ${format.name} set being written is refused at once; the first publishes its own set`, async () => {
    await withTempDir(async (dir) => {
      const { out, resume } = await pausedWriter(dir, format);
      const journal = join(dir, format.journal);
      const before = await filesOf(dir);
      ok(journal in Object.fromEntries(Object.keys(before).map((k) => [join(dir, k), 1])));
      for (
        const extra of [
          ["--max-shard-size", "100KB", "--force"],
          ["--max-shard-size", `${MAX_SHARD}B`, "--force"],
          ["--max-shard-size", `${MAX_SHARD}B`],
          ...(format.name === "APR" ? [["--max-shard-size", `${MAX_SHARD}B`, "--resume"]] : []),
        ]
      ) {
        const run = await runApr(["convert", DEMO_MODEL, "-o", out, ...extra]);
        assertOneLineError(run, `"${journal}": another process is writing it`);
        deepEqual(await filesOf(dir), before, extra.join(" "));
      }
      await resume();
      deepEqual(await filesOf(dir), await filesOf(join(dir, "ref")));
    });
  });

  Deno.test(`a sharded ${format.name} set whose completed shard was replaced behind the writer's back is not published, not even in part`, async () => {
    await withTempDir(async (dir) => {
      const { out, resume } = await pausedWriter(dir, format);
      const names = await listDir(dir);
      // The last shard file there: a set renamed one by one would be in place up to it.
      const partial = names.filter((n) => format.shard.test(n.replace(/\.partial$/, ""))).at(-1)!;
      ok(partial !== undefined, names.join(", "));
      await Deno.remove(join(dir, partial));
      await Deno.writeTextFile(join(dir, partial), "someone else's shard");
      await rejects(resume(), /was replaced or removed by another process/);
      for (const name of await listDir(dir)) ok(!format.shard.test(name), name);
      ok(!(await listDir(dir)).some((n) => n.endsWith(".json")), "no manifest or index");
      equal((await listDir(dir)).includes(format.out), false, out);
    });
  });

  Deno.test(`a second sharded ${format.name} set with another shard size is refused without --force, and replaces the first with it`, async () => {
    await withTempDir(async (dir) => {
      const out = join(dir, format.out);
      const first = await runApr(["convert", DEMO_MODEL, "-o", out, "--max-shard-size", "100KB"]);
      equal(first.code, 0, first.stderr);
      const before = await filesOf(dir);
      const run = await runApr(["convert", DEMO_MODEL, "-o", out, "--max-shard-size", "300KB"]);
      assertOneLineError(run);
      deepEqual(await filesOf(dir), before);
      const forced = await runApr([
        "convert",
        DEMO_MODEL,
        "-o",
        out,
        "--max-shard-size",
        "300KB",
        "--force",
      ]);
      equal(forced.code, 0, forced.stderr);
      const shards = (await listDir(dir)).filter((n) => format.shard.test(n));
      ok(shards.length > 1, shards.join(", "));
      const counts = new Set(shards.map((n) => /-of-(\d+)\./.exec(n)![1]));
      equal(counts.size, 1, `one set only: ${shards.join(", ")}`);
      ok(!(await listDir(dir)).some((n) => n.includes(".partial")));
    });
  });
}

/** The demo model copied to `dir/model`, and a run into `out` stopped after its first shards. */
async function stoppedRun(dir: string, out: string): Promise<string> {
  const source = await copyModel(dir, DEMO_MODEL);
  await rejects(
    convertModel(source, out, {
      maxShardSize: MAX_SHARD,
      onProgress: (event) => {
        if (event.itemsDone >= 6) throw new Error("stopped");
      },
    }),
    /stopped/,
  );
  const names = await listDir(dir);
  ok(names.includes("m.apr.partial.journal"), names.join(", "));
  ok(!names.some((n) => /^m-\d{5}-of-\d{5}\.apr$/.test(n)), `nothing published: ${names}`);
  return source;
}

Deno.test("an APR --resume of a stopped sharded set completes it as a clean run writes it", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "m.apr");
    const source = await stoppedRun(dir, out);
    const args = ["convert", source, "-o", out, "--max-shard-size", `${MAX_SHARD}B`];
    // Neither flag: the stopped set is not thrown away by accident.
    const before = await filesOf(dir);
    assertOneLineError(await runApr(args), /a partial import of this output exists/);
    deepEqual(await filesOf(dir), before);
    const run = await runApr([...args, "--resume"]);
    equal(run.code, 0, run.stderr);
    await Deno.mkdir(join(dir, "ref"));
    const clean = await runApr([
      "convert",
      source,
      "-o",
      join(dir, "ref", "m.apr"),
      ...args.slice(4),
    ]);
    equal(clean.code, 0, clean.stderr);
    deepEqual(await filesOf(dir), await filesOf(join(dir, "ref")));
  });
});

Deno.test("an APR --resume of a sharded set from a changed source is refused", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "m.apr");
    const source = await stoppedRun(dir, out);
    // The second source shard changes (same size, other bytes), the first does not.
    const shard = join(source, "model-00002-of-00002.safetensors");
    const bytes = await Deno.readFile(shard);
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 1;
    await Deno.writeFile(shard, bytes);
    const run = await runApr([
      "convert",
      source,
      "-o",
      out,
      "--max-shard-size",
      `${MAX_SHARD}B`,
      "--resume",
    ]);
    assertOneLineError(run, /its source changed/);
  });
});
