/**
 * A resume never mixes two sources (issue 20 item 3; docs/SECURITY.md
 * "Resume"): an import interrupted after its first commits, a shard's tensor
 * bytes rewritten in place (same size, same header, mtime restored or not),
 * then `--resume`: refused with exit 2 and the fix, the partial kept. The
 * unchanged source still resumes.
 */

import { equal, match, ok, rejects } from "node:assert/strict";
import { join } from "node:path";
import { UsageError } from "../../src/errors.ts";
import { convertModel, importModel } from "../../src/pipeline/convert_model.ts";
import {
  assertOneLineError,
  DEMO_MODEL,
  exists,
  runApr,
  testdata,
  withTempDir,
} from "../cli/_run_apr.ts";

const SHARD = "model-00002-of-00002.safetensors";

/** Copy the demo model and import it, stopping after `stopAfter` tensors were committed. */
async function interruptedImport(
  dir: string,
  stopAfter: number,
): Promise<{ model: string; out: string }> {
  const model = join(dir, "model");
  await Deno.mkdir(model);
  for await (const e of Deno.readDir(DEMO_MODEL)) {
    await Deno.copyFile(join(DEMO_MODEL, e.name), join(model, e.name));
  }
  const out = join(dir, "m.apr");
  const stop = new AbortController();
  await rejects(
    importModel(model, out, {
      commitBytes: 1, // commit after every tensor
      signal: stop.signal,
      onProgress: (e) => {
        if (e.phase === "write" && e.itemsDone >= stopAfter) stop.abort(new Error("stopped"));
      },
    }),
  );
  const journal = await Deno.readTextFile(`${out}.partial.journal`);
  ok(journal.split("\n").filter((l) => l.includes('"crc"')).length >= 1, journal);
  return { model, out };
}

/** Flip one byte of the shard's tensor data in place: same size, same header. */
async function rewriteInPlace(path: string, keepMtime: boolean): Promise<void> {
  const before = await Deno.stat(path);
  const file = await Deno.open(path, { read: true, write: true });
  const at = before.size - 3;
  const byte = new Uint8Array(1);
  await file.seek(at, Deno.SeekMode.Start);
  await file.read(byte);
  byte[0] = byte[0]! ^ 0xff;
  await file.seek(at, Deno.SeekMode.Start);
  await file.write(byte);
  file.close();
  if (keepMtime) await Deno.utime(path, before.atime!, before.mtime!);
  equal((await Deno.stat(path)).size, before.size);
}

for (const keepMtime of [false, true]) {
  Deno.test(`--resume after a same-size rewrite of a shard (mtime ${keepMtime ? "kept" : "new"}) is refused`, async () => {
    await withTempDir(async (dir) => {
      const { model, out } = await interruptedImport(dir, 3);
      await rewriteInPlace(join(model, SHARD), keepMtime);
      await rejects(importModel(model, out, { resume: true }), (e: Error) => {
        ok(e instanceof UsageError, String(e));
        match(
          e.message,
          /its source changed since ".*m\.apr\.partial" was written.*force: true to start over/,
        );
        return true;
      });
      ok(await exists(`${out}.partial`), "the partial is kept for the user to decide");
      ok(await exists(`${out}.partial.journal`));
      // The CLI says it with the flag, in one line, exit 2; --force starts over.
      assertOneLineError(
        await runApr(["import", model, "-o", out, "--resume"]),
        /its source changed since .* run with --force to start over/,
      );
      const forced = await runApr(["import", model, "-o", out, "--force"]);
      equal(forced.code, 0, forced.stderr);
      equal(await exists(`${out}.partial`), false);
    });
  });
}

Deno.test("--resume from the unchanged source continues (the identity is stable)", async () => {
  await withTempDir(async (dir) => {
    const { model, out } = await interruptedImport(dir, 3);
    const result = await importModel(model, out, { resume: true });
    ok(result.resumedTensors >= 1, `resumed ${result.resumedTensors}`);
    const fresh = join(dir, "fresh.apr");
    await importModel(model, fresh);
    const [a, b] = await Promise.all([Deno.readFile(out), Deno.readFile(fresh)]);
    equal(a.length, b.length);
    ok(a.every((x, i) => x === b[i]), "the resumed output is byte-identical to a fresh one");
  });
});

Deno.test("--resume of an import from one shard of a split GGUF set sees a change to another shard of the set", async () => {
  await withTempDir(async (dir) => {
    // The set is what is read, whichever shard names it (issue 34 item 1).
    await convertModel(testdata("gguf/tiny-llama-f32.gguf"), join(dir, "set.gguf"), {
      maxShardSize: 2_000_000,
    });
    const source = join(dir, "set-00001-of-00005.gguf");
    const out = join(dir, "m.apr");
    const stop = new AbortController();
    await rejects(importModel(source, out, {
      commitBytes: 1,
      signal: stop.signal,
      onProgress: (e) => {
        if (e.phase === "write" && e.itemsDone >= 2) stop.abort(new Error("stopped"));
      },
    }));
    ok(await exists(`${out}.partial.journal`));
    await rewriteInPlace(join(dir, "set-00004-of-00005.gguf"), true);
    await rejects(
      importModel(source, out, { resume: true }),
      /its source changed since ".*m\.apr\.partial" was written/,
    );
    ok(await exists(`${out}.partial`), "the partial is kept for the user to decide");
  });
});
