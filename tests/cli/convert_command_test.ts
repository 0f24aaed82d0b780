/**
 * `apr convert` and `apr export` as subprocesses: SafeTensors round trips
 * (single file and `--max-shard-size`), GGUF decoded to F32 exactly as
 * llama.cpp does, re-quantization, and their usage errors.
 *
 * @module
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import { formatBytes } from "../../src/cli/format.ts";
import { ggufToHfName } from "../../src/formats/gguf/names.ts";
import { QNAT_KIND } from "../../src/formats/qnat/header.ts";
import { openQnat } from "../../src/formats/qnat/reader.ts";
import { openFileSource } from "../../src/io/file_source.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { permuteQkRows } from "../_qk_rows.ts";
import {
  assertOneLineError,
  DEMO_MODEL,
  exists,
  listDir,
  runApr,
  sha256,
  testdata,
  withTempDir,
} from "./_run_apr.ts";

const Q4_K_M_GGUF = testdata("gguf/tiny-llama-q4_k_m.gguf");

/** name → sha256 of each tensor's raw bytes. */
async function tensorHashes(path: string): Promise<Record<string, string>> {
  const model = await openModel(path);
  try {
    const out: Record<string, string> = {};
    for (const name of model.names()) out[name] = await sha256(await model.tensor(name).bytes());
    return out;
  } finally {
    await model.close();
  }
}

Deno.test("apr export --format safetensors returns the source's tensor bytes, single and sharded", async () => {
  await withTempDir(async (dir) => {
    const apr = `${dir}/demo.apr`;
    equal((await runApr(["import", DEMO_MODEL, "-o", apr, "--quiet"])).code, 0);
    await Deno.mkdir(`${dir}/one`);
    await Deno.mkdir(`${dir}/many`);
    const [single, sharded] = await Promise.all([
      runApr(["export", apr, "--format", "safetensors", "-o", `${dir}/one/model.safetensors`]),
      runApr([
        "export",
        apr,
        "--format",
        "safetensors",
        "-o",
        `${dir}/many/model.safetensors`,
        "--max-shard-size",
        "200KB",
        "--json",
      ]),
    ]);
    equal(single.code, 0, single.stderr);
    equal(sharded.code, 0, sharded.stderr);
    equal(JSON.parse(sharded.stdout).format, "safetensors");
    deepEqual(await listDir(`${dir}/one`), ["model.safetensors"]);
    const shards = await listDir(`${dir}/many`);
    ok(shards.includes("model.safetensors.index.json"), shards.join());
    const shardFiles = shards.filter((n) => n !== "model.safetensors.index.json");
    ok(shardFiles.length >= 3, shards.join());
    for (const n of shardFiles) {
      match(n, new RegExp(`^model-\\d{5}-of-${String(shardFiles.length).padStart(5, "0")}\\.`));
      ok((await Deno.stat(`${dir}/many/${n}`)).size <= 200_000 + 4096, n);
    }
    const expected = await tensorHashes(DEMO_MODEL);
    deepEqual(await tensorHashes(`${dir}/one/model.safetensors`), expected);
    deepEqual(await tensorHashes(`${dir}/many`), expected);
  });
});

