/**
 * A green run of the suite looks green: tests whose code under test makes
 * Deno print errors on purpose (a worker module that cannot load) capture
 * that output instead of letting it reach the test runner's console.
 *
 * @module
 */

import { equal, ok } from "node:assert/strict";

Deno.test("the encoder-pool tests pass without printing errors", async () => {
  const run = await new Deno.Command(Deno.execPath(), {
    args: [
      "test",
      "--allow-all",
      new URL("./quant/encoder_pool_test.ts", import.meta.url).pathname,
    ],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  const output = text.decode(run.stdout) + text.decode(run.stderr);
  equal(run.code, 0, output);
  for (const noise of [/\berror\b/i, /Uncaught/, /TS\d{4}/, /Module not found/]) {
    ok(!noise.test(output), `printed ${noise}:\n${output}`);
  }
});
