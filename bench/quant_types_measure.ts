/**
 * Every llama-quantize type against llama-quantize itself, on the same file
 * in the same run, in CPU-seconds and peak RSS; then four presets from one
 * read against the four single runs (issue 33's speed figures; a whole-run
 * benchmark for `deno run`, not a `deno bench` file).
 *
 * Writes a llama-shaped BF16 checkpoint (`_llama_shaped_model.ts`, default
 * the small 0.1B shape: rows of 1024 and 2816, whole super-blocks), converts
 * it once to a BF16 GGUF, and writes a seeded importance matrix for it
 * (llama-imatrix's .dat format). Then, for each type, each in a fresh process
 * under `/usr/bin/time`:
 *
 * - `apr convert bf16.gguf -o x.gguf --quantize T` (default encoder workers)
 * - `llama-quantize bf16.gguf y.gguf T 2`
 *
 * both with `--imatrix` for the i-quants and Q2_K_S (llama-quantize refuses
 * some of them without one), and whether the two files hold the same tensor
 * bytes. Last, `apr convert bf16.gguf --quantize Q4_K_M,Q5_K_M,Q6_K,Q8_0 -o
 * 'm-{QUANT}.gguf'` against the sum of those four single runs. Prints a
 * Markdown table and writes the figures as JSON. Deletes what it wrote.
 *
 * Usage:
 *   deno run -A bench/quant_types_measure.ts --llama-quantize PATH
 *     [--shape 0.1B] [--types Q4_0,…] [--imatrix-types Q3_K_M,…] [--plain-types IQ4_XS,…]
 *     [--out bench/out/qt] [--baseline DIR] [--json FILE]
 *
 * `--imatrix-types` runs those types with the importance matrix too (the
 * K-quant presets' weighted encoders); `--plain-types` runs those i-quants
 * without it (the ones llama-quantize makes without one: IQ3_S, IQ3_M,
 * IQ4_NL, IQ4_XS). `--baseline DIR` also runs DIR's `cli.ts` (a copy of an
 * earlier commit, e.g. `git archive C | tar -x -C DIR`) on each type, just
 * before this tree's, so a before/after pair is measured in the same minute
 * of the same run.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { SHAPES, writeLlamaShapedModel } from "./_llama_shaped_model.ts";
import { loadAverage, measure, type Measured } from "./_measure.ts";
import { compareTensors } from "./_same_tensors.ts";
import { openModel } from "../src/pipeline/open_model.ts";
import { LLAMA_PRESETS } from "../src/quant/llama_presets.ts";

const CLI = new URL("../cli.ts", import.meta.url).pathname;

/** llama-quantize's file types, in its order (MXFP4_MOE aside: it needs an MoE model). */
const TYPES = LLAMA_PRESETS.filter((t) => t !== "MXFP4_MOE");

/** The presets of the one-read measurement. */
const MANY = ["Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0"];

/**
 * Types run with the importance matrix (as the comparison did), and
 * `extra`, but not `plain`.
 */
const withImatrix = (t: string, extra: string[], plain: string[]) =>
  !plain.includes(t) && (t.startsWith("IQ") || t === "Q2_K_S" || extra.includes(t));

/**
 * A seeded importance matrix (llama-imatrix's legacy .dat: one call per entry)
 * for every matrix of `gguf` that llama-imatrix records (not token_embd, a lookup).
 */
async function writeImatrix(gguf: string, path: string): Promise<void> {
  const model = await openModel(gguf, { keepNames: true });
  const parts: Uint8Array<ArrayBuffer>[] = [];
  const int = (n: number) => new Uint8Array(new Int32Array([n]).buffer);
  const text = (s: string) => new TextEncoder().encode(s);
  let seed = 33;
  const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296);
  let entries = 0;
  try {
    for (const name of model.names()) {
      const shape = model.tensor(name).info.shape;
      if (shape.length !== 2 || name === "token_embd.weight") continue;
      const cols = shape[shape.length - 1]!;
      // Log-normal weights, a few zeros (as make_fixtures.py's).
      const w = new Float32Array(cols).map(() =>
        rand() < 0.03 ? 0 : Math.exp(Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(7 * rand()))
      );
      const b = text(name);
      parts.push(int(b.length), b, int(1), int(cols), new Uint8Array(w.buffer));
      entries++;
    }
  } finally {
    await model.close();
  }
  const dataset = text("quant_types_measure.ts");
  parts.unshift(int(entries));
  parts.push(int(1), int(dataset.length), dataset);
  await Deno.writeFile(path, new Uint8Array(await new Blob(parts).arrayBuffer()));
}

