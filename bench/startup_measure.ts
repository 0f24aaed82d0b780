/**
 * aprkit's fixed costs per run (issue 33, item 5): CPU-seconds of whole `apr`
 * runs on inputs so small that start-up is nearly all of them, and of the
 * GGUF header alone, against an earlier tree measured in the same minute
 * (a whole-run benchmark for `deno run`, not a `deno bench` file).
 *
 * Each round runs every case once in this tree and once in `--baseline`'s,
 * alternating which goes first, each in a fresh process under `/usr/bin/time`
 * (`_measure.ts`); the table gives medians. The machine is shared: compare the
 * two columns of one run, not figures of different runs.
 *
 * Cases: `apr --version`, `apr --help`, `apr inspect` and `apr convert
 * --quantize Q8_0` of a 0.5 MB GGUF from tests/testdata, and the main
 * thread's CPU time of `parseGgufHeader()` on `--gguf` (a 32 000-token
 * vocabulary: the 0.1B file of `quant_types_measure.ts`), read from
 * /proc/thread-self/schedstat in a fresh process.
 *
 * Usage:
 *   deno run -A bench/startup_measure.ts --baseline DIR [--gguf FILE]
 *     [--rounds 10] [--json FILE]
 *
 * `DIR` is an earlier commit's tree (`git archive C | tar -x -C DIR`).
 *
 * @module
 */

import { parseArgs } from "node:util";
import { measure, median } from "./_measure.ts";

const HERE = new URL("..", import.meta.url).pathname;
const TINY = `${HERE}tests/testdata/families/llama.cpp/phi4-f32.gguf`;

/** One case: the command line after `apr`, and what it writes. */
const CASES: { name: string; args: (out: string) => string[]; writes: boolean }[] = [
  { name: "apr --version", args: () => ["--version"], writes: false },
  { name: "apr --help", args: () => ["--help"], writes: false },
  { name: "apr inspect tiny.gguf", args: () => ["inspect", TINY], writes: false },
  {
    name: "apr convert tiny.gguf --quantize Q8_0",
    args: (out) => ["convert", TINY, "-o", out, "--quantize", "Q8_0", "--force", "--quiet"],
    writes: true,
  },
];

/** The main thread's CPU milliseconds of one `parseGgufHeader()` of `gguf`, in a fresh process of `tree`. */
async function headerMs(tree: string, gguf: string): Promise<number> {
  const script = `
    const { parseGgufHeader } = await import(${
    JSON.stringify(`${tree}/src/formats/gguf/header.ts`)
  });
    const { openFileSource } = await import(${JSON.stringify(`${tree}/src/io/file_source.ts`)});
    const cpu = () => Number(Deno.readTextFileSync("/proc/thread-self/schedstat").split(" ")[0]) / 1e6;
    const source = await openFileSource(${JSON.stringify(gguf)});
    const start = cpu();
    await parseGgufHeader(source);
    console.log(cpu() - start);
    await source.close();`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script],
    stdout: "piped",
  }).output();
  if (!out.success) throw new Error(`parseGgufHeader in ${tree} failed`);
  return Number(new TextDecoder().decode(out.stdout).trim());
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      baseline: { type: "string" },
      gguf: { type: "string" },
      rounds: { type: "string", default: "10" },
      json: { type: "string" },
    },
  });
  if (values.baseline === undefined) {
    console.error(
      "usage: startup_measure.ts --baseline DIR [--gguf FILE] [--rounds N] [--json FILE]",
    );
    Deno.exit(2);
  }
  const trees = { baseline: values.baseline.replace(/\/$/, ""), current: HERE.replace(/\/$/, "") };
  const rounds = Number(values.rounds);
  const out = await Deno.makeTempDir();
  const started = new Date().toISOString();
  const cpu: Record<string, { baseline: number[]; current: number[] }> = {};
  try {
    for (let round = 0; round < rounds; round++) {
      // Alternate which tree goes first: a slow minute then costs both alike.
      const order = round % 2 === 0
        ? (["baseline", "current"] as const)
        : (["current", "baseline"] as const);
      for (const c of CASES) {
        const row = cpu[c.name] ??= { baseline: [], current: [] };
        for (const tree of order) {
          const output = `${out}/x.gguf`;
          const m = await measure(
            [Deno.execPath(), "run", "-A", `${trees[tree]}/cli.ts`, ...c.args(output)],
            c.writes ? [output] : [],
          );
          row[tree].push(m.cpuS);
        }
      }
      if (values.gguf !== undefined) {
        const row = cpu["parseGgufHeader() (main thread, ms)"] ??= { baseline: [], current: [] };
        for (const tree of order) row[tree].push(await headerMs(trees[tree], values.gguf));
      }
    }
  } finally {
    await Deno.remove(out, { recursive: true });
  }
  console.log(`${rounds} rounds, medians, ${started}`);
  console.log("| case | baseline CPU-s | this tree CPU-s | change |");
  console.log("| --- | --- | --- | --- |");
  const rows = Object.entries(cpu).map(([name, r]) => ({
    name,
    baseline: median(r.baseline),
    current: median(r.current),
    runs: r,
  }));
  for (const r of rows) {
    const digits = r.name.endsWith("ms)") ? 1 : 3;
    console.log(
      `| ${r.name} | ${r.baseline.toFixed(digits)} | ${r.current.toFixed(digits)} | ${
        ((r.current / r.baseline - 1) * 100).toFixed(0)
      }% |`,
    );
  }
  if (values.json !== undefined) {
    await Deno.writeTextFile(
      values.json,
      JSON.stringify({ started, rounds, baseline: trees.baseline, rows }, null, 2) + "\n",
    );
  }
}
