/**
 * `apr convert` / `apr import` with llama-quantize's presets and `--imatrix`
 * as subprocesses: one pass from a Hugging Face checkpoint to llama-quantize's
 * bytes, and one clear line (exit 2) for every bad input.
 *
 * @module
 */

import { deepEqual, equal, ok } from "node:assert/strict";
import { openModel } from "../../src/pipeline/open_model.ts";
import { assertOneLineError, listDir, runApr, sha256, testdata, withTempDir } from "./_run_apr.ts";

const QWEN = testdata("hf/tiny-qwen2");
const IMATRIX = testdata("gguf/tiny-qwen2-imatrix.dat");

/** GGUF name → sha256 and type of each tensor. */
async function tensorTable(path: string): Promise<Record<string, string>> {
  const model = await openModel(path, { keepNames: true });
  try {
    const out: Record<string, string> = {};
    for (const t of model.header.tensors) {
      out[t.name] = `${t.dtype} ${await sha256(await model.tensor(t.name).bytes())}`;
    }
    return out;
  } finally {
    await model.close();
  }
}

Deno.test("apr convert --quantize Q4_K_M --imatrix (any case) writes llama-quantize's file in one pass", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/m.gguf`;
    const run = await runApr([
      "convert",
      QWEN,
      "-o",
      out,
      "--quantize",
      "Q4_K_M",
      "--imatrix",
      IMATRIX,
      "--json",
    ]);
    equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout);
    deepEqual(summary.dtypes, { F32: 11, Q4_K: 12, Q6_K: 3 });
    deepEqual(
      await tensorTable(out),
      await tensorTable(testdata("gguf/tiny-qwen2-Q4_K_M-imatrix.gguf")),
    );
  });
});

Deno.test("apr import --quantize q4_k_m writes APR's mapping of the preset", async () => {
  await withTempDir(async (dir) => {
    const run = await runApr([
      "import",
      QWEN,
      "-o",
      `${dir}/m.apr`,
      "--quantize",
      "q4_k_m",
      "--json",
    ]);
    equal(run.code, 0, run.stderr);
    // Tied: the embedding is the output, Q6_K as llama-quantize makes it, and
    // so is its APR copy (lm_head).
    deepEqual(JSON.parse(run.stdout).dtypes, { F32: 11, Q4_K: 12, Q6_K: 4 });
  });
});

Deno.test("apr convert and import reject bad presets and importance matrices with one line and write nothing", async (t) => {
  await withTempDir(async (dir) => {
    const truncated = `${dir}/truncated.dat`;
    await Deno.writeFile(truncated, (await Deno.readFile(IMATRIX)).subarray(0, 1000));
    const wrongSize = `${dir}/wrong.dat`;
    {
      // One entry, blk.0.ffn_down.weight, with 256 values (the tensor has 512 columns).
      const name = new TextEncoder().encode("blk.0.ffn_down.weight");
      const b = new DataView(new ArrayBuffer(4 + 4 + name.length + 8 + 4 * 256));
      b.setInt32(0, 1, true);
      b.setInt32(4, name.length, true);
      new Uint8Array(b.buffer).set(name, 8);
      b.setInt32(8 + name.length, 1, true);
      b.setInt32(12 + name.length, 256, true);
      for (let i = 0; i < 256; i++) b.setFloat32(16 + name.length + 4 * i, 1, true);
      await Deno.writeFile(wrongSize, new Uint8Array(b.buffer));
    }
    const cases: { name: string; args: string[]; expect: (RegExp | string)[] }[] = [
      {
        name: "q8_0 for APR",
        args: ["import", QWEN, "-o", `${dir}/x.apr`, "--quantize", "Q8_0"],
        expect: [/q8_0 works for GGUF output only/],
      },
      {
        name: "a preset for SafeTensors",
        args: ["convert", QWEN, "-o", `${dir}/x.safetensors`, "--quantize", "q4_k_m"],
        expect: [/works for GGUF and APR output, not safetensors/],
      },
      {
        name: "--imatrix without a K-quant",
        args: ["convert", QWEN, "-o", `${dir}/x.gguf`, "--imatrix", IMATRIX],
        expect: [/--imatrix needs a K-quant --quantize/],
      },
      {
        name: "a missing imatrix",
        args: [
          "convert",
          QWEN,
          "-o",
          `${dir}/x.gguf`,
          "--quantize",
          "q4_k_m",
          "--imatrix",
          `${dir}/no.dat`,
        ],
        expect: [`${dir}/no.dat`, /no such file/],
      },
      {
        name: "a truncated imatrix",
        args: [
          "convert",
          QWEN,
          "-o",
          `${dir}/x.gguf`,
          "--quantize",
          "q4_k_m",
          "--imatrix",
          truncated,
        ],
        expect: [`"${truncated}"`, /declares \d+ values/],
      },
      {
        name: "an imatrix entry of the wrong size",
        args: [
          "convert",
          QWEN,
          "-o",
          `${dir}/x.gguf`,
          "--quantize",
          "q4_k_m",
          "--imatrix",
          wrongSize,
        ],
        expect: [
          `"${wrongSize}"`,
          /size 256 is different from tensor size 512 for blk\.0\.ffn_down/,
        ],
      },
    ];
    const runs = await Promise.all(cases.map((c) => runApr(c.args)));
    for (const [i, c] of cases.entries()) {
      await t.step(c.name, () => assertOneLineError(runs[i]!, ...c.expect));
    }
    deepEqual(await listDir(dir), ["truncated.dat", "wrong.dat"]);
  });
});

Deno.test("apr convert --help explains the presets and --imatrix with an example", async () => {
  const run = await runApr(["convert", "--help"]);
  equal(run.code, 0);
  ok(/--imatrix FILE/.test(run.stdout), run.stdout);
  ok(/q4_k_m/.test(run.stdout) && /--quantize Q4_K_M/.test(run.stdout));
});
