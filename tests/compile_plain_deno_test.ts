/**
 * `deno task compile` with a plain `deno` as DENORT_BIN builds a copy of
 * Deno, not apr: the task checks that the binary answers `--version` as apr
 * and fails with one clear line otherwise (it used to exit 0).
 *
 * @module
 */

import { equal, match } from "node:assert/strict";
import { join } from "node:path";

Deno.test("deno task compile with a plain deno as DENORT_BIN fails, saying the binary is not apr", async () => {
  const dir = await Deno.makeTempDir({ prefix: "aprkit-compile-plain-" });
  try {
    const output = join(dir, "apr");
    const run = await new Deno.Command(Deno.execPath(), {
      args: ["task", "--quiet", "compile", "--output", output],
      cwd: new URL("../", import.meta.url).pathname,
      env: { DENORT_BIN: Deno.execPath(), NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(run.stderr);
    equal(run.code, 1, stderr);
    match(stderr, /is not apr: its --version printed "deno \d/);
    match(stderr, /DENORT_BIN=".*" a denort binary/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
