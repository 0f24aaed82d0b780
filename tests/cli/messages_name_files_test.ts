/**
 * Every refusal names a file (issue 20 item 8): what a converter or writer
 * cannot do with one tensor or value is said with the source and the output,
 * and a sharded-APR manifest that is not UTF-8 is bad input in one line, not
 * "this looks like a bug".
 */

import { equal } from "node:assert/strict";
import { join } from "node:path";
import { encodeSafetensors } from "../../src/formats/safetensors/encode.ts";
import { assertOneLineError, DEMO_MODEL, exists, runApr, withTempDir } from "./_run_apr.ts";

Deno.test("a tensor the target cannot hold: the line names the source and the output", async () => {
  await withTempDir(async (dir) => {
    const source = join(dir, "b.safetensors");
    await Deno.writeFile(
      source,
      encodeSafetensors({
        tensors: [{ name: "B", dtype: "BOOL", shape: [4], data: new Uint8Array(4) }],
      }),
    );
    const out = join(dir, "b.gguf");
    assertOneLineError(
      await runApr(["convert", source, "-o", out]),
      `"${source}"`,
      `"${out}"`,
      /cannot convert tensor "B": BOOL has no float form/,
    );
    equal(await exists(out), false);
  });
});

Deno.test("a QNAT write limit: the line names the source and the output", async () => {
  await withTempDir(async (dir) => {
    const source = join(dir, "n.safetensors");
    const name = "n".repeat(300); // QNAT names hold at most 256 bytes
    await Deno.writeFile(
      source,
      encodeSafetensors({ tensors: [{ name, dtype: "F32", shape: [1], data: new Uint8Array(4) }] }),
    );
    const out = join(dir, "n.qnat");
    assertOneLineError(
      await runApr(["convert", source, "-o", out]),
      `"${source}"`,
      `"${out}"`,
      /is 300 UTF-8 bytes, expected 1 to 256/,
    );
    equal(await exists(out), false);
  });
});

Deno.test("a sharded-APR manifest that is not UTF-8: exit 2, one line naming it", async () => {
  await withTempDir(async (dir) => {
    const set = join(dir, "m.apr");
    const made = await runApr(["import", DEMO_MODEL, "-o", set, "--max-shard-size", "200KB"]);
    equal(made.code, 0, made.stderr);
    const manifest = join(dir, "m.apr.manifest.json");
    const bytes = await Deno.readFile(manifest);
    bytes[20] = 0xff; // not UTF-8 anywhere
    await Deno.writeFile(manifest, bytes);
    for (const args of [["inspect", manifest], ["export", manifest, "-o", join(dir, "x.gguf")]]) {
      assertOneLineError(await runApr(args), `"${manifest}"`, /not valid UTF-8/);
    }
    // validate reports on stdout (FAIL …) and exits 2, without a bug report.
    const checked = await runApr(["validate", "--deep", manifest]);
    equal(checked.code, 2, checked.stderr);
    equal(checked.stderr.includes("looks like a bug"), false, checked.stderr);
  });
});
