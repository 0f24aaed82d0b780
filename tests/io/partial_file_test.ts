import assert from "node:assert/strict";
import { join } from "node:path";
import {
  EnvironmentError,
  HubAnswerError,
  HubRequestError,
  ModelFormatError,
  UsageError,
} from "../../src/errors.ts";
import { FileSink } from "../../src/io/file_sink.ts";
import {
  createFreshFile,
  isBadInput,
  openExistingFile,
  renameIntoPlace,
  writeFreshFile,
} from "../../src/io/partial_file.ts";

async function withVictim(
  fn: (dir: string, victim: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "aprkit-partial-" });
  const victim = join(dir, "victim");
  await Deno.writeTextFile(victim, "precious");
  try {
    await fn(dir, victim);
    assert.equal(await Deno.readTextFile(victim), "precious", "the link's target is untouched");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("createFreshFile() replaces a planted symlink with a new file, never writing its target", async () => {
  await withVictim(async (dir, victim) => {
    const partial = join(dir, "out.apr.partial");
    await Deno.symlink(victim, partial);
    const file = await createFreshFile(partial);
    await file.write(new TextEncoder().encode("output"));
    file.close();
    assert.ok((await Deno.lstat(partial)).isFile);
    assert.equal(await Deno.readTextFile(partial), "output");
  });
});

Deno.test("writeFreshFile() and FileSink.open({ truncate }) do not follow a planted symlink", async () => {
  await withVictim(async (dir, victim) => {
    const journal = join(dir, "out.apr.partial.journal");
    await Deno.symlink(victim, journal);
    await writeFreshFile(journal, "journal\n");
    assert.equal(await Deno.readTextFile(journal), "journal\n");
    const partial = join(dir, "out.gguf.partial");
    await Deno.symlink(victim, partial);
    const sink = await FileSink.open(partial, { truncate: true });
    await sink.writeAt(0, new Uint8Array([1, 2, 3]));
    await sink.close();
    assert.equal((await Deno.lstat(partial)).size, 3);
  });
});

Deno.test("openExistingFile() refuses to resume through a symlink", async () => {
  await withVictim(async (dir, victim) => {
    const partial = join(dir, "out.apr.partial");
    await Deno.symlink(victim, partial);
    await assert.rejects(
      openExistingFile(partial),
      (e: Error) =>
        e instanceof UsageError && /it is a symbolic link, not a regular file/.test(e.message),
    );
    await assert.rejects(
      FileSink.open(partial, { create: false }),
      /it is a symbolic link, not a regular file/,
    );
  });
});

Deno.test("renameIntoPlace() replaces nothing but a regular file, and that only with force", async () => {
  await withVictim(async (dir, victim) => {
    const partial = join(dir, "x.partial");
    await Deno.writeTextFile(partial, "new");
    const link = join(dir, "link.apr");
    await Deno.symlink(victim, link);
    await assert.rejects(renameIntoPlace(partial, link, true), /it is a symbolic link/);
    const folder = join(dir, "folder.apr");
    await Deno.mkdir(folder);
    await assert.rejects(renameIntoPlace(partial, folder, true), /it is a directory/);
    const existing = join(dir, "existing.apr");
    await Deno.writeTextFile(existing, "old");
    await assert.rejects(renameIntoPlace(partial, existing, false), /it exists; use force: true/);
    await renameIntoPlace(partial, existing, true);
    assert.equal(await Deno.readTextFile(existing), "new");
  });
});

Deno.test("isBadInput() removes partials for bad input only, and keeps them for the rest", async (t) => {
  const cases: [string, unknown, boolean][] = [
    ["a malformed file", new ModelFormatError("GGUF", "m.gguf", "truncated"), true],
    ["content that failed its sha256", new HubAnswerError("sha256 differs", "hf://o/n/m"), true],
    ["a value the writer cannot take", new RangeError("too large"), true],
    ["a wrong chunk", new TypeError("unknown chunk"), true],
    ["a refused option (a UsageError is a TypeError)", new UsageError("different input"), false],
    ["a full disk", new EnvironmentError("disk is full", "m.apr.partial"), false],
    ["a Hub that keeps failing", new HubRequestError("503", 503, "hf://o/n"), false],
    ["an interruption", new DOMException("stopped", "AbortError"), false],
    ["no reason (an abort)", undefined, false],
  ];
  for (const [what, reason, bad] of cases) {
    await t.step(what, () => assert.equal(isBadInput(reason), bad));
  }
});
