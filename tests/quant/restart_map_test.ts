import assert from "node:assert/strict";
import { parseAprQ8Scale, restartAt } from "../../src/quant/_restart_map.ts";
import { tensorByteLength } from "../../src/dtype.ts";
import type { TensorInfo } from "../../src/tensor.ts";

function info(dtype: TensorInfo["dtype"], shape: number[]): TensorInfo {
  return { name: "w", dtype, shape, byteLength: tensorByteLength(dtype, shape) };
}

Deno.test("restartAt() maps output block starts to source offsets", () => {
  const src = info("BF16", [8, 512]);
  // F16: any whole element.
  assert.deepEqual(restartAt(src, info("F16", [8, 512]), 6)?.sourceOffset, 6);
  assert.equal(restartAt(src, info("F16", [8, 512]), 7), undefined);
  // Q4_K, 512 columns: every 144-byte block is a restart point (256 values).
  const q4k = restartAt(src, info("Q4_K", [8, 512]), 3 * 144)!;
  assert.equal(q4k.sourceOffset, 3 * 256 * 2);
  assert.deepEqual(q4k.target.shape, [8 * 512 - 768]);
  assert.equal(q4k.target.byteLength, 13 * 144);
  assert.equal(restartAt(src, info("Q4_K", [8, 512]), 100), undefined);
  // Q6_K rows of 300 values are padded to 2 blocks: restart at row starts only.
  const padded = info("Q6_K", [8, 300]);
  assert.equal(restartAt(info("F32", [8, 300]), padded, 210), undefined);
  const row = restartAt(info("F32", [8, 300]), padded, 2 * 210)!;
  assert.equal(row.sourceOffset, 300 * 4);
  assert.deepEqual(row.target.shape, [7, 300]);
  // APR_Q8: after the 4-byte scale, one byte per value.
  assert.equal(restartAt(src, info("APR_Q8", [8, 512]), 4 + 100)?.sourceOffset, 200);
  assert.equal(restartAt(src, info("APR_Q8", [8, 512]), 4), undefined);
  // An APR_Q8 source needs its scale: never restarts.
  assert.equal(restartAt(info("APR_Q8", [8, 512]), info("F16", [8, 512]), 64), undefined);
  // Not strictly inside the payload.
  assert.equal(restartAt(src, info("F16", [8, 512]), 0), undefined);
  assert.equal(restartAt(src, info("F16", [8, 512]), 8 * 512 * 2), undefined);
});

Deno.test("parseAprQ8Scale() accepts only a positive finite f32", () => {
  const s = Math.fround(0.0123);
  assert.equal(parseAprQ8Scale(String(s)), s);
  assert.equal(parseAprQ8Scale("1"), 1);
  for (const bad of [undefined, "", "0", "-1", "NaN", "Infinity", "1e400", "0.1", "1x", " 1"]) {
    assert.equal(parseAprQ8Scale(bad), undefined, String(bad));
  }
  assert.equal(parseAprQ8Scale("1".repeat(100)), undefined);
});
