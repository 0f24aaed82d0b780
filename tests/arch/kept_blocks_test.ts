/**
 * The NVFP4 weights a checkpoint keeps for GGUF (`src/arch/kept_blocks.ts`),
 * named and ordered as llama.cpp's converter writes them
 * (`_generate_nvfp4_tensors`); the values are judged against the converter's
 * files in `tests/quant/checkpoint_test.ts`.
 *
 * @module
 */

import { deepEqual, throws } from "node:assert/strict";
import { keptNvfp4Tensors } from "../../src/arch/kept_blocks.ts";
import { familyOf } from "../../src/arch/registry.ts";
import type { TensorInfo } from "../../src/tensor.ts";

const LLAMA = familyOf("llama")!;

function info(name: string, dtype: TensorInfo["dtype"], shape: number[]): TensorInfo {
  return { name, dtype, shape, byteLength: shape.reduce((a, b) => a * b, 1) * 4 };
}

Deno.test("kept NVFP4: weight, then .scale and .input_scale when the checkpoint has them, first", () => {
  const made = keptNvfp4Tensors([
    info("model.layers.0.mlp.up_proj.weight", "U8", [128, 32]),
    info("model.layers.0.mlp.up_proj.weight_scale", "F8_E4M3", [128, 4]),
    info("model.layers.0.mlp.up_proj.weight_scale_2", "F32", [1]),
    info("model.layers.0.mlp.up_proj.input_scale", "F32", [1]),
    // A factor of 1 the checkpoint left out (or quant/ dropped): no .scale.
    info("model.layers.0.mlp.down_proj.weight", "U8", [64, 64]),
    info("model.layers.0.mlp.down_proj.weight_scale", "F8_E4M3", [64, 8]),
    info("model.norm.weight", "F32", [64]),
  ], LLAMA);
  deepEqual(made.map((m) => [m.info.name, m.info.dtype, m.info.shape, m.needs, m.first]), [
    [
      "blk.0.ffn_up.weight",
      "NVFP4",
      [128, 64],
      ["model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.up_proj.weight_scale"],
      true,
    ],
    ["blk.0.ffn_up.scale", "F32", [1], ["model.layers.0.mlp.up_proj.weight_scale_2"], true],
    ["blk.0.ffn_up.input_scale", "F32", [1], ["model.layers.0.mlp.up_proj.input_scale"], true],
    [
      "blk.0.ffn_down.weight",
      "NVFP4",
      [64, 128],
      ["model.layers.0.mlp.down_proj.weight", "model.layers.0.mlp.down_proj.weight_scale"],
      true,
    ],
  ]);
});

Deno.test("kept NVFP4: experts (the converter stacks them) are refused, naming the weight", () => {
  throws(
    () =>
      keptNvfp4Tensors([
        info("model.layers.0.mlp.experts.0.up_proj.weight", "U8", [64, 32]),
        info("model.layers.0.mlp.experts.0.up_proj.weight_scale", "F8_E4M3", [64, 4]),
      ], LLAMA),
    /NVFP4 weight "model\.layers\.0\.mlp\.experts\.0\.up_proj\.weight" to GGUF: NVFP4 experts are not supported yet/,
  );
});

Deno.test("kept NVFP4: refused for a family whose llama.cpp graph ignores .scale (qwen2's feed-forward), naming those it is kept for", () => {
  throws(
    () =>
      keptNvfp4Tensors([
        info("model.layers.0.mlp.up_proj.weight", "U8", [128, 32]),
        info("model.layers.0.mlp.up_proj.weight_scale", "F8_E4M3", [128, 4]),
      ], familyOf("qwen2")!),
    /llama\.cpp's qwen2 graph does not multiply in NVFP4's per-tensor scale \(\.scale\).*supported for llama, mistral, mixtral, mistral3, qwen3[^;]*; APR/,
  );
});
