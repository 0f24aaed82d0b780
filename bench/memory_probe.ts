/**
 * Where a conversion's memory goes, in-process: runs `convertModel` on a
 * llama-shaped BF16 folder while sampling `Deno.memoryUsage()` (RSS, the V8
 * heap, and `external`: ArrayBuffer memory of this thread) every few
 * milliseconds, and reports each one's peak. Several `--quantize` types
 * (`Q4_K_M,Q6_K`) write one output each from one read (`convertModels`). With `--gc-ms N` (and
 * `--v8-flags=--expose-gc`) it also forces a full collection every N ms: a
 * peak that drops then was garbage waiting for the collector, memory that
 * depends on when the GC runs.
 *
 * Usage:
 *   deno run -A [--v8-flags=--expose-gc] bench/memory_probe.ts [--shape 7B]
 *     [--layers 2] [--real-layers 2] [--quantize Q4_K_M] [--gc-ms 0] [--out bench/out/mp]
 *     [--threads N] [--keep]
 *
 * @module
 */

import { parseArgs } from "node:util";
import { SHAPES, writeLlamaShapedModel } from "./_llama_shaped_model.ts";
import { convertModel, convertModels } from "../mod.ts";

const MiB = 1 << 20;

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      shape: { type: "string", default: "7B" },
      layers: { type: "string" },
      "real-layers": { type: "string" },
      quantize: { type: "string", default: "Q4_K_M" },
      "gc-ms": { type: "string", default: "0" },
      "sample-ms": { type: "string", default: "10" },
      threads: { type: "string" },
      out: { type: "string", default: "bench/out/mp" },
      keep: { type: "boolean", default: false },
    },
  });
  const base = SHAPES[values.shape!]!;
  const shape = { ...base, layers: Number(values.layers ?? base.layers) };
  const dir = values.out!;
  const model = `${dir}/model`;
  const exists = await Deno.stat(`${model}/config.json`).then(() => true, () => false);
  if (!exists) await writeLlamaShapedModel(model, shape, Number(values["real-layers"] ?? Infinity));
  const peak = { rss: 0, heapUsed: 0, heapTotal: 0, external: 0 };
  const sample = () => {
    const m = Deno.memoryUsage();
    for (const k of ["rss", "heapUsed", "heapTotal", "external"] as const) {
      if (m[k] > peak[k]) peak[k] = m[k];
    }
  };
  const sampler = setInterval(sample, Number(values["sample-ms"]));
  const gc = (globalThis as { gc?: () => void }).gc;
  const gcMs = Number(values["gc-ms"]);
  const collector = gcMs > 0 && gc !== undefined ? setInterval(() => gc(), gcMs) : undefined;
  const t0 = performance.now();
  try {
    const types = values.quantize!.toLowerCase().split(",") as "q4_k_m"[];
    const threads = values.threads !== undefined ? { threads: Number(values.threads) } : {};
    // Several types: several outputs from one read (`--quantize A,B -o 'm-{QUANT}.gguf'`).
    if (types.length > 1) {
      await convertModels(
        model,
        types.map((quantize) => ({ output: `${dir}/out-${quantize}.gguf`, quantize })),
        { format: "gguf", force: true, ...threads },
      );
    } else {
      await convertModel(model, `${dir}/out.gguf`, {
        format: "gguf",
        quantize: types[0]!,
        force: true,
        ...threads,
      });
    }
  } finally {
    clearInterval(sampler);
    if (collector !== undefined) clearInterval(collector);
    sample();
    for (const f of Deno.readDirSync(dir)) {
      if (f.name.startsWith("out")) await Deno.remove(`${dir}/${f.name}`).catch(() => {});
    }
    if (!values.keep) await Deno.remove(dir, { recursive: true });
  }
  const f = (n: number) => `${(n / MiB).toFixed(0)} MiB`;
  console.log(
    `${values.shape} × ${shape.layers} layers, ${values.quantize}, gc every ${gcMs || "—"} ms: ` +
      `peak rss ${f(peak.rss)}, heapUsed ${f(peak.heapUsed)}, heapTotal ${f(peak.heapTotal)}, ` +
      `external ${f(peak.external)}; ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
}
