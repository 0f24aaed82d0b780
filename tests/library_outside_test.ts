/**
 * The README's library example, run as a user would outside the clone: a
 * script in a temporary folder with no deno.json, importing `mod.ts` by path
 * and by URL (served from 127.0.0.1), with an empty Deno cache. It must run
 * with nothing resolved through this repository's import map, npm or JSR.
 * The Hub reference is swapped for a local folder, and the example's
 * `model.safetensors` is a real shard of the demo model.
 *
 * @module
 */

import { equal, match, ok } from "node:assert/strict";
import { join } from "node:path";

const ROOT = new URL("../", import.meta.url);
const README = await Deno.readTextFile(new URL("README.md", ROOT));
const DEMO = new URL("examples/tiny-llama/", ROOT).pathname;

/** The ```ts block of the README's "The library" section. */
function libraryExample(): string {
  const section = README.slice(README.indexOf("## The library"));
  const block = /^```ts\n([\s\S]*?)^```/m.exec(section);
  ok(block, "README's library section has no ts block");
  return block[1]!;
}

/** Run a script with no config, no lockfile and a fresh cache; cwd is its folder. */
async function runScript(dir: string, script: string): Promise<Deno.CommandOutput> {
  const path = join(dir, "example.ts");
  await Deno.writeTextFile(path, script);
  return await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-config", "--no-lock", path],
    cwd: dir,
    env: { DENO_DIR: join(dir, ".deno-cache"), NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
}

/** Serve the repository's files over HTTP on 127.0.0.1 (as a static host would). */
function serveRepo(): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const path = decodeURIComponent(new URL(request.url).pathname);
    if (path.includes("..")) return new Response("no", { status: 400 });
    try {
      const body = await Deno.readFile(new URL(`.${path}`, ROOT));
      return new Response(body, { headers: { "content-type": "application/typescript" } });
    } catch {
      return new Response("not found", { status: 404 });
    }
  });
}

Deno.test("the README's library example runs outside the clone, importing mod.ts by path and by URL", async (t) => {
  const example = libraryExample();
  ok(example.includes('from "jsr:@aprkit/apr"'), "the example imports jsr:@aprkit/apr");
  ok(example.includes('"hf://org/name"'), "the example imports hf://org/name");
  const server = serveRepo();
  const dir = await Deno.makeTempDir({ prefix: "aprkit-outside-" });
  try {
    const modules = {
      path: new URL("mod.ts", ROOT).pathname,
      url: `http://127.0.0.1:${server.addr.port}/mod.ts`,
    };
    for (const [how, specifier] of Object.entries(modules)) {
      await t.step(`by ${how}`, async () => {
        const work = join(dir, how);
        await Deno.mkdir(work);
        await Deno.copyFile(
          join(DEMO, "model-00001-of-00002.safetensors"),
          join(work, "model.safetensors"),
        );
        const script = example
          .replace('"jsr:@aprkit/apr"', JSON.stringify(specifier))
          .replace('"hf://org/name"', JSON.stringify(DEMO));
        const first = await runScript(work, script);
        const stderr = new TextDecoder().decode(first.stderr);
        equal(first.code, 0, stderr);
        const progress = new TextDecoder().decode(first.stdout).trim().split("\n");
        const [done, total] = progress.at(-1)!.split("/").map(Number);
        ok(done === total && total! > 0, progress.at(-1));
        ok((await Deno.stat(join(work, "model.apr"))).size > 0);
        ok((await Deno.stat(join(work, "model-f16.apr"))).size > 0);

        // Run again: the outputs exist, and the error speaks the library's
        // language (an option, not a CLI flag), with its documented class.
        const second = await runScript(work, script);
        const again = new TextDecoder().decode(second.stderr);
        equal(second.code, 1);
        match(again, /UsageError: Cannot write ".*model\.apr": it exists; use force: true/);
        ok(!again.includes("--force"), again);
      });
    }
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
