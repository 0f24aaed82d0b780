/**
 * `apr import` as a subprocess: summary and `--json`, default output name,
 * an existing output without `--force`, quantization, and progress on stderr
 * (`--quiet`, plain lines when stderr is not a terminal).
 *
 * @module
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import {
  assertOneLineError,
  DEMO_MODEL,
  exists,
  lines,
  listDir,
  runApr,
  sha256,
  testdata,
  withTempDir,
} from "./_run_apr.ts";

Deno.test("apr import prints a summary, or the result as JSON", async () => {
  await withTempDir(async (dir) => {
    const [text, json] = await Promise.all([
      runApr(["import", DEMO_MODEL, "-o", `${dir}/a.apr`]),
      runApr(["import", DEMO_MODEL, "-o", `${dir}/b.apr`, "--json"]),
    ]);
    equal(text.code, 0, text.stderr);
    match(
      text.stdout,
      new RegExp(`^wrote ${dir}/a\\.apr: apr, 21 tensors \\(21 BF16\\), 311,936 parameters, `),
    );
    // The demo ties its embeddings: one more line says the lm_head copy was added, and why.
    equal(lines(text.stdout).length, 2);
    match(
      lines(text.stdout)[1]!,
      /^note: adding lm_head\.weight as a copy of model\.embed_tokens\.weight \(.*tie_word_embeddings/,
    );
    equal(json.code, 0, json.stderr);
    const result = JSON.parse(json.stdout);
    equal(result.output, `${dir}/b.apr`);
    equal(result.format, "apr");
    equal(result.sourceFormat, "safetensors");
    // 20 tensors of the source plus the explicit lm_head of its tied embedding.
    equal(result.tensors, 21);
    equal(result.parameters, 311_936);
    deepEqual(result.dtypes, { BF16: 21 });
    equal(result.resumedTensors, 0);
    equal(await sha256(`${dir}/a.apr`), await sha256(`${dir}/b.apr`));
  });
});

Deno.test("apr import without -o writes NAME.apr in the working directory", async () => {
  await withTempDir(async (dir) => {
    const [folder, gguf] = await Promise.all([
      runApr(["import", `${DEMO_MODEL}/`, "--quiet"], { cwd: dir }),
      runApr(["import", testdata("gguf/tiny-llama-q8_0.gguf"), "--quiet"], { cwd: dir }),
    ]);
    equal(folder.code, 0, folder.stderr);
    equal(gguf.code, 0, gguf.stderr);
    deepEqual(await listDir(dir), ["tiny-llama-q8_0.apr", "tiny-llama.apr"]);
  });
});

Deno.test("apr import leaves an existing output alone without --force", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/model.apr`;
    await Deno.writeTextFile(out, "precious\n");
    const run = await runApr(["import", DEMO_MODEL, "-o", out]);
    assertOneLineError(run, `"${out}"`, /exists/, /--force/);
    equal(await Deno.readTextFile(out), "precious\n");
    deepEqual(await listDir(dir), ["model.apr"]);
    const forced = await runApr(["import", DEMO_MODEL, "-o", out, "--force", "--quiet"]);
    equal(forced.code, 0, forced.stderr);
    equal((await runApr(["validate", out])).code, 0);
    deepEqual(await listDir(dir), ["model.apr"]);
  });
});

Deno.test("apr import --quantize q8 quantizes the weight matrices only", async () => {
  await withTempDir(async (dir) => {
    const run = await runApr([
      "import",
      DEMO_MODEL,
      "-o",
      `${dir}/q8.apr`,
      "--quantize",
      "q8",
      "--json",
    ]);
    equal(run.code, 0, run.stderr);
    // Norms stay float, as F32 (every APR reader decodes it; BF16 not).
    deepEqual(JSON.parse(run.stdout).dtypes, { APR_Q8: 16, F32: 5 });
    const all = await runApr([
      "import",
      DEMO_MODEL,
      "-o",
      `${dir}/q8-all.apr`,
      "--quantize",
      "q8",
      "--quantize-all",
      "--json",
    ]);
    equal(all.code, 0, all.stderr);
    deepEqual(JSON.parse(all.stdout).dtypes, { APR_Q8: 21 });
    const inspect = JSON.parse((await runApr(["inspect", `${dir}/q8.apr`, "--json"])).stdout);
    equal(inspect.metadata.quantization.quant_type, "q8");
  });
});

Deno.test("apr import --quiet prints nothing at all", async () => {
  await withTempDir(async (dir) => {
    const run = await runApr(["import", DEMO_MODEL, "-o", `${dir}/q.apr`, "--quiet"], {
      env: { APR_PROGRESS_INTERVAL_MS: "0" },
    });
    equal(run.code, 0);
    equal(run.stderr, "");
    equal(run.stdout, "");
    ok(await exists(`${dir}/q.apr`));
  });
});

Deno.test("apr import shows plain progress lines on a non-terminal stderr", async () => {
  await withTempDir(async (dir) => {
    const [every, rare] = await Promise.all([
      runApr(["import", DEMO_MODEL, "-o", `${dir}/p.apr`], {
        env: { APR_PROGRESS_INTERVAL_MS: "0" },
      }),
      runApr(["import", DEMO_MODEL, "-o", `${dir}/r.apr`], {
        env: { APR_PROGRESS_INTERVAL_MS: "3600000" },
      }),
    ]);
    equal(every.code, 0, every.stderr);
    // Kept loose (units, eta forms) but exact in shape; on failure the whole stderr is shown.
    const plain =
      /^write: \d+\.\d% [\d.]+ [KMG]?i?B\/[\d.]+ [KMG]?i?B \d+\/21 [\d.]+ [KMG]?i?B\/s elapsed \d+:\d\d eta (\d+:\d\d|--:--)/;
    // One warning besides progress: the demo model keeps its BF16 tensors.
    const bf16 = /^warning: 21 tensor\(s\) are written as BF16 \(APR dtype 30\).*--quantize f16/;
    const all = lines(every.stderr);
    equal(all.filter((l) => bf16.test(l)).length, 1, every.stderr);
    const progress = all.filter((l) => !bf16.test(l));
    // Interval 0: a line per update (21 tensors), plus the final one.
    ok(progress.length > 21, every.stderr);
    for (const l of progress) match(l, plain, every.stderr);
    ok(!every.stderr.includes("\x1b["), "no terminal escapes when stderr is not a TTY");
    match(progress.at(-1)!, /^write: 100\.0% .* 21\/21 /, every.stderr);
    // Work shorter than the interval logs no progress line at all (no "0.0% … eta --:--").
    equal(rare.code, 0, rare.stderr);
    deepEqual(lines(rare.stderr).length, 1, rare.stderr);
    match(rare.stderr, bf16);
    match(rare.stdout, /^wrote /);
  });
});

Deno.test("apr import --threads sets the quantization workers without changing the bytes", async () => {
  await withTempDir(async (dir) => {
    const runs = await Promise.all(
      ["0", "2"].map((n) =>
        runApr([
          "import",
          DEMO_MODEL,
          "-o",
          `${dir}/t${n}.apr`,
          "--quantize",
          "q4_k",
          "--quantize-all",
          "--threads",
          n,
          "--quiet",
        ])
      ),
    );
    for (const run of runs) equal(run.code, 0, run.stderr);
    equal(await sha256(`${dir}/t0.apr`), await sha256(`${dir}/t2.apr`));
    const bad = await runApr(["import", DEMO_MODEL, "-o", `${dir}/bad.apr`, "--threads", "-1"]);
    equal(bad.code, 2);
    match(bad.stderr, /--threads/);
  });
});

Deno.test("APR_KERNELS=typescript imports with the same bytes; a bad value is one line, exit 2", async () => {
  await withTempDir(async (dir) => {
    const args = (out: string) => [
      "import",
      DEMO_MODEL,
      "-o",
      `${dir}/${out}`,
      "--quantize",
      "q4_k",
      "--quantize-all",
      "--quiet",
    ];
    const [wasm, ts] = await Promise.all([
      runApr(args("wasm.apr")),
      runApr(args("ts.apr"), { env: { APR_KERNELS: "typescript" } }),
    ]);
    equal(wasm.code, 0, wasm.stderr);
    equal(ts.code, 0, ts.stderr);
    equal(await sha256(`${dir}/wasm.apr`), await sha256(`${dir}/ts.apr`));
    const bad = await runApr(args("bad.apr"), { env: { APR_KERNELS: "simd" } });
    assertOneLineError(bad, /APR_KERNELS is "simd": expected wasm or typescript/);
    deepEqual(await listDir(dir), ["ts.apr", "wasm.apr"]);
  });
});

Deno.test("apr import --quantize q4_k notes the row fallback; --row-fallback takes q8, f16, padded", async () => {
  await withTempDir(async (dir) => {
    const run = await runApr(["import", DEMO_MODEL, "-o", `${dir}/q.apr`, "--quantize", "q4_k"]);
    equal(run.code, 0, run.stderr);
    const notes = lines(run.stdout).filter((l) => l.startsWith("note: "));
    equal(notes.length, 2, run.stdout);
    match(
      notes[1]!,
      /^note: 16 tensor\(s\) have rows that are not whole 256-value super-blocks .* written as APR_Q8, .*\(the --row-fallback option; /,
    );
    const f16 = await runApr([
      "import",
      DEMO_MODEL,
      "-o",
      `${dir}/f.apr`,
      "--quantize",
      "q4_k",
      "--row-fallback",
      "F16",
      "--json",
    ]);
    equal(f16.code, 0, f16.stderr);
    deepEqual(JSON.parse(f16.stdout).dtypes, { F16: 16, F32: 5 });

    const bad = await runApr(["import", DEMO_MODEL, "-o", `${dir}/x.apr`, "--row-fallback", "q4"]);
    assertOneLineError(bad, /--row-fallback "q4" is not one of q8, f16, padded/);
    const gguf = await runApr([
      "convert",
      DEMO_MODEL,
      "-o",
      `${dir}/x.gguf`,
      "--quantize",
      "q4_k",
      "--row-fallback",
      "f16",
    ]);
    assertOneLineError(gguf, /--row-fallback works for APR output only, not gguf/);
    deepEqual(await listDir(dir), ["f.apr", "q.apr"]);
  });
});

Deno.test("apr import --help says which readers load --compress lz4 files", async () => {
  const help = await runApr(["import", "--help"]);
  equal(help.code, 0);
  match(
    help.stdout.replace(/\s+/g, " "),
    /--compress lz4 .*Only realizar's AprV2Model built with its non-default apr-compression feature loads it; aprender's reader and realizar's transformer loader \(its run paths\) do not, in any build/,
  );
});
