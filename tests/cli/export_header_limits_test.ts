/**
 * Issue 9: an export whose header its readers would refuse is refused before
 * anything is written, instead of leaving a file nobody can open.
 */
import assert from "node:assert/strict";
import { encodeApr } from "../../src/formats/apr/encode_apr.ts";
import { assertOneLineError, listDir, runApr, withTempDir } from "./_run_apr.ts";

/** ~101 MB of metadata: within APR's 128 MiB, over SafeTensors' 100,000,000-byte header cap. */
const BIG_METADATA = "m".repeat(101_000_000);

Deno.test("apr export to SafeTensors refuses a header over 100,000,000 bytes and leaves nothing", async () => {
  await withTempDir(async (dir) => {
    const source = `${dir}/big.apr`;
    await Deno.writeFile(
      source,
      encodeApr({
        metadata: { model_type: "test", source_metadata: { notes: BIG_METADATA } },
        tensors: [{ name: "w", dtype: "F32", shape: [4], data: new Uint8Array(16) }],
      }),
    );
    const run = await runApr([
      "export",
      source,
      "--format",
      "safetensors",
      "-o",
      `${dir}/out.safetensors`,
    ]);
    assertOneLineError(
      run,
      "SafeTensors",
      /out\.safetensors.*would be 1010001\d\d bytes/,
      "100000000",
    );
    assert.deepEqual(await listDir(dir), ["big.apr"]);
  });
});

/** JSON nested `depth` objects deep: `{"a":{"a":…{}}}`. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}

Deno.test("apr export to QNAT refuses metadata its reader would refuse (one level deeper than the APR's)", async () => {
  await withTempDir(async (dir) => {
    const source = `${dir}/deep.apr`;
    // 63 levels inside the APR metadata object: readable as APR (64 levels);
    // QNAT puts the model's metadata one level down, at 65.
    await Deno.writeFile(
      source,
      encodeApr({
        metadata: { model_type: "test", deep: nested(63) },
        tensors: [{ name: "w", dtype: "F32", shape: [64], data: new Uint8Array(256) }],
      }),
    );
    const inspect = await runApr(["inspect", source]);
    assert.equal(inspect.code, 0, inspect.stderr);
    const run = await runApr(["export", source, "--format", "qnat", "-o", `${dir}/out.qnat`]);
    assertOneLineError(run, "QNAT", "64 levels");
    assert.deepEqual(await listDir(dir), ["deep.apr"]);
  });
});
