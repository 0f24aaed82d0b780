/**
 * The runtime seams (src/runtime/): the browser stand-ins give the answers
 * of the Node/Deno originals, and nothing outside the seams and the CLI
 * reaches for `Deno.*` or a static `node:` import (which would stop mod.ts
 * loading in Node or a browser).
 *
 * @module
 */

import { deepEqual, equal, match, ok, rejects, throws } from "node:assert/strict";
import { createHash } from "node:crypto";
import { posix } from "node:path";
import { posixPaths } from "../../src/runtime/path.ts";
import { PlainSha256 } from "../../src/runtime/sha256.ts";
import { fs, standInErrors } from "../../src/runtime/fs.ts";
import { RUNTIME } from "../../src/runtime/which.ts";

Deno.test("the plain POSIX paths answer as node:path's posix", () => {
  const paths = [
    "",
    ".",
    "/",
    "a",
    "a/",
    "/a",
    "a/b",
    "a//b/",
    "/a/b/c.apr",
    "../x",
    "a/../../b",
    "./a/./b",
    "//a",
  ];
  for (const path of paths) {
    equal(posixPaths.dirname(path), posix.dirname(path), `dirname(${JSON.stringify(path)})`);
    equal(posixPaths.basename(path), posix.basename(path), `basename(${JSON.stringify(path)})`);
    for (const other of ["", "b", "../c", "/d", "e/"]) {
      equal(
        posixPaths.join(path, other),
        posix.join(path, other),
        `join(${JSON.stringify(path)}, ${JSON.stringify(other)})`,
      );
    }
  }
});

Deno.test("the plain SHA-256 equals node:crypto's, however the bytes are split", () => {
  const bytes = new Uint8Array(1000);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919 + 13) & 255;
  for (const length of [0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000]) {
    const data = bytes.subarray(0, length);
    const expected = createHash("sha256").update(data).digest("hex");
    equal(new PlainSha256().update(data).digest("hex"), expected, `${length} bytes at once`);
    for (const step of [1, 3, 64, 100]) {
      const hash = new PlainSha256();
      for (let i = 0; i < length; i += step) hash.update(data.subarray(i, i + step));
      equal(hash.digest("hex"), expected, `${length} bytes by ${step}`);
    }
  }
  equal(
    new PlainSha256().update("aprkit ").update("é").digest("hex"),
    createHash("sha256").update("aprkit é").digest("hex"),
  );
  const done = new PlainSha256();
  done.digest("hex");
  throws(() => done.update("x"), TypeError);
});

Deno.test("in Deno the file system is Deno's own, with Deno's error classes", async () => {
  equal(RUNTIME, "deno");
  equal(fs.errors.NotFound, Deno.errors.NotFound);
  await rejects(fs.stat("/nonexistent/aprkit"), Deno.errors.NotFound);
  const stand = new standInErrors.NotFound("gone");
  equal(stand.name, "NotFound");
  ok(stand instanceof Error);
});

Deno.test("outside src/runtime/ and the CLI, src/ uses no Deno.* and no static node: import", async () => {
  const offenders: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) {
        if (!["src/cli", "src/runtime"].includes(path)) await walk(path);
        continue;
      }
      if (!path.endsWith(".ts")) continue;
      const text = await Deno.readTextFile(new URL(`../../${path}`, import.meta.url));
      text.split("\n").forEach((line, i) => {
        const code = line.trimStart();
        if (code.startsWith("*") || code.startsWith("//") || code.startsWith("/*")) return;
        if (/\bDeno\./.test(code) || /^import .* from "node:/.test(code)) {
          offenders.push(`${path}:${i + 1}: ${code}`);
        }
      });
    }
  };
  const root = new URL("../../", import.meta.url).pathname;
  const cwd = Deno.cwd();
  Deno.chdir(root);
  try {
    await walk("src");
  } finally {
    Deno.chdir(cwd);
  }
  equal(offenders.join("\n"), "", "use src/runtime/ (fs.ts, path.ts, sha256.ts, env.ts) instead");
});

Deno.test("a browser's file system refuses a path it was not given, naming it and what to pass", async () => {
  const { browserFileSystem } = await import("../../src/runtime/browser_fs.ts");
  const browser = browserFileSystem(standInErrors, new Map());
  const error = await browser.open("model.gguf").catch((e: unknown) => e);
  ok(error instanceof standInErrors.NotFound);
  match((error as Error).message, /"model\.gguf".*no file system.*File or Blob.*bindOutput/);
  throws(() => browser.readTextFileSync("token"), /"token"/);
});

Deno.test("a browser's bound output: the sinks' partial writes land in the writable, the rename commits, a remove aborts", async () => {
  const { browserFileSystem, boundOutput } = await import("../../src/runtime/browser_fs.ts");
  const log: string[] = [];
  let bytes = new Uint8Array(0);
  const writable = {
    write(
      command: { type: "write"; position: number; data: Uint8Array } | {
        type: "truncate";
        size: number;
      },
    ) {
      if (command.type === "truncate") {
        const next = new Uint8Array(command.size);
        next.set(bytes.subarray(0, command.size));
        bytes = next;
      } else {
        const next = new Uint8Array(Math.max(bytes.length, command.position + command.data.length));
        next.set(bytes);
        next.set(command.data, command.position);
        bytes = next;
      }
      log.push(command.type);
      return Promise.resolve();
    },
    close: () => (log.push("close"), Promise.resolve()),
    abort: () => (log.push("abort"), Promise.resolve()),
  };
  const outputs = new Map([["m.gguf", boundOutput(writable)], ["x.apr", boundOutput(writable)]]);
  const browser = browserFileSystem(standInErrors, outputs);
  equal((await browser.stat(".")).isDirectory, true);
  await rejects(browser.lstat("m.gguf"), standInErrors.NotFound);
  // The sinks clear a stale partial before creating theirs: one never opened
  // does not exist, and removing it must not abort the picked file.
  await rejects(browser.lstat("m.gguf.partial"), standInErrors.NotFound);
  await rejects(browser.remove("m.gguf.partial"), standInErrors.NotFound);
  const file = await browser.open("m.gguf.partial", { read: true, write: true, createNew: true });
  await file.truncate(6);
  await file.seek(2, 0);
  await file.write(new Uint8Array([1, 2]));
  await file.seek(0, 0);
  await file.write(new Uint8Array([9]));
  await rejects(file.read(new Uint8Array(1)), /write-only/);
  file.close();
  deepEqual([...bytes], [9, 0, 1, 2, 0, 0]);
  await browser.rename("m.gguf.partial", "m.gguf");
  equal((await browser.stat("m.gguf")).size, 6);
  // A side file (a journal) in memory.
  await browser.writeTextFile("x.apr.partial.journal", "a\n", { append: true });
  await browser.writeTextFile("x.apr.partial.journal", "b\n", { append: true });
  equal(await browser.readTextFile("x.apr.partial.journal"), "a\nb\n");
  await browser.open("x.apr.partial", { write: true, createNew: true });
  await browser.remove("x.apr.partial");
  await rejects(browser.open("x.apr.partial", { write: true }), standInErrors.NotFound);
  deepEqual(log, ["truncate", "write", "write", "close", "abort"]);
});
