/**
 * Issue 25 item 4 through the CLI: a GGUF holding every decode-only ggml type
 * (real ggml quantizations, tests/testdata/ggml_types/) is inspected,
 * listed, validated, diffed, copied verbatim to GGUF and imported to APR as
 * F16 with one note.
 *
 * @module
 */

import { deepEqual, equal, match, ok, throws } from "node:assert/strict";
import { runApr, testdata, withTempDir } from "./_run_apr.ts";
import { decodeToFloat32 } from "../../src/quant/decode.ts";
import { encodeFromFloat32 } from "../../src/quant/encode.ts";
import { encodeF16 } from "../../src/quant/f16.ts";
import { openModel } from "../../src/pipeline/open_model.ts";

const FIXTURE = testdata("ggml_types/iquants.gguf");
const TYPES = [
  "IQ2_XXS",
  "IQ2_XS",
  "IQ3_XXS",
  "IQ1_S",
  "IQ4_NL",
  "IQ3_S",
  "IQ2_S",
  "IQ4_XS",
  "IQ1_M",
  "TQ1_0",
  "TQ2_0",
  "MXFP4",
  "NVFP4",
  "Q1_0",
  "Q2_0",
];

Deno.test("apr inspect, tensors --stats and validate --deep read every decode-only ggml type", async () => {
  const inspect = await runApr(["inspect", FIXTURE]);
  equal(inspect.code, 0, inspect.stderr);
  for (const t of TYPES) match(inspect.stdout, new RegExp(`\\b${t}\\b`));
  const tensors = await runApr(["tensors", FIXTURE, "--stats", "--json"]);
  equal(tensors.code, 0, tensors.stderr);
  const rows = JSON.parse(tensors.stdout).tensors as { dtype: string; stats: { nan: number } }[];
  deepEqual(rows.map((r) => r.dtype), [...TYPES, "F32"]);
  ok(rows.every((r) => r.stats.nan === 0));
  const validate = await runApr(["validate", FIXTURE, "--deep"]);
  equal(validate.code, 0, validate.stderr);
  match(validate.stdout, /decode every tensor: 16 tensors/);
});

Deno.test("GGUF → GGUF copies them verbatim; GGUF → APR writes F16 with one note (NVFP4: F32, read back as its checkpoint); diff compares", async () => {
  await withTempDir(async (dir) => {
    const gguf = `${dir}/copy.gguf`;
    const conv = await runApr(["convert", FIXTURE, "-o", gguf]);
    equal(conv.code, 0, conv.stderr);
    const src = await openModel(FIXTURE);
    const out = await openModel(gguf);
    try {
      for (const t of src.header.tensors) {
        equal(out.tensor(t.name).info.dtype, t.dtype);
        deepEqual(await out.tensor(t.name).bytes(), await src.tensor(t.name).bytes(), t.name);
      }
    } finally {
      await out.close();
    }

    const apr = `${dir}/m.apr`;
    const imp = await runApr(["import", FIXTURE, "-o", apr]);
    equal(imp.code, 0, imp.stderr);
    equal(
      (imp.stdout + imp.stderr).trim().split("\n").filter((l) => l.startsWith("note:")).join("\n"),
      `note: 14 tensor(s) of types ${TYPES.filter((t) => t !== "NVFP4").join("/")} ` +
        "(iq2_xxs.weight, iq2_xs.weight, iq3_xxs.weight, …) have no APR type: decoded as ggml " +
        "does and written as F16",
    );
    const aprModel = await openModel(apr);
    try {
      for (const t of src.header.tensors) {
        const stored = aprModel.tensor(t.name);
        if (t.dtype === "F32") continue;
        if (t.dtype === "NVFP4") {
          // Read back as an NVFP4 checkpoint is (times its .scale, absent here: 1), in F32.
          equal(stored.info.dtype, "F32", t.name);
          const values = decodeToFloat32(t.dtype, await src.tensor(t.name).bytes(), t.shape);
          deepEqual(await stored.bytes(), new Uint8Array(values.buffer), t.name);
          continue;
        }
        equal(stored.info.dtype, "F16", t.name);
        // The F16 bytes are the f16 rounding of ggml's values.
        const want = encodeF16(decodeToFloat32(t.dtype, await src.tensor(t.name).bytes(), t.shape));
        deepEqual(await stored.bytes(), want, t.name);
      }
    } finally {
      await aprModel.close();
      await src.close();
    }

    const diff = await runApr(["diff", FIXTURE, apr, "--tolerance", "0.0001", "--json"]);
    equal(diff.code, 0, diff.stderr);
    const d = JSON.parse(diff.stdout) as {
      tensors: { name: string; difference?: { maxAbsDiff: number } }[];
    };
    equal(d.tensors.length, 16);
    // Only the F16 rounding separates them (values are at most ~0.2).
    for (const t of d.tensors) {
      const max = t.difference?.maxAbsDiff ?? 0;
      ok(max < 1e-4, `${t.name}: ${max}`);
    }
  });
});

Deno.test("quantizing to a decode-only type is refused, naming why", () => {
  throws(
    () => encodeFromFloat32("NVFP4", new Float32Array(256), [256]),
    /Cannot encode NVFP4: aprkit decodes this ggml type but has no encoder; expected one of/,
  );
  // IQ2_XXS has an encoder now, which (as ggml's) needs importance weights.
  throws(
    () => encodeFromFloat32("IQ2_XXS", new Float32Array(256), [256]),
    /Cannot encode IQ2_XXS without importance weights/,
  );
});
