/**
 * llama-quantize presets, end to end (a whole-run benchmark for `deno run`,
 * not a `deno bench` file).
 *
 * Speed: the synthetic benchmark model (`_synthetic_model.ts`, BF16, default
 * 0.75 GiB) to a Q4_K_M GGUF in one pass (`apr convert … --quantize q4_k_m`)
 * against the two-step flow llama.cpp users run (convert_hf_to_gguf.py writes
 * a full-size GGUF, then llama-quantize reads it back): here both steps are
 * aprkit's own (`apr convert` to a BF16 GGUF, then that file to Q4_K_M), so
 * the comparison isolates what the intermediate file costs. Each step runs in
 * a fresh process that reports its wall time and peak RSS (VmHWM). Both
 * outputs must hold the same tensor bytes.
 *
 * Quality: RMSE against the source values of every quantized weight, per
 * preset, on the tiny-qwen2 fixture (ours and llama-quantize's files) and on
 * a small synthetic model (`--quality-gib`, default 0.55).
 *
 * Usage:
 *   deno run -A bench/preset_measure.ts [--gib 0.75] [--quality-gib 0.55]
 *     [--skip speed,quality,qwen,synthetic] [--out bench/out]
 *
 * @module
 */

import { parseArgs } from "node:util";
import { writeSyntheticModel } from "./_synthetic_model.ts";
import { convertModel } from "../src/pipeline/convert_model.ts";
import { openModel } from "../src/pipeline/open_model.ts";
import { decodeStream } from "../src/quant/decode.ts";
import { hfToGgufName } from "../src/formats/gguf/names.ts";
import type { QuantizeTarget } from "../src/quant/plan_quantization.ts";

const MiB = 1024 * 1024;
const PRESETS: QuantizeTarget[] = ["q8_0", "q6_k", "q5_k_m", "q5_k_s", "q4_k_m", "q4_k_s"];
const QUANTIZED = new Set(["Q4_K", "Q5_K", "Q6_K", "Q8_0", "Q5_0", "Q5_1"]);

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      gib: { type: "string", default: "0.75" },
      "quality-gib": { type: "string", default: "0.55" },
      out: { type: "string", default: "bench/out" },
      skip: { type: "string", default: "" },
      child: { type: "string" },
      output: { type: "string" },
      quantize: { type: "string" },
    },
  });

  if (values.child !== undefined) {
    // Child mode: one conversion in this process, then its peak RSS.
    const t0 = performance.now();
    await convertModel(values.child, values.output!, {
      force: true,
      ...(values.quantize ? { quantize: values.quantize as QuantizeTarget } : {}),
    });
    const seconds = (performance.now() - t0) / 1000;
    const status = await Deno.readTextFile("/proc/self/status");
    const hwmKiB = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN);
    console.log(JSON.stringify({ seconds, peakRssMiB: hwmKiB / 1024 }));
    Deno.exit(0);
  }

  const skip = new Set(values.skip!.split(","));
  const dir = values.out!;
  await Deno.mkdir(dir, { recursive: true });
  if (!skip.has("speed")) await speed(dir, Number(values.gib));
  if (!skip.has("quality") && !skip.has("qwen")) await qwenQuality(dir);
  if (!skip.has("quality") && !skip.has("synthetic")) {
    await syntheticQuality(dir, Number(values["quality-gib"]));
  }
}

async function child(
  source: string,
  output: string,
  quantize?: string,
): Promise<{ seconds: number; peakRssMiB: number; bytes: number }> {
  await new Deno.Command("sync").output();
  const args = [
    "run",
    "-A",
    new URL(import.meta.url).pathname,
    "--child",
    source,
    "--output",
    output,
  ];
  if (quantize !== undefined) args.push("--quantize", quantize);
  const out = await new Deno.Command(Deno.execPath(), { args, stderr: "inherit" }).output();
  if (!out.success) throw new Error(`conversion of ${source} failed`);
  const report = JSON.parse(new TextDecoder().decode(out.stdout));
  return { ...report, bytes: (await Deno.stat(output)).size };
}

