/**
 * NVFP4 checkpoints (ModelOpt's and compressed-tensors') under llama-quantize's
 * file types (src/pipeline/kept_block_targets.ts), judged by llama-quantize's
 * own files of llama.cpp's converter output (`llama_quantize.json` beside
 * each fixture, made by `tests/testdata/hf/quantized/make_llama_quantize.py`):
 * plain llama-quantize refuses them ("requantizing from type nvfp4 is
 * disabled"); aprkit keeps the NVFP4 weights, equal sha256 for sha256 to
 * llama-quantize's file with `--tensor-type NAME=nvfp4` for each, and says so
 * in one note quoting that refusal; `--allow-requantize` equals llama-quantize
 * `--allow-requantize` (the weights quantized again, their `.scale` kept),
 * with no note — q8_0 too, which without it is the converter's `--outtype
 * q8_0` (checkpoint_test.ts). The single type q4_k keeps them too, in a note naming
 * `--quantize q4_k_m --pure`, whose file is compared here.
 *
 * @module
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { runApr, testdata, withTempDir } from "../cli/_run_apr.ts";
import {
  fail,
  fileDifference,
  ggufDescription,
  type GgufManifest,
  manifestDifferences,
} from "./_families.ts";

/** One llama-quantize run of `llama_quantize.json`. */
interface QuantizeRun {
  ftype: string;
  /** Its flags; `--tensor-type NVFP4=nvfp4` stands for one `^NAME$=nvfp4` per NVFP4 weight. */
  flags: string[];
  refused?: string;
  gguf?: GgufManifest;
}

const KEEP = "--tensor-type NVFP4=nvfp4";

for (
  const name of [
    "modelopt-nvfp4",
    "modelopt-mixed",
    "ct-nvfp4",
    "modelopt-nvfp4-moe",
    "modelopt-nvfp4-nemotron-h",
    "modelopt-nvfp4-nemotron-h-latent",
  ]
) {
  const source = testdata(`hf/quantized/${name}`);
  const read = async () =>
    JSON.parse(await Deno.readTextFile(`${source}/llama_quantize.json`)) as {
      nvfp4_tensors: string[];
      runs: QuantizeRun[];
    };

  Deno.test(`NVFP4 checkpoint ${name}: llama-quantize's files of the converter's, sha256 for sha256 (NVFP4 kept as --tensor-type keeps them, in one note; --allow-requantize quantizes them again)`, async (t) => {
    const { nvfp4_tensors: kept, runs } = await read();
    // Plain llama-quantize refuses: what aprkit's note quotes.
    const refusals = runs.filter((r) => r.refused !== undefined);
    assert.deepEqual(refusals.map((r) => r.ftype), ["Q4_K_M", "MXFP4_MOE"]);
    for (const r of refusals) assert.equal(r.refused, "requantizing from type nvfp4 is disabled");
    const written = runs.filter((r) => r.gguf !== undefined);
    assert.equal(written.length, 9);
    await withTempDir(async (dir) => {
      for (const run of written) {
        const label = [...run.flags, run.ftype].join(" ");
        await t.step(label, async () => {
          const out = `${dir}/out.gguf`;
          const notes: string[] = [];
          await convertModel(source, out, {
            quantize: run.ftype.toLowerCase() as "q4_k_m",
            ...(run.flags.includes("--pure") ? { pure: true } : {}),
            ...(run.flags.includes("--allow-requantize") ? { allowRequantize: true } : {}),
            force: true,
            onNote: (n) => notes.push(n),
          });
          const mine = await ggufDescription(out);
          const nvfp4 = mine.tensors.filter((x) => x.type === "NVFP4").map((x) => x.name);
          const keeps = run.flags.includes(KEEP);
          assert.deepEqual(nvfp4.sort(), keeps ? [...kept].sort() : []);
          fail(`${name} ${label}`, manifestDifferences(mine, run.gguf!));
          fail(`${name} ${label}`, await fileDifference(out, run.gguf!));
          const said = notes.filter((n) => n.includes("NVFP4 weights stay NVFP4"));
          assert.equal(said.length, keeps ? 1 : 0, notes.join("\n"));
          if (keeps) {
            assert.ok(said[0]!.includes(`"${refusals[0]!.refused}"`), said[0]);
            assert.match(said[0]!, /--tensor-type NAME=nvfp4 for each/);
          }
        });
      }
    });
  });

  Deno.test(`NVFP4 checkpoint ${name}: the single type q4_k keeps the NVFP4 weights as the converter writes them, in one note naming q4_k_m --pure`, async () => {
    const { runs } = await read();
    const pure = runs.find((r) => r.flags.includes("--pure"));
    assert.deepEqual(pure?.flags, [KEEP, "--pure"]);
    const converter = JSON.parse(await Deno.readTextFile(`${source}/expected.json`))
      .llamacpp_nvfp4.f32.tensors as Record<string, { type: string; sha256: string }>;
    await withTempDir(async (dir) => {
      const out = `${dir}/q4_k.gguf`;
      const run = await runApr(["convert", source, "-o", out, "--quantize", "q4_k"]);
      assert.equal(run.code, 0, run.stderr);
      const mine = (await ggufDescription(out)).tensors.filter((x) => x.type === "NVFP4");
      assert.deepEqual(
        mine.map((x) => [x.name, x.sha256]).sort(),
        Object.entries(converter).filter(([, e]) => e.type === "NVFP4").map(([n, e]) => [
          n,
          e.sha256,
        ]).sort(),
      );
      const notes = run.stdout.split("\n").filter((l) => l.includes("NVFP4 weights stay NVFP4"));
      assert.equal(notes.length, 1, run.stdout);
      assert.match(notes[0]!, /requantizing from type nvfp4 is disabled/);
      assert.match(notes[0]!, /--quantize q4_k_m --pure is llama-quantize's --pure file/);
    });
  });
}
