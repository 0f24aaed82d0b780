/**
 * Issue 25, gpt-oss as the Hub publishes it (`tests/testdata/families/hf/gpt-oss-mxfp4`:
 * the experts as MXFP4 `*_blocks` + `*_scales`), judged by the real programs:
 * aprkit's GGUF equals llama.cpp's converter's (`--outtype f32`, `bf16`,
 * `q8_0`: the experts repacked to ggml's MXFP4 and written first, tensor by
 * tensor, byte for byte, every KV pair in order) and runs in llama.cpp as
 * transformers computes the checkpoint; APR holds the experts dequantized
 * (realizar has no gpt-oss model: Hugging Face names), and its GGUF export
 * runs as transformers computes too. What cannot be written as llama.cpp
 * does is refused in one line with exit code 2 and no file: a blocks/scales
 * pair of the wrong shapes, a truncated shard, and a gpt-oss GGUF back to
 * SafeTensors or APR. The K-quant presets keep the experts MXFP4 and equal
 * `llama-quantize --tensor-type exps=mxfp4` (plain llama-quantize refuses:
 * "requantizing from type mxfp4 is disabled"), in one note; with
 * `--allow-requantize` they equal `llama-quantize --allow-requantize`; the
 * single type q4_k keeps them too, in a note naming `--quantize q4_k_m
 * --pure` (llama-quantize's `--pure` file, compared). The same checkpoint's layout in BF16 (`gpt-oss-bf16`, transformers'
 * stacked experts) gives the converter's and llama-quantize's files too; the
 * F32 `gpt-oss` fixture is judged with the other families in
 * families_gguf_test.ts.
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { assertOneLineError, runApr, withTempDir } from "../cli/_run_apr.ts";
import { llamaLogProbs } from "./_llama_judge.ts";
import {
  compareWithReference,
  equalsConverterFiles,
  equalsKeptMxfp4Presets,
  fail,
  familyDir,
  familyReference,
  fileDifference,
  ggufDescription,
  keepsMxfp4UnderSingleType,
  llamaCppManifest,
  manifestDifferences,
} from "./_families.ts";

const FIXTURE = "gpt-oss-mxfp4";
const SOURCE = familyDir(FIXTURE);

/**
 * llama.cpp's CPU kernel multiplies MXFP4 weights by activations rounded to
 * Q8_0 (ggml-cpu's `vec_dot_type` for MXFP4), which transformers does not:
 * on this fixture the converter's own file (the same bytes as aprkit's) is
 * 0.037 off transformers, while the same weights dequantized to F32 stay
 * within the families' 0.03 (checked below). Greedy tokens must
 * still be transformers'.
 */
const MXFP4_LOGPROB_TOLERANCE = 0.05;

Deno.test("gpt-oss MXFP4: HF → GGUF is llama.cpp's converter's --outtype f32, bf16 and q8_0 file, sha256 for sha256, MXFP4 experts included", async (t) => {
  await withTempDir(async (dir) => {
    for (const type of ["f32", "bf16", "q8_0"] as const) {
      await t.step(type, async () => {
        const out = `${dir}/${type}.gguf`;
        await convertModel(SOURCE, out, type === "f32" ? {} : { quantize: type });
        const theirs = await llamaCppManifest(FIXTURE, type);
        assert.ok(theirs !== undefined, `no llama.cpp ${type} manifest`);
        const mine = await ggufDescription(out);
        // Not vacuous: the experts are MXFP4, as the converter keeps them.
        assert.equal(mine.tensors.filter((x) => x.type === "MXFP4").length, 6);
        fail(`${FIXTURE} ${type}`, manifestDifferences(mine, theirs));
        // And the whole file, sha256 for sha256.
        assert.ok(theirs.file_sha256 !== undefined);
        fail(`${FIXTURE} ${type}`, await fileDifference(out, theirs));
      });
    }
  });
});

Deno.test("gpt-oss BF16 (transformers' layout, as most published copies store it): HF → GGUF is llama.cpp's converter's f32, bf16, q8_0 and llama-quantize's Q4_K_M, Q5_K_S file, sha256 for sha256", (t) =>
  equalsConverterFiles(t, "gpt-oss-bf16"));

Deno.test("gpt-oss MXFP4: llama.cpp runs aprkit's GGUF as transformers computes the checkpoint, and the APR's dequantized experts too", async () => {
  await withTempDir(async (dir) => {
    const ref = await familyReference(FIXTURE);
    const gguf = `${dir}/mxfp4.gguf`;
    const apr = `${dir}/dequantized.apr`;
    const viaApr = `${dir}/dequantized.gguf`;
    await convertModel(SOURCE, gguf);
    await convertModel(SOURCE, apr);
    await convertModel(apr, viaApr);
    // APR: Hugging Face names, the experts dequantized to F32 (no MXFP4 left).
    const model = await openModel(apr);
    try {
      const experts = model.tensor("model.layers.0.mlp.experts.gate_up_proj").info;
      assert.equal(experts.dtype, "F32");
      assert.deepEqual(experts.shape, [4, 64, 128]);
      assert.deepEqual(model.names().filter((n) => /_blocks$|_scales$/.test(n)), []);
    } finally {
      await model.close();
    }
    const runs = await llamaLogProbs(
      [gguf, viaApr].map((path) => ({ path, ids: ref.sequence, positions: ref.positions })),
    );
    for (const run of runs) assert.equal(run.error, undefined, run.error);
    const [mxfp4, dequantized] = runs;
    const within = (logprobs: number[][], tolerance: number) =>
      compareWithReference(ref, logprobs).filter((line) => {
        const m = /log-prob (-?[\d.]+), transformers (-?[\d.]+)/.exec(line);
        return m === null ? !line.startsWith("largest") : Math.abs(+m[1]! - +m[2]!) > tolerance;
      });
    fail("MXFP4 GGUF", within(mxfp4!.logprobs, MXFP4_LOGPROB_TOLERANCE));
    fail("dequantized (APR → GGUF)", compareWithReference(ref, dequantized!.logprobs));
  });
});

