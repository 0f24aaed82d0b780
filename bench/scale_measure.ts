/**
 * Cost against model size (a whole-run benchmark for `deno run`, not a
 * `deno bench` file). For each llama shape (`_llama_shaped_model.ts`: 0.5B,
 * 1.5B, 7B) it writes a BF16 checkpoint, runs
 *
 * - `apr convert DIR -o x.gguf --quantize Q4_K_M`
 * - `apr import DIR -o x.apr --quantize q4_k`
 * - `apr import DIR -o x.apr` (no quantization)
 *
 * each in a fresh process under `/usr/bin/time` (wall, user+sys CPU-seconds,
 * peak RSS), notes the bytes written and the load average, deletes the
 * outputs and the checkpoint, and writes a JSON report, a Markdown table and
 * an SVG chart of CPU-seconds and peak RSS against model size.
 *
 * With `--llama DIR` (a llama.cpp checkout with `build/bin/llama-quantize`)
 * and `--python PY` (a Python with torch, transformers and gguf-py), it also
 * runs llama.cpp's two steps on the same checkpoint: `convert_hf_to_gguf.py
 * --outtype bf16`, then `llama-quantize … Q4_K_M`, with the same measures and
 * the peak extra disk (the intermediate BF16 GGUF).
 *
 * Needs Linux (`/usr/bin/time`) and free disk of ~2.2× the largest
 * checkpoint (13.5 GB for 7B; ~2× more with `--llama`).
 *
 * Usage:
 *   deno run -A bench/scale_measure.ts [--shapes 0.5B,1.5B,7B] [--out bench/out/scale]
 *     [--chart docs/scale.svg] [--llama /path/to/llama.cpp --python /path/to/python]
 *     [--merge earlier/scale.json]
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  llamaTensors,
  parameterCount,
  SHAPES,
  writeLlamaShapedModel,
} from "./_llama_shaped_model.ts";
import { measure, type Measured } from "./_measure.ts";

const CLI = new URL("../cli.ts", import.meta.url).pathname;

/** One measured command. */
interface Run extends Measured {
  shape: string;
  parameters: number;
  step: string;
}

async function benchShape(
  name: string,
  dir: string,
  llama: { dir: string; python: string } | undefined,
): Promise<Run[]> {
  const shape = SHAPES[name];
  if (shape === undefined) throw new Error(`unknown shape ${name} (have ${Object.keys(SHAPES)})`);
  const model = `${dir}/${name}-bf16`;
  const parameters = parameterCount(shape);
  console.error(`${name}: writing ${(2 * parameters / 2 ** 30).toFixed(2)} GiB BF16 checkpoint…`);
  await writeLlamaShapedModel(model, shape);
  const runs: Run[] = [];
  const apr = ["deno", "run", "-A", CLI];
  const steps: [string, string[], string][] = [
    ["apr convert --quantize Q4_K_M", [
      "convert",
      model,
      "-o",
      `${dir}/x.gguf`,
      "--quantize",
      "Q4_K_M",
    ], `${dir}/x.gguf`],
    [
      "apr import --quantize q4_k",
      ["import", model, "-o", `${dir}/x.apr`, "--quantize", "q4_k"],
      `${dir}/x.apr`,
    ],
    ["apr import (none)", ["import", model, "-o", `${dir}/y.apr`], `${dir}/y.apr`],
  ];
  try {
    for (const [step, args, output] of steps) {
      const m = await measure([Deno.execPath(), ...apr.slice(1), ...args, "--force"], [output]);
      runs.push({ shape: name, parameters, step, ...m });
      console.error(`${name} ${step}: ${JSON.stringify(m)}`);
      await Deno.remove(output, { recursive: true });
    }
    if (llama !== undefined) runs.push(...await llamaPath(name, parameters, model, dir, llama));
  } finally {
    await Deno.remove(model, { recursive: true });
  }
  return runs;
}

/** llama.cpp's two steps: HF → BF16 GGUF, then llama-quantize to Q4_K_M. */
async function llamaPath(
  name: string,
  parameters: number,
  model: string,
  dir: string,
  llama: { dir: string; python: string },
): Promise<Run[]> {
  const bf16 = `${dir}/llama-bf16.gguf`;
  const q = `${dir}/llama-Q4_K_M.gguf`;
  const runs: Run[] = [];
  try {
    const a = await measure(
      [
        llama.python,
        `${llama.dir}/convert_hf_to_gguf.py`,
        model,
        "--outtype",
        "bf16",
        "--outfile",
        bf16,
      ],
      [bf16],
      { PYTHONPATH: `${llama.dir}/gguf-py` },
    );
    runs.push({
      shape: name,
      parameters,
      step: "llama.cpp convert_hf_to_gguf.py (BF16)",
      ...a,
    });
    const b = await measure([`${llama.dir}/build/bin/llama-quantize`, bf16, q, "Q4_K_M"], [q]);
    runs.push({ shape: name, parameters, step: "llama.cpp llama-quantize Q4_K_M", ...b });
    console.error(`${name} llama.cpp: ${JSON.stringify([a, b])}`);
  } finally {
    await Deno.remove(bf16).catch(() => {});
    await Deno.remove(q).catch(() => {});
  }
  return runs;
}

function table(runs: Run[]): string {
  const lines = [
    "| shape (params) | step | wall | CPU-s | peak RSS | written | load |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const r of runs) {
    lines.push(
      `| ${r.shape} (${(r.parameters / 1e9).toFixed(2)} B) | ${r.step} | ${
        r.wallS.toFixed(1)
      } s | ` +
        `${r.cpuS.toFixed(1)} | ${r.peakRssMiB.toFixed(0)} MiB | ${
          (r.writtenBytes / 2 ** 30).toFixed(2)
        } GiB | ${r.load.toFixed(1)} |`,
    );
  }
  return lines.join("\n");
}