Deno.test("apr export --dtype f32 of a Q4_K_M GGUF gives llama.cpp's float32 values", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/decoded.safetensors`;
    const run = await runApr([
      "export",
      Q4_K_M_GGUF,
      "--format",
      "safetensors",
      "--dtype",
      "f32",
      "-o",
      out,
      "--quiet",
    ]);
    equal(run.code, 0, run.stderr);
    const manifest: { tensors: { name: string; f32_sha256: string }[] } = JSON.parse(
      await Deno.readTextFile(testdata("gguf/tiny-llama-q4_k_m.manifest.json")),
    );
    const hashes = await tensorHashes(out);
    equal(Object.keys(hashes).length, manifest.tensors.length);
    // Q/K rows come back in Hugging Face's layout: llama.cpp's values permuted.
    const model = await openModel(out);
    try {
      for (const t of manifest.tensors) {
        const qk = /attn_([qk])\.weight$/.exec(t.name);
        if (qk === null) {
          equal(hashes[ggufToHfName(t.name)], t.f32_sha256, t.name);
          continue;
        }
        const tensor = model.tensor(ggufToHfName(t.name));
        const rows = tensor.info.shape[0]!;
        const back = permuteQkRows(await tensor.bytes(), rows, qk[1] === "q" ? 4 : 2);
        equal(await sha256(back), t.f32_sha256, t.name);
      }
    } finally {
      await model.close();
    }
  });
});

Deno.test("apr export of a GGUF to SafeTensors without --dtype warns about K-quants and writes F32", async () => {
  await withTempDir(async (dir) => {
    const run = await runApr([
      "export",
      Q4_K_M_GGUF,
      "-o",
      `${dir}/out.safetensors`,
      "--json",
    ]);
    equal(run.code, 0, run.stderr);
    deepEqual(JSON.parse(run.stdout).dtypes, { F32: 21 });
    // The warning names the source types, not the F32 they become.
    match(
      run.stderr,
      /^warning: 16 tensor\(s\) of types (Q6_K, Q4_K|Q4_K, Q6_K) have no safetensors type; writing them as F32$/m,
    );
  });
});

Deno.test("apr convert re-quantizes an APR file and round-trips GGUF", async () => {
  await withTempDir(async (dir) => {
    const apr = `${dir}/demo.apr`;
    equal((await runApr(["import", DEMO_MODEL, "-o", apr, "--quiet"])).code, 0);
    const [q4k, gguf] = await Promise.all([
      runApr(["convert", apr, "-o", `${dir}/q4k.apr`, "--quantize", "q4_k", "--json"]),
      runApr(["convert", apr, "-o", `${dir}/demo.gguf`, "--json"]),
    ]);
    equal(q4k.code, 0, q4k.stderr);
    // The demo's rows of 128/192 values are not whole super-blocks: APR's row fallback.
    deepEqual(JSON.parse(q4k.stdout).dtypes, { APR_Q8: 16, F32: 5 });
    equal((await runApr(["validate", `${dir}/q4k.apr`, "--deep"])).code, 0);
    equal(gguf.code, 0, gguf.stderr);
    equal(JSON.parse(gguf.stdout).format, "gguf");
    // GGUF -> APR again: the same values, in Hugging Face's Q/K row layout
    // (rope_type 2: issue 18 item 4), the norms as GGUF holds them (F32).
    const back = await runApr(["import", `${dir}/demo.gguf`, "-o", `${dir}/back.apr`, "--quiet"]);
    equal(back.code, 0, back.stderr);
    const [a, b] = [await openModel(apr), await openModel(`${dir}/back.apr`)];
    try {
      deepEqual(b.names(), a.names());
      equal(b.header.metadata.rope_type, 2);
      for (const name of a.names()) {
        deepEqual(await b.tensor(name).toFloat32(), await a.tensor(name).toFloat32(), name);
      }
    } finally {
      await a.close();
      await b.close();
    }
  });
});

Deno.test("apr convert and export reject bad options with one line and write nothing", async (t) => {
  await withTempDir(async (dir) => {
    const apr = `${dir}/demo.apr`;
    equal((await runApr(["import", DEMO_MODEL, "-o", apr, "--quiet"])).code, 0);
    const cases: { name: string; args: string[]; expect: RegExp[] }[] = [
      {
        name: "unknown format",
        args: ["export", apr, "--format", "onnx", "-o", `${dir}/x.onnx`],
        expect: [/--format "onnx" is not one of/],
      },
      {
        name: "export to APR (apr import/convert write APR)",
        args: ["export", apr, "--format", "apr", "-o", `${dir}/x.apr`],
        expect: [
          /--format "apr" is not one of safetensors, gguf, qnat \(apr import or apr convert/,
        ],
      },
      {
        name: "export with an .apr output",
        args: ["export", apr, "-o", `${dir}/x.apr`],
        expect: [/give --format \(safetensors, gguf, qnat\)/],
      },
      {
        name: "convert without -o asks for the output, not just a format",
        args: ["convert", apr],
        expect: [/^apr: missing -o OUT: the output file, whose extension names the format/],
      },
      {
        name: "export does not quantize",
        args: ["export", apr, "--format", "gguf", "-o", `${dir}/x.gguf`, "--quantize", "q4_k"],
        expect: [/^apr export: unknown option --quantize \(see apr export --help\)$/],
      },
      {
        name: "--max-shard-size for QNAT output",
        args: ["convert", apr, "-o", `${dir}/x.qnat`, "--max-shard-size", "1MB"],
        expect: [/--max-shard-size works for SafeTensors, APR and GGUF output only, not qnat/],
      },
      {
        name: "--max-shard-size not a size",
        args: ["export", apr, "-o", `${dir}/x.safetensors`, "--max-shard-size", "big"],
        expect: [/--max-shard-size/],
      },
      {
        name: "unknown quantization",
        args: ["convert", apr, "-o", `${dir}/x.apr`, "--quantize", "q2"],
        expect: [/--quantize "q2" is not one of/],
      },
    ];
    const runs = await Promise.all(cases.map((c) => runApr(c.args)));
    for (const [i, c] of cases.entries()) {
      await t.step(c.name, () => assertOneLineError(runs[i]!, ...c.expect));
    }
    deepEqual(await listDir(dir), ["demo.apr"]);
    ok(!(await exists(`${dir}/x.safetensors.partial`)));
  });
});

Deno.test("apr export --format qnat reports what it wrote: NF4/F32 counts, section bytes, file size; progress reaches 100%", async () => {
  await withTempDir(async (dir) => {
    const apr = `${dir}/demo.apr`;
    equal((await runApr(["import", DEMO_MODEL, "-o", apr, "--quiet"])).code, 0);
    const out = `${dir}/n.qnat`;
    const json = await runApr(["export", apr, "--format", "qnat", "-o", out, "--json"]);
    equal(json.code, 0, json.stderr);
    const result = JSON.parse(json.stdout);
    const qnat = await openQnat(await openFileSource(out));
    try {
      const nf4 = qnat.tensors.filter((t) => t.stored.kind === QNAT_KIND.NF4).length;
      ok(nf4 > 0 && nf4 < qnat.tensors.length);
      deepEqual(result.dtypes, { NF4: nf4, F32: qnat.tensors.length - nf4 });
      equal(result.tensorBytes, qnat.tensors.reduce((n, t) => n + t.stored.dataSize, 0));
      equal(result.fileBytes, (await Deno.stat(out)).size);
      ok(result.tensorBytes < result.fileBytes);
    } finally {
      await qnat.close();
    }
    const human = await runApr(["export", apr, "--format", "qnat", "-o", `${dir}/h.qnat`]);
    equal(human.code, 0, human.stderr);
    match(
      human.stdout,
      new RegExp(
        `\\(${result.dtypes.NF4} NF4, ${result.dtypes.F32} F32\\), .* of tensor data, ${
          formatBytes(result.fileBytes).replace(".", "\\.")
        } on disk, `,
      ),
    );
    // Q4_K blocks in, NF4 out: the progress counts what is written and ends at 100%.
    const gguf = await runApr(["export", Q4_K_M_GGUF, "--format", "qnat", "-o", `${dir}/q.qnat`], {
      env: { APR_PROGRESS_INTERVAL_MS: "0" },
    });
    equal(gguf.code, 0, gguf.stderr);
    match(gguf.stderr.trimEnd().split("\n").at(-1)!, /^export: 100\.0% /, gguf.stderr);
  });
});
