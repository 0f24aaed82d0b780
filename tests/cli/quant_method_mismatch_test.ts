/**
 * A `quant_method` naming another method than the tensors are in (issue 34
 * §1): a GPTQ checkpoint whose config says `fp8` was written with its
 * `qweight`/`qzeros`/`scales`/`g_idx` raw and no `q_proj.weight`, exit 0,
 * with or without `--quantize`, to APR and SafeTensors. The config's method
 * must find its own tensors and leave none of another method's: each case
 * is one line naming the model and the tensor, exit 2, nothing written.
 *
 * @module
 */

import { equal } from "node:assert/strict";
import { join } from "node:path";
import {
  assertOneLineError,
  copyModel,
  DEMO_MODEL,
  exists,
  runApr,
  testdata,
  withTempDir,
} from "./_run_apr.ts";

type Json = Record<string, unknown>;

/** Copy a model folder (a fixture of tests/testdata/hf/quantized/ by name) with its quantization_config replaced. */
async function relabelled(dir: string, fixture: string, quantization: Json): Promise<string> {
  const from = fixture.startsWith("/") ? fixture : testdata(`hf/quantized/${fixture}`);
  const model = await copyModel(dir, from);
  const config = JSON.parse(await Deno.readTextFile(join(model, "config.json"))) as Json;
  config["quantization_config"] = quantization;
  await Deno.writeTextFile(join(model, "config.json"), JSON.stringify(config));
  return model;
}

const GPTQ_CONFIG = { quant_method: "gptq", bits: 4, group_size: 32, desc_act: false, sym: true };

/** [fixture the tensors are in, the config it is given, what the line must say]. */
const CASES: [string, Json, RegExp][] = [
  [
    "gptq-4bit-actorder",
    { quant_method: "fp8", weight_block_size: [16, 32] },
    /quant_method is "fp8", but tensor "[^"]+\.(qweight|qzeros|scales|g_idx)" is (gptq|awq)/,
  ],
  [
    "gptq-4bit-actorder",
    { quant_method: "mxfp4" },
    /quant_method is "mxfp4", but tensor "[^"]+" is (gptq|awq)/,
  ],
  [
    "gptq-4bit-actorder",
    { quant_method: "bitnet" },
    /quant_method is "bitnet", but tensor "[^"]+" is (gptq|awq)/,
  ],
  [
    "fp8-block",
    GPTQ_CONFIG,
    /quant_method is "gptq", but tensor "[^"]+_scale_inv" is fp8's/,
  ],
  [
    "mxfp4-gpt-oss",
    { quant_method: "fp8" },
    /quant_method is "fp8", but tensor "[^"]+_(blocks|scales)" is mxfp4's/,
  ],
  [
    "ct-w4a16-asym",
    GPTQ_CONFIG,
    /quant_method is "gptq", but tensor "[^"]+\.weight_(packed|shape|scale|zero_point)" is /,
  ],
];

/** The commands: APR and SafeTensors output, each with and without --quantize. */
const COMMANDS: [string, string, string[]][] = [
  ["import", "x.apr", []],
  ["import", "x.apr", ["--quantize", "q8"]],
  ["convert", "x.safetensors", []],
  ["convert", "x.safetensors", ["--quantize", "bf16"]],
];

Deno.test("a quant_method that is not the tensors' method is refused, for every output", async (t) => {
  for (const [fixture, quantization, pattern] of CASES) {
    for (const [verb, out, flags] of COMMANDS) {
      await t.step(
        `${fixture} labelled ${quantization["quant_method"]}: ${verb} -o ${out} ${flags.join(" ")}`,
        async () => {
          await withTempDir(async (dir) => {
            const model = await relabelled(dir, fixture, quantization);
            const run = await runApr([verb, model, "-o", join(dir, out), ...flags]);
            assertOneLineError(run, model, pattern);
            equal(await exists(join(dir, out)), false, out);
            equal(await exists(join(dir, `${out}.partial`)), false, `${out}.partial`);
          });
        },
      );
    }
  }
});

Deno.test("a quant_method whose tensors are absent is refused", async () => {
  await withTempDir(async (dir) => {
    // The demo model's plain BF16 tensors under an fp8 config: nothing says fp8 but the config.
    const model = await relabelled(dir, DEMO_MODEL, { quant_method: "fp8" });
    const run = await runApr(["import", model, "-o", join(dir, "x.apr")]);
    assertOneLineError(run, model, /quant_method is "fp8", but no tensor is stored as fp8/);
    equal(await exists(join(dir, "x.apr")), false);
  });
});
