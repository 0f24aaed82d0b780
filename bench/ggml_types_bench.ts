/**
 * Decoders of the ggml types aprkit reads but does not write (i-quants,
 * ternary, FP4, Q1_0/Q2_0; issue 25 item 4), TypeScript and WebAssembly,
 * against the K-quant decoders (Q4_K, Q6_K) on the same 1 Mi values.
 * Inputs are patterned bytes with ordinary f16 scales (0x20 in each scale's
 * high byte): a decoder's cost does not depend on the values.
 *
 * Run: deno bench --allow-read bench/ggml_types_bench.ts
 *
 * @module
 */

import { DTYPES } from "../src/dtype.ts";
import { decoderKernel, type FastDecodeTarget } from "../src/quant/kernels.ts";
import { wasmKernels } from "../src/quant/wasm/kernels.ts";

const N = 1 << 20;

/** Each type and the byte offsets (in a block) of its f16 scales' high bytes. */
const TYPES: [FastDecodeTarget, number[]][] = [
  ["Q4_K", [1, 3]],
  ["Q6_K", [209]],
  ["IQ2_XXS", [1]],
  ["IQ2_XS", [1]],
  ["IQ2_S", [1]],
  ["IQ3_XXS", [1]],
  ["IQ3_S", [1]],
  ["IQ1_S", [1]],
  ["IQ1_M", [55]],
  ["IQ4_NL", [1]],
  ["IQ4_XS", [1]],
  ["TQ1_0", [53]],
  ["TQ2_0", [65]],
  ["MXFP4", []],
  ["NVFP4", []],
  ["Q1_0", [1]],
  ["Q2_0", [1]],
];

function patterned(type: FastDecodeTarget, scaleHighBytes: number[]): Uint8Array {
  const { blockBytes, blockElements } = DTYPES[type];
  const b = new Uint8Array((N / blockElements) * blockBytes).map((_, i) => (i * 11) & 255);
  for (let o = 0; o < b.length; o += blockBytes) for (const at of scaleHighBytes) b[o + at] = 0x20;
  return b;
}

const out = new Float32Array(N);
const wasmRuns = wasmKernels() !== undefined;

for (const [type, scales] of TYPES) {
  const bytes = patterned(type, scales);
  const baseline = type === "Q4_K";
  const ts = decoderKernel(type, "typescript");
  Deno.bench(`decode ${type} (1 Mi elements)`, { group: "ggml decode ts", baseline }, () => {
    ts(bytes, out);
  });
  if (wasmRuns) {
    const wasm = decoderKernel(type, "wasm");
    Deno.bench(
      `decode ${type} wasm (1 Mi elements)`,
      { group: "ggml decode wasm", baseline },
      () => {
        wasm(bytes, out);
      },
    );
  }
}
