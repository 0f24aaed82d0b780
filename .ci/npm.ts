/**
 * `deno task npm`: build the npm package into `dist/npm/` — `package.json`
 * (npm/package.json with deno.json's version), `dist/aprkit.js` (mod.ts
 * bundled, as `deno task bundle` makes it), `dist/types/` (declarations of
 * mod.ts, by the pinned TypeScript compiler from the npm registry, installed
 * on first use into `.tools/typescript`, or APRKIT_TSC_DIR), the README and
 * the LICENSE. Then `npm pack dist/npm` makes the tarball. Nothing built is
 * committed.
 *
 * Usage: deno task npm [--output DIR]
 */

import { join, relative } from "node:path";
import { parseArgs } from "node:util";

/** The TypeScript compiler the declarations are made with. */
const TYPESCRIPT_VERSION = "5.9.3";

const root = new URL("../", import.meta.url).pathname;
const { values } = parseArgs({ args: Deno.args, options: { output: { type: "string" } } });
const out = values.output ?? join(root, "dist/npm");
const tscDir = Deno.env.get("APRKIT_TSC_DIR") ?? join(root, ".tools/typescript");

async function run(command: string, args: string[], options: Deno.CommandOptions = {}) {
  const result = await new Deno.Command(command, {
    args,
    cwd: root,
    stdout: "piped",
    stderr: "piped",
    ...options,
  }).output();
  const text = new TextDecoder().decode(result.stdout) + new TextDecoder().decode(result.stderr);
  return { ok: result.success, text };
}

async function installedTsc(): Promise<string | undefined> {
  const pkg = await Deno.readTextFile(join(tscDir, "node_modules/typescript/package.json"))
    .catch(() => undefined);
  return pkg === undefined ? undefined : JSON.parse(pkg).version;
}

if (await installedTsc() !== TYPESCRIPT_VERSION) {
  const install = await run("npm", [
    "install",
    "--no-save",
    "--ignore-scripts",
    "--no-audit",
    "--no-fund",
    "--loglevel=error",
    "--prefix",
    tscDir,
    `typescript@${TYPESCRIPT_VERSION}`,
  ]);
  if (!install.ok || await installedTsc() !== TYPESCRIPT_VERSION) {
    console.error(
      `npm: cannot install typescript@${TYPESCRIPT_VERSION} into ${tscDir}:\n${install.text}`,
    );
    Deno.exit(1);
  }
}

await Deno.remove(out, { recursive: true }).catch(() => {});
const dist = join(out, "dist");
await Deno.mkdir(dist, { recursive: true });

// The JavaScript: the same bundle as `deno task bundle`.
const config = JSON.parse(await Deno.readTextFile(join(root, "deno.json")));
const bundleTask: string = config.tasks.bundle;
const bundle = await run(
  Deno.execPath(),
  bundleTask.slice("deno ".length).split(" ").map((a) =>
    a.startsWith("dist/") ? join(dist, "aprkit.js") : a
  ),
);
if (!bundle.ok) {
  console.error(`npm: deno bundle failed:\n${bundle.text}`);
  Deno.exit(1);
}

// The declarations. The Deno namespace comes from `deno types` (src/runtime
// names Deno.* in the Deno-only branches; no declaration exported refers to it).
const work = await Deno.makeTempDir({ prefix: "aprkit-npm-" });
try {
  const denoTypes = await run(Deno.execPath(), ["types"]);
  await Deno.writeTextFile(join(work, "deno.d.ts"), denoTypes.text);
  const types = join(dist, "types");
  await Deno.writeTextFile(
    join(work, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        declaration: true,
        emitDeclarationOnly: true,
        allowImportingTsExtensions: true,
        target: "ES2022",
        module: "ESNext",
        moduleResolution: "bundler",
        lib: ["ES2023", "DOM", "DOM.Iterable"],
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        skipLibCheck: true,
        noCheck: true, // declarations only: deno check is the type check
        outDir: types,
        rootDir: root,
        types: [],
      },
      files: [join(root, "mod.ts"), join(work, "deno.d.ts")],
    }),
  );
  const tsc = await run("node", [
    join(tscDir, "node_modules/typescript/bin/tsc"),
    "-p",
    join(work, "tsconfig.json"),
  ]);
  if (!tsc.ok) {
    console.error(`npm: tsc failed:\n${tsc.text}`);
    Deno.exit(1);
  }
  // Relative imports name the emitted declarations as Node resolves them (.js → .d.ts).
  for await (const path of walk(types)) {
    const text = await Deno.readTextFile(path);
    await Deno.writeTextFile(
      path,
      text.replace(/(["'])(\.{1,2}\/[^"']+)\.ts\1/g, (_m, q, p) => `${q}${p}.js${q}`),
    );
  }
} finally {
  await Deno.remove(work, { recursive: true });
}

for (const file of ["README.md", "LICENSE"]) await Deno.copyFile(join(root, file), join(out, file));
const pkg = JSON.parse(await Deno.readTextFile(join(root, "npm/package.json")));
pkg.version = config.version;
await Deno.writeTextFile(join(out, "package.json"), JSON.stringify(pkg, null, 2) + "\n");
console.log(
  `npm: built ${relative(root, out)}/ (${pkg.name}@${pkg.version}); npm pack ${
    relative(root, out)
  }`,
);

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) yield* walk(path);
    else if (path.endsWith(".d.ts")) yield path;
  }
}
