/**
 * The LZ4 block compressor (src/formats/apr/_lz4.ts, written here so the
 * library has no npm dependency) against lz4js 0.2.0, the package it
 * replaced, on the same inputs in the same run: `deno bench bench/lz4_bench.ts`.
 * Each group's summary gives the ratio; compressed sizes are printed once.
 * lz4js is imported here only, with its full npm specifier.
 *
 * @module
 */

import lz4js from "npm:lz4js@0.2.0";
import { lz4CompressBlock } from "../src/formats/apr/_lz4.ts";
import { encodeApr } from "../src/formats/apr/encode_apr.ts";
import { encodeQ4K } from "../src/quant/mod.ts";

const reference = lz4js as unknown as {
  compressBound(n: number): number;
  compressBlock(s: Uint8Array, d: Uint8Array, i: number, n: number, h: Uint32Array): number;
};

function referenceCompress(src: Uint8Array): number {
  const dst = new Uint8Array(reference.compressBound(src.length) + 16);
  return reference.compressBlock(src, dst, 0, src.length, new Uint32Array(1 << 16));
}

// Deterministic LLM-like weights (sum of uniforms, scale ~0.02).
const N = 1 << 20;
const values = new Float32Array(N);
let seed = 7;
for (let i = 0; i < N; i++) {
  let s = 0;
  for (let k = 0; k < 4; k++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    s += seed / 2 ** 32;
  }
  values[i] = (s - 2) * 0.02;
}
const bf16 = new Uint8Array(N * 2);
const f32 = new Uint32Array(values.buffer);
for (let i = 0; i < N; i++) {
  bf16[2 * i] = (f32[i]! >>> 16) & 0xff;
  bf16[2 * i + 1] = f32[i]! >>> 24;
}
const shard = await Deno.readFile(
  new URL("../examples/tiny-llama/model-00001-of-00002.safetensors", import.meta.url),
);
const inputs: Record<string, Uint8Array> = {
  // The demo model's first shard as written (random BF16 weights: little to find).
  "tiny-llama shard (BF16, 0.3 MiB)": shard,
  // An APR image of BF16 weights: what `--compress lz4` compresses.
  "APR, synthetic BF16 weights (2 MiB)": encodeApr({
    metadata: { name: "bench" },
    tensors: [{ name: "w", dtype: "BF16", shape: [1024, 1024], data: bf16 }],
  }),
  "Q4_K blocks (0.56 MiB)": encodeQ4K(values),
  "zeros (4 MiB)": new Uint8Array(4 << 20),
};

for (const [name, input] of Object.entries(inputs)) {
  console.log(
    `${name}: aprkit ${lz4CompressBlock(input).length} bytes, lz4js ${
      referenceCompress(input)
    } bytes, of ${input.length}`,
  );
  Deno.bench(`lz4js compressBlock: ${name}`, { group: name, baseline: true }, () => {
    referenceCompress(input);
  });
  Deno.bench(`aprkit lz4CompressBlock: ${name}`, { group: name }, () => {
    lz4CompressBlock(input);
  });
}
