/**
 * Issue 25 item 2: `--max-shard-size` on GGUF output writes llama.cpp's
 * `gguf-split` layout — byte for byte what `llama-gguf-split --split-max-size`
 * makes of the unsplit file (reference hashes from
 * tests/testdata/gguf_split/make_fixtures.py) — and llama.cpp, given the
 * first shard, loads the set and generates what it generates from the
 * unsplit file. An interrupted split export resumes from its completed shards.
 *
 * @module
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import {
  assertOneLineError,
  DEMO_MODEL,
  f32Safetensors,
  listDir,
  runApr,
  sha256,
  testdata,
  withTempDir,
} from "../cli/_run_apr.ts";
import { llamaGenerate } from "./_llama_judge.ts";

const REFERENCE = JSON.parse(
  Deno.readTextFileSync(testdata("gguf_split/llama_split_of_aprkit.json")),
) as {
  input: string;
  aprkit_unsplit_sha256: string;
  shards: { name: string; size: number; sha256: string }[];
};

Deno.test("apr convert --max-shard-size 2MB writes llama-gguf-split --split-max-size 2M's bytes", async () => {
  await withTempDir(async (dir) => {
    const one = await runApr(["convert", testdata(REFERENCE.input), "-o", `${dir}/one.gguf`]);
    equal(one.code, 0, one.stderr);
    equal(
      await sha256(await Deno.readFile(`${dir}/one.gguf`)),
      REFERENCE.aprkit_unsplit_sha256,
      "aprkit's unsplit GGUF changed since the reference was made: rerun " +
        "tests/testdata/gguf_split/make_fixtures.py",
    );
    const run = await runApr([
      "convert",
      testdata(REFERENCE.input),
      "-o",
      `${dir}/q.gguf`,
      "--max-shard-size",
      "2MB",
      "--json",
    ]);
    equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout);
    equal(result.fileBytes, REFERENCE.shards.reduce((n, s) => n + s.size, 0));
    deepEqual(result.shards, REFERENCE.shards.map((s) => `${dir}/${s.name}`));
    for (const s of REFERENCE.shards) {
      equal(await sha256(await Deno.readFile(`${dir}/${s.name}`)), s.sha256, s.name);
    }
    const names = [];
    for await (const e of Deno.readDir(dir)) names.push(e.name);
    deepEqual(names.sort(), ["one.gguf", ...REFERENCE.shards.map((s) => s.name)].sort());
  });
});

Deno.test("llama.cpp loads a split export from its first shard and generates as from the unsplit file", async () => {
  await withTempDir(async (dir) => {
    await convertModel(DEMO_MODEL, `${dir}/one.gguf`, { quantize: "q8_0" });
    await convertModel(DEMO_MODEL, `${dir}/m.gguf`, { quantize: "q8_0", maxShardSize: 60_000 });
    const shards: string[] = [];
    for await (const e of Deno.readDir(dir)) if (e.name.startsWith("m-")) shards.push(e.name);
    ok(shards.length >= 3, shards.join());
    const [one, split] = await llamaGenerate([
      `${dir}/one.gguf`,
      `${dir}/m-00001-of-0000${shards.length}.gguf`,
    ], 8);
    deepEqual(split!.prompt, one!.prompt);
    deepEqual(split!.generated, one!.generated);
    deepEqual(split!.next, one!.next);
    // aprkit reads the set back as the unsplit file.
    const diff = await runApr([
      "diff",
      `${dir}/m-00002-of-0000${shards.length}.gguf`,
      `${dir}/one.gguf`,
    ]);
    equal(diff.code, 0, diff.stdout);
  });
});

/**
 * In `dir`: the uninterrupted split export of the tiny model (or `source`)
 * in `ref/`, and the same export to `q.gguf` stopped once its first two
 * shards are complete.
 */
async function referenceAndTwoShards(
  dir: string,
  source = testdata("gguf/tiny-llama-f32.gguf"),
): Promise<{ source: string; out: string }> {
  await Deno.mkdir(`${dir}/ref`);
  await convertModel(source, `${dir}/ref/q.gguf`, { maxShardSize: 2_000_000 });
  const abort = new AbortController();
  const out = `${dir}/q.gguf`;
  await convertModel(source, out, {
    maxShardSize: 2_000_000,
    signal: abort.signal,
    onProgress: () => {
      // Stop once the first two shards are complete.
      const journal = Deno.readTextFileSync(`${out}.partial.journal`);
      if (journal.split('"shard"').length > 2) abort.abort(new Error("stop"));
    },
  }).then(() => ok(false, "not interrupted"), (e) => equal((e as Error).message, "stop"));
  return { source, out };
}

