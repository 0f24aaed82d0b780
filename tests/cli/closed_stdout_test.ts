/**
 * `apr import … | head -1`: a reader that leaves before apr's last line is
 * not a failure of the import. The file is written and the exit code is 0,
 * with no "Broken pipe … this looks like a bug" on stderr.
 *
 * @module
 */

import { equal, ok } from "node:assert/strict";
import { join } from "node:path";
import { CLI_PATH, testdata } from "./_run_apr.ts";

Deno.test("apr import with its stdout closed by the reader exits 0 and writes the file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "aprkit-closed-stdout-" });
  try {
    for (const run of [1, 2, 3]) {
      const output = join(dir, `m${run}.apr`);
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", CLI_PATH, "import", testdata("hf/tiny-qwen2"), "-o", output],
        env: { HF_HOME: "/nonexistent/aprkit-test-hf-home", NO_COLOR: "1" },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      // The reader goes away before apr writes its summary line.
      await child.stdout.cancel();
      const [status, stderr] = await Promise.all([
        child.status,
        new Response(child.stderr).text(),
      ]);
      ok(!/Broken pipe|looks like a bug/i.test(stderr), stderr);
      equal(status.code, 0, stderr);
      ok((await Deno.stat(output)).size > 0);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
