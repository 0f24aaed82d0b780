/**
 * LocalModelFiles.list() on a folder that came from elsewhere (an archive, a
 * git clone of a hostile repository): symbolic-link loops and huge trees
 * must not make the listing endless (docs/SECURITY.md, issue 9).
 */

import { deepEqual, equal, rejects } from "node:assert/strict";
import { join } from "node:path";
import { LocalModelFiles } from "../../src/io/model_files.ts";
import { DEMO_MODEL, runApr, withTempDir } from "../cli/_run_apr.ts";

/** Reject when `promise` takes longer than `ms` (the old walk never ended). */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still running after ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

Deno.test("LocalModelFiles.list() lists linked files but enters no linked folder, so link loops end", async () => {
  await withTempDir(async (dir) => {
    const model = join(dir, "model");
    await Deno.mkdir(join(model, "d"), { recursive: true });
    await Deno.writeTextFile(join(dir, "blob"), "{}");
    await Deno.symlink(join(dir, "blob"), join(model, "config.json")); // as the HF cache links
    await Deno.writeTextFile(join(model, "d", "notes.txt"), "x");
    // Two links climbing back: every path doubles the walk (2^40 paths before ELOOP).
    await Deno.symlink("..", join(model, "d", "back"));
    await Deno.symlink(".", join(model, "self"));
    const files = await within(new LocalModelFiles(model).list(), 20_000);
    deepEqual(files, ["config.json", "d/notes.txt"]);
  });
});

Deno.test("apr inspect of a model folder with a link loop finishes", async () => {
  await withTempDir(async (dir) => {
    const model = join(dir, "m");
    await Deno.mkdir(model);
    for await (const entry of Deno.readDir(DEMO_MODEL)) {
      await Deno.copyFile(join(DEMO_MODEL, entry.name), join(model, entry.name));
    }
    await Deno.mkdir(join(model, "d"));
    await Deno.symlink("..", join(model, "d", "back"));
    await Deno.symlink("../m", join(model, "up"));
    const run = await within(runApr(["inspect", model]), 60_000);
    equal(run.code, 0, run.stderr);
  });
});

Deno.test("LocalModelFiles.list() stops at its entry limit with a clear error", async () => {
  await withTempDir(async (dir) => {
    for (let i = 0; i < 12; i++) await Deno.writeTextFile(join(dir, `f${i}`), "");
    deepEqual((await new LocalModelFiles(dir, 12).list()).length, 12);
    await rejects(
      new LocalModelFiles(dir, 10).list(),
      /^RangeError: Cannot list ".*": more than 10 files and folders$/,
    );
  });
});
