/**
 * `apr diff` as a subprocess: a GGUF and its import compare equal; a
 * quantized import differs within tolerance; tensors missing on one side.
 *
 * @module
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import {
  assertOneLineError,
  DEMO_MODEL,
  f32Safetensors,
  lines,
  noise,
  runApr,
  testdata,
  withTempDir,
} from "./_run_apr.ts";

interface DiffRow {
  name: string;
  status: string;
  difference?: { maxAbsDiff: number; rmse: number; nanMismatches: number };
}

Deno.test("apr diff of a GGUF and its APR import reports zero difference", async () => {
  await withTempDir(async (dir) => {
    const gguf = testdata("gguf/tiny-llama-q4_k_m.gguf");
    const apr = `${dir}/import.apr`;
    equal((await runApr(["import", gguf, "-o", apr, "--quiet"])).code, 0);
    const [json, text] = await Promise.all([
      runApr(["diff", gguf, apr, "--json"]),
      runApr(["diff", gguf, apr]),
    ]);
    equal(json.code, 0, json.stderr);
    const result = JSON.parse(json.stdout);
    equal(result.identical, true);
    equal(result.tensors.length, 21);
    for (const row of result.tensors as DiffRow[]) {
      equal(row.status, "same", row.name);
      equal(row.difference!.maxAbsDiff, 0, row.name);
      equal(row.difference!.rmse, 0, row.name);
    }
    equal(text.code, 0);
    match(lines(text.stdout).at(-1)!, /^21 tensors: 21 same$/);
  });
});

Deno.test("apr diff compares llama's Q/K rows in one layout: an HF import against its GGUF export is the same", async () => {
  await withTempDir(async (dir) => {
    const apr = `${dir}/hf.apr`;
    const gguf = `${dir}/hf.gguf`;
    equal((await runApr(["import", DEMO_MODEL, "-o", apr, "--quiet"])).code, 0);
    // GGUF gets llama.cpp's interleaved rows; the APR keeps Hugging Face's.
    equal((await runApr(["export", apr, "--format", "gguf", "-o", gguf, "--quiet"])).code, 0);
    for (const [x, y] of [[apr, gguf], [gguf, apr], [gguf, DEMO_MODEL]]) {
      const run = await runApr(["diff", x!, y!, "--json"]);
      equal(run.code, 0, run.stdout);
      equal(JSON.parse(run.stdout).identical, true);
    }
  });
});

Deno.test("apr diff exits 4 (not 1, a bug) on differences and honours --tolerance and --filter", async () => {
  await withTempDir(async (dir) => {
    const q8 = `${dir}/q8.apr`;
    equal((await runApr(["import", DEMO_MODEL, "-o", q8, "--quantize", "q8", "--quiet"])).code, 0);
    const [strict, tolerant, filtered] = await Promise.all([
      runApr(["diff", DEMO_MODEL, q8, "--json"]),
      runApr(["diff", DEMO_MODEL, q8, "--tolerance", "0.01", "--json"]),
      runApr(["diff", DEMO_MODEL, q8, "--filter", "norm", "--json"]),
    ]);
    equal(strict.code, 4, strict.stderr);
    const rows: DiffRow[] = JSON.parse(strict.stdout).tensors;
    // 15 weight matrices and the import's lm_head (compared with the source's
    // tied embedding) are quantized; the 5 norms are not.
    equal(rows.filter((r) => r.status === "different").length, 16);
    equal(rows.filter((r) => r.status === "same").length, 5);
    ok(rows.some((r) => r.name === "lm_head.weight" && r.status === "different"));
    for (const r of rows.filter((r) => r.status === "different")) {
      ok(r.difference!.maxAbsDiff > 0 && r.difference!.maxAbsDiff < 0.01, JSON.stringify(r));
      ok(r.difference!.rmse <= r.difference!.maxAbsDiff);
    }
    equal(tolerant.code, 0, tolerant.stdout);
    equal(JSON.parse(tolerant.stdout).identical, true);
    equal(filtered.code, 0);
    equal(JSON.parse(filtered.stdout).tensors.length, 5);
  });
});

Deno.test("apr diff lists tensors only one side has and shape differences", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeFile(
      `${dir}/a.safetensors`,
      f32Safetensors({ both: noise(8, 1), onlyA: noise(4, 2), shaped: noise(6, 3) }),
    );
    await Deno.writeFile(
      `${dir}/b.safetensors`,
      f32Safetensors({ both: noise(8, 1), onlyB: noise(4, 2), shaped: noise(4, 3) }),
    );
    const run = await runApr(["diff", `${dir}/a.safetensors`, `${dir}/b.safetensors`, "--json"]);
    equal(run.code, 4, run.stderr);
    const rows: DiffRow[] = JSON.parse(run.stdout).tensors;
    deepEqual(
      Object.fromEntries(rows.map((r) => [r.name, r.status])),
      { both: "same", onlyA: "only in A", onlyB: "only in B", shaped: "shape differs" },
    );
  });
});

Deno.test("apr diff rejects a missing file and bad flags with exit 2 and one line", async (t) => {
  const cases: { name: string; args: string[]; expect: (RegExp | string)[] }[] = [
    {
      name: "missing file",
      args: ["diff", DEMO_MODEL, "/nonexistent/b.apr"],
      expect: ['"/nonexistent/b.apr"', /no such file/],
    },
    {
      name: "bad --filter",
      args: ["diff", DEMO_MODEL, DEMO_MODEL, "--filter", "("],
      expect: [/--filter "\(" is not a valid regular expression/],
    },
    {
      name: "--tolerance not a number",
      args: ["diff", DEMO_MODEL, DEMO_MODEL, "--tolerance", "abc"],
      expect: [/--tolerance must be a number >= 0, got "abc"/],
    },
    {
      name: "negative --tolerance",
      args: ["diff", DEMO_MODEL, DEMO_MODEL, "--tolerance=-1"],
      expect: [/--tolerance must be a number >= 0/],
    },
  ];
  const runs = await Promise.all(cases.map((c) => runApr(c.args)));
  for (const [i, c] of cases.entries()) {
    await t.step(c.name, () => assertOneLineError(runs[i]!, ...c.expect));
  }
});