interface Row {
  type: string;
  imatrix: boolean;
  /** `--baseline`'s run, when given. */
  base?: Measured;
  apr: Measured;
  llama: Measured;
  same: string;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      "llama-quantize": { type: "string" },
      shape: { type: "string", default: "0.1B" },
      types: { type: "string", default: TYPES.join(",") },
      "imatrix-types": { type: "string", default: "" },
      "plain-types": { type: "string", default: "" },
      out: { type: "string", default: "bench/out/qt" },
      json: { type: "string" },
      baseline: { type: "string" },
    },
  });
  const llamaQuantize = values["llama-quantize"];
  const shape = SHAPES[values.shape!];
  if (llamaQuantize === undefined || shape === undefined) {
    console.error("usage: quant_types_measure.ts --llama-quantize PATH [--shape 0.1B|0.5B|…]");
    Deno.exit(2);
  }
  const dir = values.out!;
  const model = `${dir}/model`;
  const bf16 = `${dir}/bf16.gguf`;
  const imatrix = `${dir}/imatrix.dat`;
  await writeLlamaShapedModel(model, shape);
  const apr = [Deno.execPath(), "run", "-A", CLI];
  const baseline = values.baseline === undefined
    ? undefined
    : [Deno.execPath(), "run", "-A", `${values.baseline}/cli.ts`];
  const started = new Date().toISOString();
  try {
    await measure([...apr, "convert", model, "-o", bf16, "--force"], [bf16]);
    await writeImatrix(bf16, imatrix);
    const rows: Row[] = [];
    for (const type of values.types!.split(",")) {
      const im = withImatrix(
          type,
          values["imatrix-types"]!.split(","),
          values["plain-types"]!.split(","),
        )
        ? ["--imatrix", imatrix]
        : [];
      const ours = `${dir}/apr-${type}.gguf`;
      const theirs = `${dir}/llama-${type}.gguf`;
      const base = baseline === undefined ? undefined : await measure(
        [...baseline, "convert", bf16, "-o", ours, "--quantize", type, ...im, "--force"],
        [ours],
      );
      // Removed before this tree's run: replacing the file just written (its
      // pages still dirty) charged that run 3.2–3.6 CPU-s for the 0.4B F16
      // against 1.4 alone (docs/BENCHMARKS.md, "F16 and BF16 from BF16").
      if (base !== undefined) await Deno.remove(ours);
      const a = await measure(
        [...apr, "convert", bf16, "-o", ours, "--quantize", type, ...im, "--force"],
        [ours],
      );
      const l = await measure([llamaQuantize, ...im, bf16, theirs, type, "2"], [theirs]);
      const r = await compareTensors(ours, theirs);
      const row = {
        type,
        imatrix: im.length > 0,
        ...(base === undefined ? {} : { base }),
        apr: a,
        llama: l,
        same: `${r.tensors - r.differing.length}/${r.tensors}`,
      };
      rows.push(row);
      const before = base === undefined
        ? ""
        : `, baseline ${base.cpuS.toFixed(2)} (${(base.cpuS / l.cpuS).toFixed(2)})`;
      console.error(
        `${type}: apr ${a.cpuS.toFixed(2)} CPU-s, llama-quantize ${l.cpuS.toFixed(2)} (${
          (a.cpuS / l.cpuS).toFixed(2)
        })${before}, same ${row.same}, load ${a.load.toFixed(1)}`,
      );
      await Deno.remove(ours);
      await Deno.remove(theirs);
    }
    // Four presets from one read, against the four single runs above (when
    // this run measured all four).
    const singles = rows.filter((r) => MANY.includes(r.type));
    const sum = singles.reduce((s, r) => s + r.apr.cpuS, 0);
    let many: Measured | undefined;
    if (singles.length === MANY.length) {
      const outs = MANY.map((t) => `${dir}/m-${t}.gguf`);
      many = await measure(
        [...apr, "convert", bf16, "-o", `${dir}/m-{QUANT}.gguf`, "--quantize", MANY.join(",")],
        outs,
      );
      for (const o of outs) await Deno.remove(o);
    }

    console.log(`shape ${values.shape}, bf16.gguf as both tools' input, ${started}`);
    console.log(
      "| type | imatrix | apr CPU-s | llama-quantize CPU-s | apr / llama-quantize | apr peak RSS | llama-quantize peak RSS | same bytes | load | baseline CPU-s | baseline / llama-quantize |",
    );
    console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (const r of rows) {
      const before = r.base === undefined
        ? "| | "
        : `| ${r.base.cpuS.toFixed(2)} | ${(r.base.cpuS / r.llama.cpuS).toFixed(2)} `;
      console.log(
        `| ${r.type} | ${r.imatrix ? "yes" : ""} | ${r.apr.cpuS.toFixed(2)} | ${
          r.llama.cpuS.toFixed(2)
        } | ${(r.apr.cpuS / r.llama.cpuS).toFixed(2)} | ${r.apr.peakRssMiB.toFixed(0)} MiB | ${
          r.llama.peakRssMiB.toFixed(0)
        } MiB | ${r.same} | ${r.apr.load.toFixed(1)} ${before}|`,
      );
    }
    if (many !== undefined) {
      console.log(
        `\n${MANY.join(",")} from one read: ${many.cpuS.toFixed(2)} CPU-s, ${
          many.peakRssMiB.toFixed(0)
        } MiB; the four single runs: ${sum.toFixed(2)} CPU-s; ratio ${
          (many.cpuS / sum).toFixed(2)
        } (load ${many.load.toFixed(1)}, ${(await loadAverage()).toFixed(1)} after)`,
      );
    }
    if (values.json !== undefined) {
      await Deno.writeTextFile(
        values.json,
        JSON.stringify(
          {
            shape: values.shape,
            started,
            rows,
            many: many === undefined ? undefined : { ...many, sumOfSingles: sum },
          },
          null,
          2,
        ) + "\n",
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