/** Two panels: CPU-seconds and peak RSS against parameters, one line per apr step. */
function chart(runs: Run[]): string {
  const steps = [...new Set(runs.filter((r) => r.step.startsWith("apr")).map((r) => r.step))];
  const colors = ["#1f77b4", "#d62728", "#2ca02c"];
  const W = 360, H = 240, pad = 48;
  const maxP = Math.max(...runs.map((r) => r.parameters));
  const panel = (x0: number, title: string, value: (r: Run) => number, unit: string, floor = 0) => {
    const apr = runs.filter((r) => r.step.startsWith("apr"));
    const maxV = Math.max(floor, ...apr.map(value)) * 1.1;
    const sx = (p: number) => Math.round(10 * (x0 + pad + (p / maxP) * (W - pad - 10))) / 10;
    const sy = (v: number) => Math.round(10 * (H - pad + 10 - (v / maxV) * (H - pad - 20))) / 10;
    let s = `<text x="${
      x0 + W / 2
    }" y="16" text-anchor="middle" font-weight="bold">${title}</text>`;
    s += `<line x1="${sx(0)}" y1="${sy(0)}" x2="${sx(maxP)}" y2="${sy(0)}" stroke="#000"/>`;
    s += `<line x1="${sx(0)}" y1="${sy(0)}" x2="${sx(0)}" y2="${sy(maxV)}" stroke="#000"/>`;
    for (let i = 0; i <= 4; i++) {
      const v = (maxV / 4) * i;
      s += `<text x="${sx(0) - 4}" y="${sy(v) + 4}" text-anchor="end" font-size="10">${
        v.toFixed(0)
      }</text>`;
    }
    s += `<text x="${x0 + 12}" y="${H / 2}" font-size="10" transform="rotate(-90 ${x0 + 12} ${
      H / 2
    })" text-anchor="middle">${unit}</text>`;
    for (const [shape, p] of new Map(runs.map((r) => [r.shape, r.parameters]))) {
      s += `<text x="${sx(p).toFixed(1)}" y="${H - pad + 24}" text-anchor="middle" ` +
        `font-size="10">${shape}</text>`;
    }
    s += `<text x="${x0 + W / 2}" y="${
      H - 8
    }" text-anchor="middle" font-size="10">parameters</text>`;
    if (floor > 0) {
      s += `<line x1="${sx(0)}" y1="${sy(floor)}" x2="${sx(maxP)}" y2="${
        sy(floor)
      }" stroke="#999" stroke-dasharray="4 3"/>`;
      s += `<text x="${sx(maxP)}" y="${
        sy(floor) - 4
      }" text-anchor="end" font-size="10" fill="#666">${floor} MiB bound</text>`;
    }
    steps.forEach((step, i) => {
      const pts = apr.filter((r) => r.step === step).sort((a, b) => a.parameters - b.parameters);
      s += `<polyline fill="none" stroke="${colors[i]}" stroke-width="2" points="${
        pts.map((r) => `${sx(r.parameters).toFixed(1)},${sy(value(r)).toFixed(1)}`).join(" ")
      }"/>`;
      for (const r of pts) {
        s += `<circle cx="${sx(r.parameters).toFixed(1)}" cy="${
          sy(value(r)).toFixed(1)
        }" r="3" fill="${colors[i]}"/>`;
      }
    });
    return s;
  };
  let legend = "";
  steps.forEach((step, i) => {
    legend += `<rect x="${20 + i * 230}" y="${H + 6}" width="12" height="4" fill="${colors[i]}"/>` +
      `<text x="${36 + i * 230}" y="${H + 12}" font-size="11">${step}</text>`;
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W}" height="${
    H + 24
  }" font-family="sans-serif" font-size="12">` +
    `<rect width="100%" height="100%" fill="#fff"/>` +
    panel(0, "CPU-seconds (user+sys)", (r) => r.cpuS, "CPU-s") +
    panel(W, "Peak RSS", (r) => r.peakRssMiB, "MiB", 160) + legend + "</svg>\n";
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      shapes: { type: "string", default: "0.5B,1.5B" },
      out: { type: "string", default: "bench/out/scale" },
      chart: { type: "string" },
      llama: { type: "string" },
      python: { type: "string", default: "python3" },
      merge: { type: "string" },
    },
  });
  const dir = values.out!;
  await Deno.mkdir(dir, { recursive: true });
  const llama = values.llama === undefined
    ? undefined
    : { dir: values.llama, python: values.python! };
  // Runs of an earlier invocation (its scale.json), e.g. the 7B shape run alone.
  const runs: Run[] = values.merge === undefined
    ? []
    : JSON.parse(await Deno.readTextFile(values.merge));
  for (const name of values.shapes!.split(",").filter((n) => n !== "")) {
    console.error(`${name}: ${llamaTensors(SHAPES[name]!).length} tensors`);
    runs.push(...await benchShape(name, dir, llama));
  }
  await Deno.writeTextFile(`${dir}/scale.json`, JSON.stringify(runs, null, 2));
  console.log(table(runs));
  if (values.chart !== undefined) {
    await Deno.writeTextFile(values.chart, chart(runs));
    // In the repository's format (deno fmt formats SVG), so a committed chart passes the check.
    await new Deno.Command(Deno.execPath(), { args: ["fmt", values.chart] }).output();
  }
}
