/**
 * One pass against llama-quantize, per preset, in CPU-seconds and peak RSS
 * (a whole-run benchmark for `deno run`, not a `deno bench` file).
 *
 * Writes a llama-shaped BF16 checkpoint (`_llama_shaped_model.ts`, default
 * the 0.5B shape), converts it once to a BF16 GGUF (llama-quantize's input),
 * then runs, in interleaved rounds, for each preset:
 *
 * - `apr convert DIR -o x.gguf --quantize P` (default encoder workers)
 * - the same with `--threads 0` (no workers)
 * - `llama-quantize bf16.gguf y.gguf P 2`
 *
 * each in a fresh process under `/usr/bin/time`. Reports the medians of
 * user+sys CPU-seconds and of peak RSS, apr's CPU against llama-quantize's
 * (ratios from the same rounds hold up under load where wall times do not),
 * the load averages, and whether the first round's files hold the same tensor
 * bytes. Deletes everything it wrote.
 *
 * Usage:
 *   deno run -A bench/llama_quantize_measure.ts --llama-quantize PATH
 *     [--shape 0.5B] [--presets Q8_0,Q4_K_M,Q6_K] [--rounds 3] [--out bench/out/lq]
 *
 * @module
 */

import { parseArgs } from "node:util";
import { SHAPES, writeLlamaShapedModel } from "./_llama_shaped_model.ts";
import { measure, type Measured, median } from "./_measure.ts";
import { compareTensors } from "./_same_tensors.ts";

const CLI = new URL("../cli.ts", import.meta.url).pathname;

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      "llama-quantize": { type: "string" },
      shape: { type: "string", default: "0.5B" },
      presets: { type: "string", default: "Q8_0,Q4_K_M,Q6_K" },
      rounds: { type: "string", default: "3" },
      out: { type: "string", default: "bench/out/lq" },
    },
  });
  const llamaQuantize = values["llama-quantize"];
  const shape = SHAPES[values.shape!];
  if (llamaQuantize === undefined || shape === undefined) {
    console.error("usage: llama_quantize_measure.ts --llama-quantize PATH [--shape 0.5B|1.5B|7B]");
    Deno.exit(2);
  }
  const dir = values.out!;
  const model = `${dir}/model`;
  const bf16 = `${dir}/bf16.gguf`;
  await writeLlamaShapedModel(model, shape);
  const apr = [Deno.execPath(), "run", "-A", CLI];
  try {
    await measure([...apr, "convert", model, "-o", bf16, "--force"], [bf16]);
    const presets = values.presets!.split(",");
    const runs = new Map<string, Measured[]>();
    const add = (key: string, m: Measured) => runs.set(key, [...(runs.get(key) ?? []), m]);
    const same = new Map<string, string>();
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const p of presets) {
        const ours = `${dir}/apr-${p}.gguf`;
        const theirs = `${dir}/llama-${p}.gguf`;
        add(
          `${p} apr`,
          await measure([...apr, "convert", model, "-o", ours, "--quantize", p, "--force"], [ours]),
        );
        add(
          `${p} apr --threads 0`,
          await measure(
            [...apr, "convert", model, "-o", ours, "--quantize", p, "--force", "--threads", "0"],
            [ours],
          ),
        );
        add(`${p} llama-quantize`, await measure([llamaQuantize, bf16, theirs, p, "2"], [theirs]));
        if (round === 0) {
          const r = await compareTensors(ours, theirs);
          same.set(p, `${r.tensors - r.differing.length}/${r.tensors}`);
        }
        await Deno.remove(ours);
        await Deno.remove(theirs);
      }
    }
    console.log(`shape ${values.shape}, medians of ${values.rounds} interleaved rounds`);
    console.log("| preset | run | CPU-s | / llama-quantize | peak RSS | loads | same bytes |");
    console.log("| --- | --- | --- | --- | --- | --- | --- |");
    for (const p of presets) {
      const ref = median(runs.get(`${p} llama-quantize`)!.map((m) => m.cpuS));
      for (const run of ["apr", "apr --threads 0", "llama-quantize"]) {
        const ms = runs.get(`${p} ${run}`)!;
        const cpu = median(ms.map((m) => m.cpuS));
        console.log(
          `| ${p} | ${run} | ${cpu.toFixed(2)} | ${(cpu / ref).toFixed(2)} | ${
            median(ms.map((m) => m.peakRssMiB)).toFixed(0)
          } MiB | ${ms.map((m) => m.load.toFixed(1)).join(", ")} | ${same.get(p)} |`,
        );
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
