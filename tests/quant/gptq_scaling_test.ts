/**
 * Act-order GPTQ time grows linearly with its groups (issue 34 §1, "Time"):
 * 300k groups took 129 s and 500k 383 s, because every tile of output
 * columns read each group's short row of scales and zeros with a request of
 * its own, and nothing stopped scales from having groups no input reads.
 * Judged as a ratio against a run a quarter the size on the same machine,
 * not a fixed time, as tests/formats/qnat/sink_scaling_test.ts does.
 *
 * @module
 */

import { ok } from "node:assert/strict";
import type { DType } from "../../src/dtype.ts";
import { ModelFormatError } from "../../src/errors.ts";
import { dequantizeCheckpoint } from "../../src/quant/checkpoint/mod.ts";
import type { TensorEntry } from "../../src/tensor.ts";

function entry(name: string, dtype: DType, shape: number[], bytes: Uint8Array): TensorEntry {
  return {
    info: { name, dtype, shape, byteLength: bytes.length },
    open: () => ReadableStream.from([bytes.slice()]),
    slice: (a, b) => ReadableStream.from([bytes.slice(a, b)]),
  };
}

const OUTPUTS = 64;
const PACK = 8; // 4 bits

/** A 4-bit act-order layer of `inputs` inputs in `groups` groups, g_idx a scattered permutation. */
function layer(inputs: number, groups: number): TensorEntry[] {
  const g = new Int32Array(inputs);
  for (let i = 0; i < inputs; i++) g[i] = ((i * 7919) % inputs) % groups;
  return [
    entry(
      "l.qweight",
      "I32",
      [inputs / PACK, OUTPUTS],
      new Uint8Array(inputs / PACK * OUTPUTS * 4),
    ),
    entry("l.qzeros", "I32", [groups, OUTPUTS / PACK], new Uint8Array(groups * OUTPUTS / PACK * 4)),
    entry("l.scales", "F16", [groups, OUTPUTS], new Uint8Array(groups * OUTPUTS * 2).fill(0x3c)),
    entry("l.g_idx", "I32", [inputs], new Uint8Array(g.buffer)),
  ];
}

/** Seconds to dequantize a layer whose every input is its own group (group_size 1). */
async function seconds(groups: number): Promise<number> {
  const config = { quantization_config: { quant_method: "gptq", bits: 4, group_size: 1 } };
  const { tensors } = await dequantizeCheckpoint(layer(groups, groups), config, "layer");
  const started = performance.now();
  let bytes = 0;
  for await (const chunk of tensors[0]!.open()) bytes += chunk.length;
  ok(bytes === OUTPUTS * groups * 4, `${bytes} bytes`);
  return (performance.now() - started) / 1000;
}

Deno.test("GPTQ act-order with 200k groups takes about 4x a 50k layer, not 16x", async () => {
  await seconds(5_000); // warm the JIT
  const small = Math.min(await seconds(50_000), await seconds(50_000));
  const large = await seconds(200_000);
  // Linear measures ~4x; the request per group and tile measured 6x for 2x the groups.
  ok(large < 9 * small, `200k groups took ${large.toFixed(2)} s, 50k took ${small.toFixed(2)} s`);
});

Deno.test("GPTQ scales with more groups than group_size gives are refused, with or without g_idx", async () => {
  const config = { quantization_config: { quant_method: "gptq", bits: 4, group_size: 32 } };
  // 64 inputs make 2 groups; 100,000 rows of scales are groups no input reads.
  let error: unknown;
  try {
    await dequantizeCheckpoint(layer(64, 100_000), config, "many-groups");
  } catch (e) {
    error = e;
  }
  ok(error instanceof ModelFormatError, String(error));
  ok(/group_size 32 means 2 groups, not 100000/.test(error.message), error.message);
});
