import { deepStrictEqual as assertEquals, match } from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);

/** The modules `deno task wasm` builds: where their sources are, and the file they go to. */
const MODULES = [
  {
    dir: "src/quant/wasm/assembly",
    entry: "kernels.ts",
    output: "src/quant/wasm/_kernels_wasm.ts",
  },
  { dir: "src/runtime/assembly", entry: "sha256.ts", output: "src/runtime/_sha256_wasm.ts" },
];

// `deno task check` runs `.ci/build_wasm.ts --check`, which passes on this
// tree (CI proves that). Here: a module's source changed without `deno task
// wasm` must fail that check, naming that module. Runs on a copy of the files
// it reads; offline (`--cached-only`: check has fetched the pinned compiler already).
Deno.test("the wasm freshness check fails when a module's sources changed", async (t) => {
  for (const changed of MODULES) {
    await t.step(changed.output, async () => {
      const dir = await Deno.makeTempDir();
      try {
        const files = ["deno.json", "deno.lock", ".ci/build_wasm.ts"];
        for (const m of MODULES) {
          files.push(m.output);
          for (const e of Deno.readDirSync(new URL(`${m.dir}/`, ROOT))) {
            files.push(`${m.dir}/${e.name}`);
          }
        }
        for (const f of files) {
          await Deno.mkdir(`${dir}/${f}`.replace(/\/[^/]+$/, ""), { recursive: true });
          await Deno.copyFile(new URL(f, ROOT), `${dir}/${f}`);
        }
        const entry = `${dir}/${changed.dir}/${changed.entry}`;
        await Deno.writeTextFile(
          entry,
          (await Deno.readTextFile(entry)) + "\nexport function answer(): i32 {\n  return 42;\n}\n",
        );
        const child = await new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "--cached-only",
            "--allow-read",
            "--allow-env",
            ".ci/build_wasm.ts",
            "--check",
          ],
          cwd: dir,
          stdout: "piped",
          stderr: "piped",
        }).output();
        const stderr = new TextDecoder().decode(child.stderr);
        assertEquals(child.code, 1, stderr);
        const stale = stderr.split("\n").filter((line) => line.includes("is stale"));
        assertEquals(stale.length, 1, stderr);
        match(
          stale[0]!,
          new RegExp(
            `^${changed.output.replaceAll(".", "\\.")} is stale: .*run \`deno task wasm\``,
          ),
        );
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    });
  }
});