/** The set in `dir` has the bytes of the uninterrupted export in `ref/`, and nothing partial is left. */
async function assertSetAsReference(dir: string): Promise<void> {
  for (const s of REFERENCE.shards) {
    equal(
      await sha256(await Deno.readFile(`${dir}/${s.name}`)),
      await sha256(await Deno.readFile(`${dir}/ref/${s.name}`)),
      s.name,
    );
  }
  for await (const e of Deno.readDir(dir)) ok(!e.name.includes("partial"), e.name);
}

Deno.test("an interrupted split export keeps its completed shards and resumes from them", async () => {
  await withTempDir(async (dir) => {
    const { source, out } = await referenceAndTwoShards(dir);
    const left = [];
    for await (const e of Deno.readDir(dir)) if (e.name !== "ref") left.push(e.name);
    deepEqual(left.sort(), [
      "q-00001-of-00005.gguf.partial",
      "q-00002-of-00005.gguf.partial",
      "q.gguf.partial.journal",
    ]);
    // Other options: refused, nothing lost.
    await convertModel(source, out, { maxShardSize: 2_000_000, resume: true, quantize: "f16" })
      .then(() => ok(false, "resumed with other options"), (e) => {
        ok(/different input or options/.test((e as Error).message), (e as Error).message);
      });
    const resumed = await convertModel(source, out, { maxShardSize: 2_000_000, resume: true });
    ok(resumed.resumedTensors > 0 && resumed.resumedBytes > 0);
    await assertSetAsReference(dir);
  });
});

Deno.test("a completed shard changed between runs is written again on resume, and the run says so", async () => {
  await withTempDir(async (dir) => {
    const { source, out } = await referenceAndTwoShards(dir);
    // The journal's SHA-256 of each completed shard (hashed as it was written) is its file's.
    const records = Deno.readTextFileSync(`${out}.partial.journal`).trim().split("\n").slice(1)
      .map((l) => JSON.parse(l) as { shard: number; sha256: string });
    deepEqual(records.map((r) => r.shard), [0, 1]);
    for (const r of records) {
      const name = REFERENCE.shards[r.shard]!.name;
      equal(r.sha256, await sha256(await Deno.readFile(`${dir}/ref/${name}`)), name);
    }
    // One byte of the second completed shard flipped, its size unchanged.
    const altered = `${dir}/q-00002-of-00005.gguf.partial`;
    const bytes = await Deno.readFile(altered);
    bytes[bytes.length >> 1]! ^= 0x01;
    await Deno.writeFile(altered, bytes);
    const warnings: string[] = [];
    const resumed = await convertModel(source, out, {
      maxShardSize: 2_000_000,
      resume: true,
      onWarning: (message) => warnings.push(message),
    });
    // Only the intact first shard was kept (GGUF: its tensor count is the u64 at byte 8).
    const first = await Deno.readFile(`${dir}/ref/q-00001-of-00005.gguf`);
    const firstTensors = Number(new DataView(first.buffer).getBigUint64(8, true));
    equal(resumed.resumedTensors, firstTensors);
    equal(warnings.length, 1, warnings.join("\n"));
    match(warnings[0]!, /q-00002-of-00005\.gguf\.partial" changed .*SHA-256.*: writing it again$/);
    await assertSetAsReference(dir);
  });
});

Deno.test("--resume of a split export from a changed source is refused, the completed shards kept", async () => {
  await withTempDir(async (dir) => {
    // Issue 34 item 1: the journal records the source's identity, as an APR import's does.
    const copy = `${dir}/src.gguf`;
    await Deno.copyFile(testdata("gguf/tiny-llama-f32.gguf"), copy);
    const { source, out } = await referenceAndTwoShards(dir, copy);
    // One byte of tensor data rewritten in place: same size, same header.
    const file = await Deno.open(source, { read: true, write: true });
    const at = (await file.stat()).size - 3;
    await file.seek(at, Deno.SeekMode.Start);
    await file.write(new Uint8Array([0x5a]));
    file.close();
    await convertModel(source, out, { maxShardSize: 2_000_000, resume: true }).then(
      () => ok(false, "resumed from a changed source"),
      (e) =>
        match(
          (e as Error).message,
          /its source changed since ".*q\.gguf\.partial\.journal" was written/,
        ),
    );
    const run = await runApr(["convert", source, "-o", out, "--max-shard-size", "2MB", "--resume"]);
    assertOneLineError(run, /its source changed since .* run with --force to start over/);
    deepEqual(await listDir(dir), [
      "q-00001-of-00005.gguf.partial",
      "q-00002-of-00005.gguf.partial",
      "q.gguf.partial.journal",
      "ref",
      "src.gguf",
    ]);
    // --force starts over from the source as it now is.
    const forced = await runApr([
      "convert",
      source,
      "-o",
      out,
      "--max-shard-size",
      "2MB",
      "--force",
    ]);
    equal(forced.code, 0, forced.stderr);
    for await (const e of Deno.readDir(dir)) ok(!e.name.includes("partial"), e.name);
  });
});

Deno.test("a shard size that makes more than 1000 shards is refused before anything is written", async () => {
  await withTempDir(async (dir) => {
    // 1,001 one-value tensors: --max-shard-size 1 would write 1,001 files.
    const tensors: Record<string, Float32Array> = {};
    for (let i = 0; i < 1001; i++) tensors[`t${i}`] = new Float32Array([i]);
    await Deno.writeFile(`${dir}/many.safetensors`, f32Safetensors(tensors));
    const args = ["convert", `${dir}/many.safetensors`, "-o", `${dir}/x.gguf`, "--keep-names"];
    const started = performance.now();
    assertOneLineError(
      await runApr([...args, "--max-shard-size", "1"]),
      /"[^"]*x\.gguf": 1001 shards of at most 1 bytes; aprkit writes at most 1000 .*give a shard size of at least 64 bytes$/,
    );
    ok(performance.now() - started < 20_000, "refused at once");
    deepEqual(await listDir(dir), ["many.safetensors"]);
    // The size it names is enough.
    const run = await runApr([...args, "--max-shard-size", "64", "--quiet"]);
    equal(run.code, 0, run.stderr);
    equal((await listDir(dir)).filter((n) => n.startsWith("x-")).length, 501);
  });
});

