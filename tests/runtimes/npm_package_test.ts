/**
 * The npm package, as a Node user meets it: `deno task npm` builds it,
 * `npm pack` makes the tarball, a fresh Node project installs the tarball
 * offline (the package has no dependencies), and the README's library
 * example runs there under Node, importing `@aprkit/apr` (the Hub reference
 * swapped for the local demo folder). A TypeScript file of that project
 * type-checks against the package's declarations, and a wrong call does not.
 *
 * @module
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";

const ROOT = new URL("../../", import.meta.url).pathname;
const DEMO = join(ROOT, "examples/tiny-llama");
const TSC_DIR = Deno.env.get("APRKIT_TSC_DIR") ?? join(ROOT, ".tools/typescript");

/** npm's cache for this test's runs (a fresh one: nothing comes from an earlier install). */
let npmCache = "";

async function run(
  command: string,
  args: string[],
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(command, {
    args,
    cwd,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", npm_config_cache: npmCache },
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

async function ok0(command: string, args: string[], cwd: string): Promise<string> {
  const out = await run(command, args, cwd);
  equal(out.code, 0, `${command} ${args.join(" ")}:\n${out.stdout}\n${out.stderr}`);
  return out.stdout;
}

/** The ```ts block of the README's "The library" section. */
async function libraryExample(): Promise<string> {
  const readme = await Deno.readTextFile(join(ROOT, "README.md"));
  const block = /^```ts\n([\s\S]*?)^```/m.exec(readme.slice(readme.indexOf("## The library")));
  ok(block, "README's library section has no ts block");
  return block[1]!;
}

Deno.test("the npm package: packed, installed offline into a fresh Node project, the README's example runs and its types check", async () => {
  const dir = await Deno.makeTempDir({ prefix: "aprkit-npm-" });
  npmCache = join(dir, ".npm-cache");
  try {
    const pkg = join(dir, "pkg");
    await ok0(Deno.execPath(), ["task", "--quiet", "npm", "--output", pkg], ROOT);
    const packed = JSON.parse(
      await ok0("npm", ["pack", pkg, "--json", "--pack-destination", dir], dir),
    );
    const files = packed[0].files.map((f: { path: string }) => f.path).sort();
    ok(files.includes("dist/aprkit.js") && files.includes("dist/types/mod.d.ts"), files);
    deepEqual(
      files.filter((f: string) => !f.startsWith("dist/types/")),
      ["LICENSE", "README.md", "dist/aprkit.js", "package.json"],
    );
    const tarball = join(dir, packed[0].filename);

    // A fresh project; --offline: the install must need nothing from a registry.
    const app = join(dir, "app");
    await Deno.mkdir(app);
    await Deno.writeTextFile(
      join(app, "package.json"),
      JSON.stringify({ name: "app", private: true, type: "module" }),
    );
    await ok0("npm", ["install", "--offline", "--no-audit", "--no-fund", tarball], app);

    // The README's example, under Node.
    await Deno.copyFile(
      join(DEMO, "model-00001-of-00002.safetensors"),
      join(app, "model.safetensors"),
    );
    const example = (await libraryExample())
      .replace('"jsr:@aprkit/apr"', '"@aprkit/apr"')
      .replace('"hf://org/name"', JSON.stringify(DEMO));
    await Deno.writeTextFile(join(app, "example.mjs"), example);
    const progress = (await ok0("node", ["example.mjs"], app)).trim().split("\n");
    const [done, total] = progress.at(-1)!.split("/").map(Number);
    ok(done === total && total! > 0, progress.at(-1));
    ok((await Deno.stat(join(app, "model-f16.apr"))).size > 0);
    // A path where a ByteSource goes, and a missing file's code, as in Deno.
    await Deno.writeTextFile(
      join(app, "paths.mjs"),
      `import { validateApr } from "@aprkit/apr";
const checks = await validateApr("model.apr", { deep: true });
console.log(checks.every((c) => c.ok));
await validateApr("missing.apr").catch((e) => console.log(e.name, e.code));`,
    );
    deepEqual((await ok0("node", ["paths.mjs"], app)).trim().split("\n"), [
      "true",
      "NotFound ENOENT",
    ]);

    // The declarations: a TypeScript user's file checks, and a wrong call is caught.
    const tsc = join(TSC_DIR, "node_modules/typescript/bin/tsc");
    // The compiler `deno task npm` pinned and installed.
    const pinned = /TYPESCRIPT_VERSION = "([^"]+)"/.exec(
      await Deno.readTextFile(join(ROOT, ".ci/npm.ts")),
    )?.[1];
    equal(
      JSON.parse(await Deno.readTextFile(join(TSC_DIR, "node_modules/typescript/package.json")))
        .version,
      pinned,
    );
    await Deno.writeTextFile(
      join(app, "use.ts"),
      `import { type ConvertOptions, importModel, openModel, validateApr } from "@aprkit/apr";
const options: ConvertOptions = { quantize: "q4_k" };
const result = await importModel("model.safetensors", "typed.apr", options);
const bytes: number = result.fileBytes;
const checks = await validateApr("typed.apr");
const ok: boolean = checks.every((c) => c.ok);
const model = await openModel("typed.apr");
const names: string[] = model.names();
await model.close();
export { bytes, names, ok };
`,
    );
    const tscArgs = (file: string) => [
      tsc,
      "--noEmit",
      "--strict",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--target",
      "es2022",
      "--lib",
      "es2023,dom,dom.iterable",
      "--skipLibCheck",
      file,
    ];
    await ok0("node", tscArgs("use.ts"), app);
    await Deno.writeTextFile(
      join(app, "wrong.ts"),
      `import { importModel } from "@aprkit/apr";
await importModel("model.safetensors", "x.apr", { quantize: "q3_nonsense" });
`,
    );
    const wrong = await run("node", tscArgs("wrong.ts"), app);
    equal(wrong.code, 2, wrong.stdout);
    match(wrong.stdout, /wrong\.ts\(2,.*"q3_nonsense"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