async function speed(dir: string, gib: number): Promise<void> {
  const model = `${dir}/synthetic-bf16`;
  const shards = await writeSyntheticModel(model, Math.round(gib * 1024 * MiB));
  const sourceBytes = (await Promise.all(shards.map((n) => Deno.stat(`${model}/${n}`))))
    .reduce((s, i) => s + i.size, 0);
  // Warm the page cache.
  await new Deno.Command("sh", { args: ["-c", `cat '${model}'/*.safetensors > /dev/null`] })
    .output();
  const one = await child(model, `${dir}/one-pass-Q4_K_M.gguf`, "q4_k_m");
  const step1 = await child(model, `${dir}/intermediate-bf16.gguf`);
  const step2 = await child(
    `${dir}/intermediate-bf16.gguf`,
    `${dir}/two-step-Q4_K_M.gguf`,
    "q4_k_m",
  );
  const same = await sameTensors(`${dir}/one-pass-Q4_K_M.gguf`, `${dir}/two-step-Q4_K_M.gguf`);
  const f = (s: number) => `${s.toFixed(2)} s`;
  const m = (b: number) => `${(b / MiB).toFixed(0)} MiB`;
  console.log(`\nsource: ${m(sourceBytes)} BF16 (${shards.length} shards)`);
  console.log("| flow | step | wall time | peak RSS | written |");
  console.log("| --- | --- | --- | --- | --- |");
  console.log(
    `| one pass | apr convert --quantize q4_k_m | ${f(one.seconds)} | ${
      m(one.peakRssMiB * MiB)
    } | ${m(one.bytes)} |`,
  );
  console.log(
    `| two steps | 1. full-size GGUF (BF16) | ${f(step1.seconds)} | ${
      m(step1.peakRssMiB * MiB)
    } | ${m(step1.bytes)} |`,
  );
  console.log(
    `| two steps | 2. GGUF → Q4_K_M | ${f(step2.seconds)} | ${m(step2.peakRssMiB * MiB)} | ${
      m(step2.bytes)
    } |`,
  );
  console.log(
    `| two steps | total | ${f(step1.seconds + step2.seconds)} | | ${
      m(step1.bytes + step2.bytes)
    } |`,
  );
  console.log(`same tensor bytes: ${same}`);
  await Deno.remove(`${dir}/intermediate-bf16.gguf`);
}

/** Whether two GGUF files hold the same tensors (names, types, bytes). */
async function sameTensors(a: string, b: string): Promise<boolean> {
  const ma = await openModel(a, { keepNames: true });
  const mb = await openModel(b, { keepNames: true });
  try {
    for (const t of ma.header.tensors) {
      const u = mb.header.tensors.find((x) => x.name === t.name);
      if (u === undefined || u.dtype !== t.dtype) return false;
      const x = await ma.tensor(t.name).bytes();
      const y = await mb.tensor(t.name).bytes();
      if (x.length !== y.length || !x.every((v, i) => v === y[i])) return false;
    }
    return ma.header.tensors.length === mb.header.tensors.length;
  } finally {
    await ma.close();
    await mb.close();
  }
}

/**
 * RMSE of every quantized tensor of `quantized` against `source`, over all
 * their values, and over the block tensors alone (without the embedding and
 * output, which every K preset stores as Q6_K); bits per weight.
 */
async function rmse(
  source: string,
  quantized: string,
): Promise<{ rmse: number; blocks: number; bpw: number }> {
  const src = await openModel(source);
  const q = await openModel(quantized, { keepNames: true });
  let sum = 0;
  let count = 0;
  let bytes = 0;
  let blockSum = 0;
  let blockCount = 0;
  try {
    const byGguf = new Map(src.header.tensors.map((t) => [hfToGgufName(t.name), t]));
    for (const t of q.header.tensors) {
      if (!QUANTIZED.has(t.dtype)) continue;
      const s = byGguf.get(t.name);
      if (s === undefined) throw new Error(`${t.name} is not in ${source}`);
      const e = await squaredError(
        decodeStream(s, src.tensor(s.name).stream()),
        decodeStream(t, q.tensor(t.name).stream()),
      );
      const n = t.shape.reduce((a, b) => a * b, 1);
      sum += e;
      count += n;
      bytes += t.byteLength;
      if (t.name.startsWith("blk.")) {
        blockSum += e;
        blockCount += n;
      }
    }
  } finally {
    await src.close();
    await q.close();
  }
  return {
    rmse: Math.sqrt(sum / count),
    blocks: Math.sqrt(blockSum / blockCount),
    bpw: (8 * bytes) / count,
  };
}

