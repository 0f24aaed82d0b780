/**
 * `--row-fallback padded` is said at import and in `apr validate` (issue 34
 * §2): the import printed no note and `validate` called the file clean,
 * though aprender's reader and realizar's `get_tensor_f32` decode its
 * row-padded K-quant tensors wrong (tests/interop/apr_readers_test.ts
 * measures which readers misread them with each reader's own rule).
 *
 * @module
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { type Schema, validateJson } from "../_json_schema.ts";
import { DEMO_MODEL, runApr, withTempDir } from "./_run_apr.ts";

const SCHEMA: Schema = JSON.parse(
  await Deno.readTextFile(new URL("../../docs/apr-json.schema.json", import.meta.url)),
);

Deno.test("apr import --row-fallback padded and apr validate name the readers that misread the file", async () => {
  await withTempDir(async (dir) => {
    const padded = join(dir, "padded.apr");
    const made = await runApr([
      "import",
      DEMO_MODEL,
      "-o",
      padded,
      "--quantize",
      "q4_k",
      "--row-fallback",
      "padded",
    ]);
    equal(made.code, 0, made.stderr);
    match(
      made.stdout,
      /note: 16 K-quant tensor\(s\) have rows padded .* realizar's get_tensor_f32 and aprender's get_tensor_as_f32 decode them wrong/,
    );

    const text = await runApr(["validate", padded]);
    equal(text.code, 0, text.stderr);
    match(text.stdout, /note: 16 K-quant tensor\(s\) have rows padded/);
    match(text.stdout, /aprender's get_tensor_as_f32 +reads the rows as one flat run/);
    match(text.stdout, /valid apr file .*; 16 row-padded tensor\(s\) some readers decode wrong/);

    const json = await runApr(["validate", padded, "--json"]);
    const doc = JSON.parse(json.stdout) as {
      rowPadded?: { tensors: string[]; readers: { reader: string; decodes: boolean }[] };
    };
    deepEqual(validateJson(SCHEMA, doc), []);
    equal(doc.rowPadded?.tensors.length, 16);
    deepEqual(
      doc.rowPadded?.readers.filter((r) => !r.decodes).map((r) => r.reader),
      ["realizar's get_tensor_f32", "aprender's get_tensor_as_f32"],
    );

    // The default fallback (APR_Q8) is read alike by every reader: nothing to say.
    const plain = join(dir, "q8.apr");
    equal((await runApr(["import", DEMO_MODEL, "-o", plain, "--quantize", "q4_k"])).code, 0);
    const clean = await runApr(["validate", plain, "--json"]);
    ok(!("rowPadded" in JSON.parse(clean.stdout)), clean.stdout);
  });
});
