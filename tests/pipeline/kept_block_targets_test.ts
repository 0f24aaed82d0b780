/**
 * The rule for blocks llama.cpp's converter keeps (src/pipeline/kept_block_targets.ts),
 * on the gpt-oss checkpoint as the Hub publishes it (MXFP4 experts): which
 * targets say that the experts stay MXFP4 (the files themselves are compared
 * with llama-quantize's in tests/interop/gpt_oss_test.ts and deepseek4_test.ts).
 */

import assert from "node:assert/strict";
import { checkKeptBlocks, keptBlocks } from "../../src/pipeline/kept_block_targets.ts";
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
