/**
 * The rule for blocks llama.cpp's converter keeps or forces
 * (src/pipeline/kept_block_targets.ts), on the gpt-oss checkpoint as the Hub
 * publishes it (MXFP4 experts), ModelOpt NVFP4 ones (dense, and MoE with
 * stacked NVFP4 experts) and DeepSeek-V4's FP8
 * one (Q8_0 in the converter's file): which targets say that the blocks stay,
 * and which are refused (the files themselves are compared with
 * llama-quantize's in tests/interop/gpt_oss_test.ts, deepseek4_test.ts and
 * nvfp4_presets_test.ts).
 */

import assert from "node:assert/strict";
import {
  checkKeptBlocks,
  keptBlocks,
  requantizedAsQ8_0,
} from "../../src/pipeline/kept_block_targets.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import type { QuantizeTarget } from "../../src/quant/plan_quantization.ts";

const SOURCE = new URL("../testdata/families/hf/gpt-oss-mxfp4", import.meta.url).pathname;

Deno.test("kept blocks: MXFP4 experts stay MXFP4 under every GGUF target; a note where llama-quantize needs --tensor-type exps=mxfp4", async () => {
  const model = await openModel(SOURCE, { packedForGguf: true });
  try {
    assert.equal(keptBlocks(model, true), "MXFP4");
    assert.equal(keptBlocks(model, false), undefined);
    const notes = (quantize: QuantizeTarget, allowRequantize = false, ggufNames = true) => {
      const said: string[] = [];
      checkKeptBlocks(model, { ggufNames, quantize, allowRequantize }, (n) => said.push(n));
      return said.length;
    };
    // The converter's own outtypes write its file: nothing to say.
    for (const to of ["none", "f16", "bf16", "q8_0"] as const) assert.equal(notes(to), 0, to);
    // Presets and single types keep them, as llama-quantize told to.
    for (const to of ["q4_k_m", "q5_k_s", "iq4_xs", "q4_k"] as const) {
      assert.equal(notes(to), 1, to);
    }
    // MXFP4_MOE makes them MXFP4 itself; --allow-requantize quantizes a preset's again.
    assert.equal(notes("mxfp4_moe"), 0);
    assert.equal(notes("q4_k_m", true), 0);
    // Not a GGUF under llama.cpp's names: no kept blocks.
    assert.equal(notes("q4_k_m", false, false), 0);
  } finally {
    await model.close();
  }
});

// The dense Llama, and the Qwen3-MoE whose NVFP4 experts the converter stacks.
for (const fixture of ["modelopt-nvfp4", "modelopt-nvfp4-moe"]) {
  Deno.test(`kept blocks: NVFP4 weights stay NVFP4 under every GGUF target; a note where llama-quantize needs --tensor-type NAME=nvfp4, MXFP4_MOE included (${fixture})`, async () => {
    const source = new URL(`../testdata/hf/quantized/${fixture}`, import.meta.url).pathname;
    const model = await openModel(source, { packedForGguf: true });
    try {
      assert.equal(keptBlocks(model, true), "NVFP4");
      const notes = (quantize: QuantizeTarget, allowRequantize = false) => {
        const said: string[] = [];
        checkKeptBlocks(model, { ggufNames: true, quantize, allowRequantize }, (n) => said.push(n));
        return said;
      };
      for (const to of ["none", "f16", "bf16", "q8_0"] as const) {
        assert.deepEqual(notes(to), [], to);
      }
      // No preset makes NVFP4: each keeps them as llama-quantize told to, MXFP4_MOE too.
      for (const to of ["q4_k_m", "q5_k_s", "iq4_xs", "mxfp4_moe"] as const) {
        const said = notes(to);
        assert.equal(said.length, 1, to);
        assert.match(said[0]!, /modelopt NVFP4 weights stay NVFP4/);
        assert.match(said[0]!, /--tensor-type NAME=nvfp4 for each/);
        assert.match(said[0]!, /"requantizing from type nvfp4 is disabled"/);
      }
      assert.deepEqual(notes("q4_k_m", true), []);
      // q8_0 is the converter's file, llama-quantize's Q8_0 only when told to requantize.
      const asQ8_0 = (quantize: QuantizeTarget, allowRequantize: boolean, ggufNames = true) =>
        requantizedAsQ8_0(model, { ggufNames, quantize, allowRequantize });
      assert.equal(asQ8_0("q8_0", true), true);
      assert.equal(asQ8_0("q8_0", false), false);
      assert.equal(asQ8_0("q4_k_m", true), false);
      assert.equal(asQ8_0("q8_0", true, false), false);
      // A single type takes no llama-quantize flag: the note names the preset that is its file.
      assert.match(notes("q4_k")[0]!, /--quantize q4_k_m --pure is llama-quantize's --pure file/);
    } finally {
      await model.close();
    }
  });
}

Deno.test("kept blocks: DeepSeek-V4's FP8 matrices (Q8_0 in the converter's file) refused where llama-quantize refuses them, a single type naming q4_k_m --pure --allow-requantize", async () => {
  const source = new URL("../testdata/families/hf/deepseek4-fp8", import.meta.url).pathname;
  const model = await openModel(source, { packedForGguf: true });
  try {
    const check = (quantize: QuantizeTarget, allowRequantize = false) =>
      checkKeptBlocks(model, { ggufNames: true, quantize, allowRequantize }, () => {});
    // Q8_0 stays Q8_0: the converter's outtypes, Q8_0 and MXFP4_MOE.
    for (const to of ["none", "f16", "bf16", "q8_0", "mxfp4_moe"] as const) check(to);
    assert.throws(
      () => check("q4_k_m"),
      /requantizing from type q8_0 is disabled.*--allow-requantize/,
    );
    check("q4_k_m", true);
    assert.throws(
      () => check("q4_k"),
      /requantizing from type q8_0 is disabled"\); --quantize q4_k_m --pure --allow-requantize/,
    );
    assert.equal(
      requantizedAsQ8_0(model, { ggufNames: true, quantize: "q8_0", allowRequantize: true }),
      true,
    );
    // Not under llama.cpp's names (--keep-names): nothing forced.
    checkKeptBlocks(model, { ggufNames: false, quantize: "q4_k", allowRequantize: false });
  } finally {
    await model.close();
  }
});
