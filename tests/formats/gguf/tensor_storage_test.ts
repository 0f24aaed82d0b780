/**
 * The types a GGUF export gives tensors kept as stored (`ggufStorage`): what
 * llama.cpp's converter writes F32 under every `--outtype` is F32 here too, so
 * a BF16 checkpoint never gives a file llama.cpp aborts on (its `ssm_conv`
 * takes F32 only; nvfp4_judge_test.ts runs such a Nemotron-H file).
 */

import assert from "node:assert/strict";
import type { DType } from "../../../src/dtype.ts";
import { tensorByteLength } from "../../../src/dtype.ts";
import { ggufStorage } from "../../../src/formats/gguf/tensor_storage.ts";

function storage(name: string, dtype: DType, shape: number[], asStored = true) {
  const info = { name, dtype, shape, byteLength: tensorByteLength(dtype, shape) };
  return ggufStorage(info, { asStored });
}

Deno.test("ggufStorage: kept as stored, BF16 tensors the converter always writes F32 become F32; matrices keep BF16", () => {
  // Norms and other 1-D tensors, as before.
  assert.equal(storage("blk.0.attn_norm.weight", "BF16", [64]), "F32");
  assert.equal(storage("blk.0.ssm_norm.weight", "BF16", [1, 128]), "F32");
  // Mamba's and LFM2's convolutions, MoE routers (the converter's list).
  assert.equal(storage("blk.0.ssm_conv1d.weight", "BF16", [160, 4]), "F32");
  assert.equal(storage("blk.0.shortconv.conv.weight", "F16", [64, 3]), "F32");
  assert.equal(storage("blk.0.ffn_gate_inp.weight", "BF16", [64, 8]), "F32");
  // A name without a .weight suffix (Mamba-2's D as one column).
  assert.equal(storage("blk.0.ssm_d", "BF16", [8, 1]), "F32");
  // Matrices and F32 tensors stay as they are.
  assert.equal(storage("blk.0.ssm_in.weight", "BF16", [296, 64]), "keep");
  assert.equal(storage("blk.0.attn_q.weight", "F16", [64, 64]), "keep");
  assert.equal(storage("blk.0.ssm_conv1d.weight", "F32", [160, 4]), "keep");
  assert.equal(storage("blk.0.ffn_gate_inp.weight", "Q8_0", [64, 32]), "keep");
  // A type asked for is planned as the converter plans it (DBRX's router stays BF16 there).
  assert.equal(storage("blk.0.ffn_gate_inp.weight", "BF16", [64, 8], false), "keep");
  assert.equal(storage("blk.0.attn_norm.weight", "BF16", [64], false), "F32");
});
