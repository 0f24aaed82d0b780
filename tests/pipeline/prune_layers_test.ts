import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import {
  parsePruneLayers,
  prunedImportance,
  prunedName,
  pruneMap,
} from "../../src/pipeline/prune_layers.ts";
import { UsageError } from "../../src/errors.ts";
import type { TensorInfo } from "../../src/tensor.ts";

// llama-quantize's remap_layer on 4 blocks; whole files against llama-quantize
// --prune-layers are in llama_quantize_options_test.ts.

const t = (name: string): TensorInfo => ({ name, dtype: "F32", shape: [1], byteLength: 4 });
const TENSORS = ["token_embd.weight", ...[0, 1, 2, 3].map((b) => `blk.${b}.attn_q.weight`)].map(t);

Deno.test("parsePruneLayers() reads llama-quantize's list: sorted, duplicates dropped, whole numbers only", () => {
  assertEquals(parsePruneLayers("7,3,3"), [3, 7]);
  for (const bad of ["", "1,", "-1", "1.5", "x"]) {
    throws(() => parsePruneLayers(bad), UsageError, bad);
  }
});

Deno.test("pruneMap() numbers the kept blocks from 0 in order and refuses a layer the model lacks", () => {
  assertEquals([...pruneMap([1], TENSORS)], [[0, 0], [2, 1], [3, 2]]);
  assertEquals([...pruneMap([0, 3], TENSORS)], [[1, 0], [2, 1]]);
  throws(() => pruneMap([4], TENSORS), /no layer 4 \(its layers are 0 to 3\)/);
});

Deno.test("prunedName() and prunedImportance(): kept blocks renamed, pruned ones gone, the rest as is", () => {
  const map = pruneMap([1], TENSORS);
  assertEquals(prunedName("blk.2.ffn_up.weight", map), "blk.1.ffn_up.weight");
  assertEquals(prunedName("blk.1.ffn_up.weight", map), undefined);
  assertEquals(prunedName("output.weight", map), "output.weight");
  const w = (v: number) => new Float32Array([v]);
  const entries = new Map([
    ["blk.1.attn_q.weight", w(1)],
    ["blk.3.attn_q.weight", w(3)],
    ["output.weight", w(9)],
  ]);
  assertEquals(
    [...prunedImportance(entries, map)].map(([n, v]) => [n, v[0]]),
    [["blk.2.attn_q.weight", 3], ["output.weight", 9]],
  );
});
