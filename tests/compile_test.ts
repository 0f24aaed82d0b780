/**
 * Smoke test of the single binary: `deno compile` the CLI, then run
 * `--version` and an import with the binary.
 *
 * `deno compile` needs the denort runtime, which it downloads; machines
 * without internet access (like this project's CI) cannot. So the test runs
 * only when `DENORT_BIN` names a runtime, and says so when it skips; the
 * GitHub Actions workflows compile and run the binary for real
 * (`deno task compile`).
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));
const denort = Deno.env.get("DENORT_BIN");

if (!denort) {
  console.log(
    "compile_test.ts: skipped — set DENORT_BIN to a denort binary of Deno 2.9.6 to compile here " +
      "(deno compile cannot download its runtime offline); GitHub Actions runs it for real",
  );
}

Deno.test({
  name: "deno compile builds an apr binary that runs --version and an import",
  ignore: !denort,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const binary = `${dir}/apr${Deno.build.os === "windows" ? ".exe" : ""}`;
      const compile = await new Deno.Command(Deno.execPath(), {
        args: [
          "compile",
          "-A",
          "--include",
          "deno.json",
          "--include",
          "src/quant/_encode_worker.ts",
          "--output",
          binary,
          "cli.ts",
        ],
        cwd: root,
      }).output();
      assert.equal(compile.code, 0, new TextDecoder().decode(compile.stderr));

      const version = await new Deno.Command(binary, { args: ["--version"] }).output();
      const denoJson = JSON.parse(await Deno.readTextFile(`${root}/deno.json`));
      assert.equal(new TextDecoder().decode(version.stdout).trim(), `apr ${denoJson.version}`);

      const out = `${dir}/tiny.apr`;
      const run = await new Deno.Command(binary, {
        args: ["import", `${root}/examples/tiny-llama`, "-o", out, "--quantize", "q4", "--quiet"],
      }).output();
      assert.equal(run.code, 0, new TextDecoder().decode(run.stderr));
      const validate = await new Deno.Command(binary, { args: ["validate", "--deep", out] })
        .output();
      assert.equal(validate.code, 0, new TextDecoder().decode(validate.stdout));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
