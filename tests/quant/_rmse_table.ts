/**
 * Prints the per-tensor RMSE table of docs/QUANTIZATION.md:
 * `deno run --allow-read tests/quant/_rmse_table.ts`. Sources are the fixture
 * tiny-llama's F32 weights; llama.cpp's columns decode the fixture GGUFs that
 * `llama-quantize` wrote from the same F32 file.
 *
 * @module
 */

import { decodeToFloat32 } from "../../src/quant/decode.ts";
import { encodeF16 } from "../../src/quant/f16.ts";
import { encodeBf16 } from "../../src/quant/bf16.ts";
import { encodeAprQ8Tensor } from "../../src/quant/apr_q8.ts";
import { encodeAprQ4 } from "../../src/quant/apr_q4.ts";
import { encodeQ4K } from "../../src/quant/q4_k.ts";
import { encodeQ6K } from "../../src/quant/q6_k.ts";
import { loadFixture, readGgufTensors, sha256 } from "./_gguf_fixtures.ts";

function rmse(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) {
    const d = a[i]! - b[i]!;
    s += d * d;
  }
  return Math.sqrt(s / a.length);
}

const f32 = readGgufTensors("tiny-llama-f32.gguf");
const q4km = loadFixture("tiny-llama-q4_k_m");
const q6k = loadFixture("tiny-llama-q6_k");
const q80 = loadFixture("tiny-llama-q8_0");
const fmt = (x: number) => x === 0 ? "0" : x.toExponential(3);

function theirs(
  fix: ReturnType<typeof loadFixture>,
  name: string,
  type: string,
  values: Float32Array,
) {
  const m = fix.manifest.tensors.find((t) => t.name === name && t.type === type);
  if (m === undefined) return undefined;
  const raw = fix.bytes.subarray(m.abs_offset, m.abs_offset + m.n_bytes);
  return { rmse: rmse(values, decodeToFloat32(m.type, raw, m.numpy_shape)), sha: m.raw_sha256 };
}

console.log(
  "| tensor | shape | F16 | BF16 | APR_Q8 | APR_Q4 | Q8_0 (llama.cpp) | Q4_K (aprkit) | Q4_K (llama.cpp) | Q6_K (aprkit) | Q6_K (llama.cpp) | K-quant bytes identical |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|");
for (const m of q4km.manifest.tensors) {
  const t = f32.tensors.find((x) => x.name === m.name)!;
  const shape = m.numpy_shape;
  const n = shape.reduce((a, b) => a * b, 1);
  const v = new Float32Array(f32.bytes.slice(t.offset, t.offset + 4 * n).buffer);
  const dec = (dtype: Parameters<typeof decodeToFloat32>[0], bytes: Uint8Array) =>
    rmse(v, decodeToFloat32(dtype, bytes, shape));
  const q4 = encodeQ4K(v);
  const q6 = encodeQ6K(v);
  const l4 = theirs(q4km, m.name, "Q4_K", v);
  const l6 = theirs(q6k, m.name, "Q6_K", v);
  const l8 = theirs(q80, m.name, "Q8_0", v);
  const same = [
    l4 === undefined ? "" : `Q4_K ${sha256(q4) === l4.sha ? "yes" : "no"}`,
    l6 === undefined ? "" : `Q6_K ${sha256(q6) === l6.sha ? "yes" : "no"}`,
  ].filter((s) => s !== "").join(", ");
  console.log(
    `| ${m.name} | [${shape}] | ${fmt(dec("F16", encodeF16(v)))} | ${
      fmt(dec("BF16", encodeBf16(v)))
    } | ${fmt(dec("APR_Q8", encodeAprQ8Tensor(v)))} | ${fmt(dec("APR_Q4", encodeAprQ4(v)))} | ${
      l8 ? fmt(l8.rmse) : "—"
    } | ${fmt(dec("Q4_K", q4))} | ${l4 ? fmt(l4.rmse) : "—"} | ${fmt(dec("Q6_K", q6))} | ${
      l6 ? fmt(l6.rmse) : "—"
    } | ${same || "—"} |`,
  );
}