Deno.test("gpt-oss MXFP4: Q4_K_M and Q5_K_S keep the experts MXFP4, equal to llama-quantize --tensor-type exps=mxfp4, in a note; --allow-requantize and MXFP4_MOE equal llama-quantize's", (t) =>
  equalsKeptMxfp4Presets(t, FIXTURE, 6));

Deno.test("gpt-oss MXFP4: the single type q4_k keeps the experts as the converter writes them, in a note naming q4_k_m --pure", () =>
  keepsMxfp4UnderSingleType(FIXTURE, 6));

/** The fixture copied to `dir/name`, with one shard's bytes changed by `edit`. */
async function alteredCopy(
  dir: string,
  edit: (shard: string, bytes: Uint8Array) => Uint8Array,
): Promise<string> {
  const copy = `${dir}/checkpoint`;
  await Deno.mkdir(copy);
  for (const entry of Deno.readDirSync(SOURCE)) {
    const bytes = await Deno.readFile(`${SOURCE}/${entry.name}`);
    await Deno.writeFile(`${copy}/${entry.name}`, edit(entry.name, bytes));
  }
  return copy;
}

/** The shard holding layer 0's experts. */
const EXPERT_SHARD = "model-00002-of-00004.safetensors";

Deno.test("gpt-oss MXFP4: a blocks/scales pair of the wrong shapes, or a truncated shard, is refused in one line, with no file", async (t) => {
  for (const output of ["gguf", "apr"]) {
    await t.step(`scales [4, 32, 4] for blocks [4, 64, 2, 16] (${output})`, async () => {
      await withTempDir(async (dir) => {
        const source = await alteredCopy(dir, (name, bytes) => {
          if (name !== EXPERT_SHARD) return bytes;
          // Same byte count, other shape: only the pairing is wrong.
          const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
          const header = new TextDecoder().decode(bytes.subarray(8, 8 + n));
          const changed = header.replace(
            /("model\.layers\.0\.mlp\.experts\.down_proj_scales":\{"dtype":"U8","shape":)\[4,64,2\]/,
            "$1[4,32,4]",
          );
          assert.notEqual(changed, header);
          const out = bytes.slice();
          out.set(new TextEncoder().encode(changed), 8);
          return out;
        });
        const out = `${dir}/out.${output}`;
        const run = await runApr(["convert", source, "-o", out]);
        assertOneLineError(run, /down_proj_blocks/, /down_proj_scales/, /MXFP4/);
        await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
      });
    });
  }
  await t.step("a shard cut short", async () => {
    await withTempDir(async (dir) => {
      const source = await alteredCopy(
        dir,
        (name, bytes) => name === EXPERT_SHARD ? bytes.subarray(0, bytes.length - 100) : bytes,
      );
      const out = `${dir}/out.gguf`;
      const run = await runApr(["convert", source, "-o", out]);
      assertOneLineError(run, EXPERT_SHARD);
      await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
    });
  });
});

Deno.test("gpt-oss: a config.json without sliding_window (llama.cpp cannot load the file without it) is refused for GGUF, in one line, with no file", async () => {
  await withTempDir(async (dir) => {
    const source = await alteredCopy(dir, (name, bytes) => {
      if (name !== "config.json") return bytes;
      const config = JSON.parse(new TextDecoder().decode(bytes));
      delete config.sliding_window;
      return new TextEncoder().encode(JSON.stringify(config));
    });
    const out = `${dir}/out.gguf`;
    const run = await runApr(["convert", source, "-o", out]);
    assertOneLineError(run, /sliding_window/, /gpt-oss/);
    await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
  });
});

Deno.test("gpt-oss: its GGUF is refused for SafeTensors and APR output (not read back into Hugging Face's layout), in one line, with no file", async (t) => {
  await withTempDir(async (dir) => {
    const gguf = `${dir}/gpt-oss.gguf`;
    await convertModel(SOURCE, gguf);
    for (const output of ["safetensors", "apr"]) {
      await t.step(output, async () => {
        const out = `${dir}/back.${output}`;
        const run = await runApr(["convert", gguf, "-o", out]);
        assertOneLineError(run, /gpt-oss/, /--keep-names/);
        await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
      });
    }
  });
});
