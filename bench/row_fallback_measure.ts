/**
 * What a K-quant tensor whose rows are not whole 256-value super-blocks
 * should become in APR (issue 19 item 1): size and error of each candidate
 * every APR reader decodes the same way (F16, APR_Q8, APR_Q4), against the
 * row-padded K-quant only realizar's transformer loader decodes right.
 * Every float weight a `--quantize q4_k` / `q6_k` import would quantize and
 * whose rows are not whole super-blocks is encoded in each type and decoded
 * again; errors are relative to the tensor's RMS. The figures are in
 * docs/QUANTIZATION.md ("Rows that are not whole super-blocks").
 *
 * Usage: deno run -A bench/row_fallback_measure.ts [model ...]
 * (default: examples/tiny-llama, tests/testdata/gguf/llama-2-tiny-random.gguf,
 * tests/testdata/hf/tiny-qwen2, burn's trained MNIST CNN)
 *
 * @module
 */

import { openModel } from "../src/pipeline/open_model.ts";
import { encodeFromFloat32 } from "../src/quant/encode.ts";
import { decodeToFloat32 } from "../src/quant/decode.ts";
import { elementCount } from "../src/dtype.ts";
import type { DType } from "../src/dtype.ts";
import { isNormOrBias, MIN_QUANTIZE_ELEMENTS } from "../src/quant/plan_quantization.ts";

const CANDIDATES: DType[] = ["Q4_K", "Q6_K", "F16", "APR_Q8", "APR_Q4"];
const here = new URL("..", import.meta.url).pathname;
const models = Deno.args.length > 0 ? Deno.args : [
  `${here}examples/tiny-llama`,
  `${here}tests/testdata/gguf/llama-2-tiny-random.gguf`,
  `${here}tests/testdata/hf/tiny-qwen2`,
  `${here}tests/testdata/safetensors/burn/mnist.safetensors`,
];

/**
 * A weight matrix with the heavy tail of trained models (random fixtures have
 * none): seeded normal values, one in a thousand an outlier of 20 sigma.
 * APR_Q8's one scale per tensor spends its range on the outliers.
 */
function heavyTailed(rows: number, cols: number): Float32Array {
  let seed = 19;
  const random = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const out = new Float32Array(rows * cols);
  for (let i = 0; i < out.length; i++) {
    const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    out[i] = random() < 0.001 ? 20 * Math.sign(normal) : normal;
  }
  return out;
}

function report(title: string, tensors: { shape: number[]; values: Float32Array }[]): void {
  const totals = new Map<DType, { bytes: number; sq: number; max: number }>();
  let values = 0;
  let sourceSq = 0;
  for (const { shape, values: x } of tensors) {
    const n = x.length;
    let ss = 0;
    for (const v of x) ss += v * v;
    const rms = Math.sqrt(ss / n) || 1;
    values += n;
    sourceSq += ss;
    for (const dtype of CANDIDATES) {
      const bytes = encodeFromFloat32(dtype, x, shape);
      const y = decodeToFloat32(dtype, bytes, shape);
      let sq = 0;
      let max = 0;
      for (let i = 0; i < n; i++) {
        const e = Math.abs(y[i]! - x[i]!);
        sq += e * e;
        max = Math.max(max, e / rms);
      }
      const t = totals.get(dtype) ?? { bytes: 0, sq: 0, max: 0 };
      t.bytes += bytes.length;
      t.sq += sq;
      t.max = Math.max(t.max, max);
      totals.set(dtype, t);
    }
  }
  console.log(`\n${title}: ${tensors.length} tensor(s), ${values} values`);
  console.log("type     bytes      bits/value  RMSE/RMS   max err/RMS");
  for (const [dtype, t] of totals) {
    console.log(
      `${dtype.padEnd(8)} ${String(t.bytes).padEnd(10)} ${
        (8 * t.bytes / values).toFixed(2).padEnd(11)
      } ${Math.sqrt(t.sq / sourceSq).toExponential(2).padEnd(10)} ${t.max.toExponential(2)}`,
    );
  }
}

for (const location of models) {
  const model = await openModel(location);
  try {
    const tensors: { shape: number[]; values: Float32Array }[] = [];
    for (const info of model.header.tensors) {
      const cols = info.shape[info.shape.length - 1] ?? 1;
      const n = elementCount(info.shape);
      if (
        info.shape.length < 2 || cols % 256 === 0 || isNormOrBias(info.name) ||
        n < MIN_QUANTIZE_ELEMENTS
      ) continue;
      tensors.push({ shape: [...info.shape], values: await model.tensor(info.name).toFloat32() });
    }
    report(`${location} (rows not whole super-blocks)`, tensors);
  } finally {
    await model.close();
  }
}

report("synthetic heavy-tailed [1024, 320]", [{
  shape: [1024, 320],
  values: heavyTailed(1024, 320),
}]);
