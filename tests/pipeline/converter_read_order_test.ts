/**
 * `converterReadOrder` (src/pipeline/converter_read_order.ts): a checkpoint's
 * tensors as llama.cpp's converter reads them, shard after shard and each
 * shard's by name (gguf-py's SafetensorsLocal), where aprkit's reader
 * serves a mixed-dtype shard by data offset (the `deepseek4-fp8` fixture's
 * files equal the converter's only so: tests/interop/deepseek4_test.ts).
 */

import assert from "node:assert/strict";
import { converterReadOrder } from "../../src/pipeline/converter_read_order.ts";
import type { TensorInfo } from "../../src/tensor.ts";

const info = (name: string): TensorInfo => ({ name, dtype: "F32", shape: [1], byteLength: 4 });

Deno.test("converter read order: each shard's tensors by name, shards kept in turn; a made tensor stays in its neighbour's shard", () => {
  const shards = new Map([
    ["a.norm.weight", "s1"],
    ["a.wq.scale", "s1"],
    ["a.wq.weight", "s1"],
    ["b.norm.weight", "s2"],
    ["b.wk.weight", "s2"],
  ]);
  // By data offset: F32 first, then the one-byte FP8 weights and scales.
  const served = ["a.norm.weight", "z.weight", "a.wq.weight", "b.wk.weight", "b.norm.weight"];
  assert.deepEqual(converterReadOrder(served.map(info), (n) => shards.get(n)), [
    "a.norm.weight",
    "a.wq.weight",
    "z.weight",
    "b.norm.weight",
    "b.wk.weight",
  ]);
  // Already in that order: nothing to do.
  const sorted = ["a.norm.weight", "a.wq.weight", "b.norm.weight", "b.wk.weight"];
  assert.equal(converterReadOrder(sorted.map(info), (n) => shards.get(n)), undefined);
});

Deno.test("converter read order: a weight made under a name no file holds goes after every tensor read, by shard then name", () => {
  // GPTQ: `qweight`, `qzeros`, `scales`, `g_idx` become `.weight`, which the
  // converter adds after the tensors it read (dequant_model's new_tensors).
  const shards = new Map([
    ["a.norm.weight", "s1"],
    ["a.bias", "s1"],
    ["b.norm.weight", "s2"],
  ]);
  const served = [
    "a.wq.weight",
    "a.wk.weight",
    "a.norm.weight",
    "a.bias",
    "b.wv.weight",
    "b.norm.weight",
  ];
  const made = new Map(["a.wq.weight", "a.wk.weight", "b.wv.weight"].map((n) => [n, undefined]));
  assert.deepEqual(converterReadOrder(served.map(info), (n) => shards.get(n), made), [
    "a.bias",
    "a.norm.weight",
    "b.norm.weight",
    "a.wk.weight",
    "a.wq.weight",
    "b.wv.weight",
  ]);
  // One the files hold (FP8's dequantized weight) keeps its place by name.
  shards.set("a.wq.weight", "s1");
  assert.deepEqual(converterReadOrder(served.map(info), (n) => shards.get(n), made), [
    "a.bias",
    "a.norm.weight",
    "a.wq.weight",
    "b.norm.weight",
    "a.wk.weight",
    "b.wv.weight",
  ]);
});

Deno.test("converter read order: a made weight goes by the shard and name of the tensor marking its group, wherever its group begins", () => {
  // GPTQ groups split by the shard boundary: the converter keys each made
  // `.weight` by its `.qweight` (gptq-4bit-sharded, tests/quant/checkpoint_test.ts).
  const shards = new Map([
    ["a.norm.weight", "s1"],
    ["o.g_idx", "s1"], // o's group begins in s1, its qweight is in s2
    ["q.qweight", "s1"], // q's qweight in s1, the rest in s2
    ["o.qweight", "s2"],
    ["d.qweight", "s2"], // d wholly in s2, the first group there
    ["b.norm.weight", "s2"],
    ["x.qweight", "s3"], // s3 holds nothing else: every tensor of it went into x
  ]);
  // Each made tensor where the reader puts it: at its group's first member.
  const served = ["a.norm.weight", "o.weight", "q.weight", "d.weight", "x.weight", "b.norm.weight"];
  const made = new Map([
    ["o.weight", "o.qweight"],
    ["q.weight", "q.qweight"],
    ["d.weight", "d.qweight"],
    ["x.weight", "x.qweight"],
  ]);
  assert.deepEqual(converterReadOrder(served.map(info), (n) => shards.get(n), made), [
    "a.norm.weight",
    "b.norm.weight",
    "q.weight",
    "d.weight",
    "o.weight",
    "x.weight",
  ]);
});