Deno.test("split output names past the 255-byte file name limit are refused up front, nothing left", async () => {
  await withTempDir(async (dir) => {
    const source = testdata("gguf/tiny-llama-f32.gguf");
    // 235 bytes + "-00001-of-00005.gguf.partial" is 263: the shards' partial names do not fit.
    const out = `${dir}/${"é".repeat(115)}abcde.gguf`;
    const run = await runApr(["convert", source, "-o", out, "--max-shard-size", "2MB"]);
    assertOneLineError(
      run,
      /its name is too long: .*-00001-of-00001\.gguf\.partial.* 263 bytes.* at most 255/,
    );
    deepEqual(await listDir(dir), []);
  });
});

Deno.test("a second split set of another shard size beside an old one is refused without --force; with it, the old set goes", async () => {
  await withTempDir(async (dir) => {
    const source = testdata("gguf/tiny-llama-f32.gguf");
    const out = `${dir}/q.gguf`;
    await convertModel(source, out, { maxShardSize: 2_000_000 });
    const old = await listDir(dir);
    equal(old.length, 5);
    const run = await runApr(["convert", source, "-o", out, "--max-shard-size", "3MB"]);
    assertOneLineError(
      run,
      /"[^"]*q\.gguf": another split set of it exists \("q-00001-of-00005\.gguf", 5 file\(s\)\).* use --force to replace it/,
    );
    deepEqual(await listDir(dir), old);
    const forced = await runApr([
      "convert",
      source,
      "-o",
      out,
      "--max-shard-size",
      "3MB",
      "--force",
    ]);
    equal(forced.code, 0, forced.stderr);
    const now = await listDir(dir);
    ok(now.every((n) => /^q-\d{5}-of-00003\.gguf$/.test(n)), now.join());
    // The one set left reads as the unsplit model.
    await convertModel(source, `${dir}/one.gguf`);
    const diff = await runApr(["diff", `${dir}/q-00001-of-00003.gguf`, `${dir}/one.gguf`]);
    equal(diff.code, 0, diff.stdout + diff.stderr);
  });
});
