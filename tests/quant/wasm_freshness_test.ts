import { deepStrictEqual as assertEquals, match } from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);

// `deno task check` runs `.ci/build_wasm.ts --check`, which passes on this
// tree (CI proves that). Here: a kernel source changed without `deno task
// wasm` must fail that check. Runs on a copy of the files it reads; offline
// (`--cached-only`: check has fetched the pinned compiler already).
Deno.test("the wasm freshness check fails when the kernels' sources changed", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const files = [
      "deno.json",
      "deno.lock",
      ".ci/build_wasm.ts",
      "src/quant/wasm/_kernels_wasm.ts",
      ...[...Deno.readDirSync(new URL("src/quant/wasm/assembly/", ROOT))].map((e) =>
        `src/quant/wasm/assembly/${e.name}`
      ),
    ];
    for (const f of files) {
      await Deno.mkdir(`${dir}/${f}`.replace(/\/[^/]+$/, ""), { recursive: true });
      await Deno.copyFile(new URL(f, ROOT), `${dir}/${f}`);
    }
    const entry = `${dir}/src/quant/wasm/assembly/kernels.ts`;
    await Deno.writeTextFile(
      entry,
      (await Deno.readTextFile(entry)) + "\nexport function answer(): i32 {\n  return 42;\n}\n",
    );
    const child = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--cached-only", "--allow-read", "--allow-env", ".ci/build_wasm.ts", "--check"],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(child.stderr);
    assertEquals(child.code, 1, stderr);
    match(stderr, /_kernels_wasm\.ts is stale: .*run `deno task wasm`/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
