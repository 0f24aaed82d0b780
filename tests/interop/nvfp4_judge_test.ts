/**
 * NVFP4 checkpoints (issue 25: NVIDIA ModelOpt's `hf_quant_config.json`
 * form and compressed-tensors' `nvfp4-pack-quantized`) judged by llama.cpp
 * (node-llama-cpp 3.22.1, the converter's commit): aprkit's GGUF, whose
 * weights stay NVFP4 as the converter keeps them (the same tensors as its
 * output, `tests/quant/checkpoint_test.ts`), loads and runs, and its
 * next-token log-probabilities agree with the same model dequantized by
 * aprkit (APR import, then F32 GGUF) run by the same llama.cpp. The MoE
 * fixture's experts are stacked with a `.scale` per expert, which llama.cpp's
 * qwen3moe graph multiplies in (`build_moe_ffn`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { testdata, withTempDir } from "../cli/_run_apr.ts";
import { llamaLogProbs } from "./_llama_judge.ts";

/**
 * llama.cpp multiplies NVFP4 weights by activations it quantizes (ggml-cpu's
 * `vec_dot_type`), which the F32 file does not: a small difference in
 * log-probability, as for gpt-oss's MXFP4 (0.05 there).
 */
const NVFP4_LOGPROB_TOLERANCE = 0.05;

/**
 * Nemotron-H's: its Mamba-2 layers (the projections into and out of the
 * scan NVFP4 too) carry the activations' Q8_0 rounding further. Measured,
 * Nano's shape then Super's (latent experts): 0.061 and 0.070 for the NVFP4
 * files, and 0.072 and 0.139 for the same dequantized models stored as Q8_0
 * (every matrix, so their activations rounded alike) against their F32 files
 * in the same llama.cpp; the NVFP4 files are within what that rounding alone
 * gives (a `.scale` left out would multiply a product by 5,600 to 8,100).
 */
const NEMOTRON_H_LOGPROB_TOLERANCE = 0.08;

/** Token ids within every fixture's vocabulary, and the positions compared. */
const IDS = [1, 17, 42, 99, 250, 31, 200, 7, 64, 128];
const POSITIONS = [0, 3, 6, 9];

/**
 * The fixtures and their vocabulary sizes: the dense Llamas (256 tokens), and
 * Qwen3-MoEs, a Mellum 2 and a Nemotron 3 Nano whose experts the converter
 * stacks (384). Each is converted as stored (aprkit's default): Nemotron-H's
 * BF16 tensors stay BF16 but its Mamba convolution, which llama.cpp's
 * `ssm_conv` takes in F32 only (the converter forces it, and so does aprkit).
 */
const FIXTURES: [string, number][] = [
  ["modelopt-nvfp4", 256],
  ["modelopt-mixed", 256],
  ["ct-nvfp4", 256],
  ["modelopt-nvfp4-moe", 384],
  ["ct-nvfp4-moe", 384],
  ["modelopt-nvfp4-mellum", 384],
  ["modelopt-nvfp4-nemotron-h", 384],
  ["modelopt-nvfp4-nemotron-h-latent", 384],
];

for (const [name, vocab] of FIXTURES) {
  Deno.test(`NVFP4 checkpoint ${name}: llama.cpp runs aprkit's NVFP4 GGUF as the same model dequantized`, async () => {
    const nemotron = name.includes("nemotron-h");
    const tolerance = nemotron ? NEMOTRON_H_LOGPROB_TOLERANCE : NVFP4_LOGPROB_TOLERANCE;
    await withTempDir(async (dir) => {
      const source = testdata(`hf/quantized/${name}`);
      const nvfp4 = `${dir}/nvfp4.gguf`;
      // As stored (aprkit's default): Nemotron-H's BF16 Mamba convolution is
      // written F32, as the converter forces it (ggml's ssm_conv takes F32 only).
      await convertModel(source, nvfp4);
      const apr = `${dir}/m.apr`;
      await convertModel(source, apr);
      const dequantized = `${dir}/f32.gguf`;
      await convertModel(apr, dequantized, { float32: true });
      const runs = await llamaLogProbs(
        [nvfp4, dequantized].map((path) => ({ path, ids: IDS, positions: POSITIONS })),
      );
      for (const run of runs) assert.equal(run.error, undefined, run.error);
      const [kept, reference] = [runs[0]!.logprobs, runs[1]!.logprobs];
      assert.equal(kept.length, POSITIONS.length);
      let worst = 0;
      let tops = 0;
      for (let p = 0; p < POSITIONS.length; p++) {
        assert.equal(kept[p]!.length, vocab);
        for (let t = 0; t < vocab; t++) {
          worst = Math.max(worst, Math.abs(kept[p]![t]! - reference[p]![t]!));
        }
        // The likeliest next token is the same, where the reference's leads the
        // next by more than the differences allowed could close (Super's shape has
        // a near-tie, 0.021 apart, at one position).
        const top = (row: number[]) => row.indexOf(Math.max(...row));
        const [first, second] = [...reference[p]!].sort((a, b) => b - a);
        if (first! - second! > 2 * tolerance) {
          assert.equal(top(kept[p]!), top(reference[p]!), `position ${POSITIONS[p]}`);
          tops++;
        }
      }
      assert.ok(tops > 0, "no position with a clear likeliest token");
      assert.ok(
        worst <= tolerance,
        `largest log-prob difference ${worst} over ${tolerance}`,
      );
    });
  });
}