/** Sum of squared differences of two value streams of the same length, in bounded memory. */
async function squaredError(
  a: ReadableStream<Float32Array>,
  b: ReadableStream<Float32Array>,
): Promise<number> {
  const ra = a.getReader();
  const rb = b.getReader();
  let ca: Float32Array = new Float32Array(0);
  let cb: Float32Array = new Float32Array(0);
  let oa = 0;
  let ob = 0;
  let sum = 0;
  for (;;) {
    if (oa === ca.length) {
      const r = await ra.read();
      if (r.done) break;
      ca = r.value;
      oa = 0;
    }
    if (ob === cb.length) {
      const r = await rb.read();
      if (r.done) throw new Error("the quantized tensor has fewer values");
      cb = r.value;
      ob = 0;
    }
    const n = Math.min(ca.length - oa, cb.length - ob);
    for (let i = 0; i < n; i++) {
      const d = ca[oa + i]! - cb[ob + i]!;
      sum += d * d;
    }
    oa += n;
    ob += n;
  }
  return sum;
}

async function qwenQuality(dir: string): Promise<void> {
  const fixture = new URL("../tests/testdata/", import.meta.url).pathname;
  const qwen = `${fixture}hf/tiny-qwen2`;
  const llamaFiles: Partial<Record<QuantizeTarget, string>> = {
    q8_0: "tiny-qwen2-Q8_0.gguf",
    q6_k: "tiny-qwen2-Q6_K.gguf",
    q4_k_m: "tiny-qwen2-Q4_K_M.gguf",
    q4_k_s: "tiny-qwen2-Q4_K_S.gguf",
  };
  console.log("\ntiny-qwen2 (BF16 checkpoint), quantized weights only:");
  console.log("| preset | bits/weight | RMSE (aprkit) | RMSE (llama-quantize) |");
  console.log("| --- | --- | --- | --- |");
  for (const preset of [...PRESETS, "q4_k_m+imatrix" as QuantizeTarget]) {
    const imatrix = preset.endsWith("+imatrix");
    const to = preset.replace("+imatrix", "") as QuantizeTarget;
    const out = `${dir}/qwen-${preset}.gguf`;
    await convertModel(qwen, out, {
      quantize: to,
      force: true,
      ...(imatrix ? { imatrix: `${fixture}gguf/tiny-qwen2-imatrix.dat` } : {}),
    });
    const ours = await rmse(qwen, out);
    const theirsFile = imatrix ? "tiny-qwen2-Q4_K_M-imatrix.gguf" : llamaFiles[to];
    const theirs = theirsFile === undefined
      ? undefined
      : await rmse(qwen, `${fixture}gguf/${theirsFile}`);
    console.log(
      `| ${preset} | ${ours.bpw.toFixed(2)} | ${ours.rmse.toExponential(4)} | ${
        theirs?.rmse.toExponential(4) ?? "— (no fixture)"
      } |`,
    );
    await Deno.remove(out);
  }
}

async function syntheticQuality(dir: string, gib: number): Promise<void> {
  const model = `${dir}/synthetic-quality`;
  await writeSyntheticModel(model, Math.round(gib * 1024 * MiB));
  console.log(`\nsynthetic benchmark model (${gib} GiB BF16), quantized weights only:`);
  console.log("| preset | bits/weight | RMSE | RMSE, blk.* tensors only |");
  console.log("| --- | --- | --- | --- |");
  for (const preset of PRESETS) {
    const out = `${dir}/synthetic-${preset}.gguf`;
    await convertModel(model, out, { quantize: preset, force: true });
    const r = await rmse(model, out);
    console.log(
      `| ${preset} | ${r.bpw.toFixed(2)} | ${r.rmse.toExponential(4)} | ${
        r.blocks.toExponential(4)
      } |`,
    );
    await Deno.remove(out);
  }
  await Deno.remove(model, { recursive: true });
}
