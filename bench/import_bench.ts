/**
 * End-to-end import benchmark (not a `deno bench` file: it times whole runs).
 *
 * Generates a synthetic sharded BF16 model (default 2.25 GiB in 3 shards, one
 * tensor of 512 MiB), then in the same run measures:
 * - `cp` of the same shards followed by `sync -d` of the copies (fdatasync, as the
 *   import's sink does; the reference), and
 * - `apr import` with `--quantize none`, `f16`, `q8`, `q4_k`, each in a fresh
 *   process, reporting wall time and peak RSS (VmHWM, read by the child itself
 *   from /proc at exit, so it is exact).
 *
 * The machine is shared and noisy, so results are ratios against the `cp` of
 * the same run, never absolute targets.
 *
 * With `--repeat N`, rounds of (cp, then every mode) run N times and the
 * table shows median wall times and ratios of medians (peak RSS: the
 * largest); writeback on this machine varies several-fold from run to run.
 * An untimed `sync` precedes every timed command, so one step's dirty pages
 * do not bill the next.
 *
 * A mode may carry suffixes: `+ts` runs the TypeScript kernels instead of
 * WebAssembly (`setKernelBackend("typescript")`, as `APR_KERNELS=typescript`
 * does for `apr`), `+tN` uses N encoder worker threads (`--threads N`); e.g.
 * `--modes q4_k,q4_k+ts,q4_k+t0` compares them in one run.
 *
 * Usage:
 *   deno run -A bench/import_bench.ts [--gib 2.25] [--modes none,f16,q8,q4_k] [--repeat 1] [--keep]
 *
 * @module
 */

import { parseArgs } from "node:util";
import { writeSyntheticModel } from "./_synthetic_model.ts";

// `deno bench bench/` loads this file too (its name matches the pattern): it
// is a whole-run benchmark for `deno run`, so it does nothing there.
if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      gib: { type: "string", default: "2.25" },
      modes: { type: "string", default: "none,f16,q8,q4_k" },
      repeat: { type: "string", default: "1" },
      out: { type: "string", default: "bench/out" },
      keep: { type: "boolean", default: false },
      child: { type: "string" },
      quantize: { type: "string" },
      kernels: { type: "string" },
      threads: { type: "string" },
      output: { type: "string" },
      "no-cache": { type: "boolean", default: false },
    },
  });

  const MiB = 1024 * 1024;

  if (values.child !== undefined) {
    // Child mode: one import in this process, then report peak RSS.
    const { importModel } = await import("../src/pipeline/convert_model.ts");
    const { setKernelBackend } = await import("../src/quant/kernels.ts");
    if (values.kernels !== undefined) setKernelBackend(values.kernels as "typescript");
    const t0 = performance.now();
    await importModel(values.child, values.output!, {
      quantize: values.quantize as "none",
      force: true,
      noCache: values["no-cache"] === true,
      ...(values.threads !== undefined ? { threads: Number(values.threads) } : {}),
    });
    const seconds = (performance.now() - t0) / 1000;
    const status = await Deno.readTextFile("/proc/self/status");
    const hwmKiB = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN);
    console.log(JSON.stringify({ seconds, peakRssMiB: hwmKiB / 1024 }));
    Deno.exit(0);
  }

  const dir = values.out!;
  const modelDir = `${dir}/synthetic-bf16`;

  // --- Generate the model -----------------------------------------------------
  const targetBytes = Math.round(Number(values.gib) * 1024 * MiB);
  const generate = () => writeSyntheticModel(modelDir, targetBytes);

  const run = async (
    cmd: string,
    args: string[],
  ): Promise<{ seconds: number; stdout: string }> => {
    const t0 = performance.now();
    const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "inherit" }).output();
    const seconds = (performance.now() - t0) / 1000;
    if (!out.success) throw new Error(`${cmd} ${args.join(" ")} failed`);
    return { seconds, stdout: new TextDecoder().decode(out.stdout) };
  };

  const shardNames = await generate();
  const totalBytes = (await Promise.all(
    shardNames.map(async (n) => (await Deno.stat(`${modelDir}/${n}`)).size),
  )).reduce((a, b) => a + b, 0);
  // Warm the page cache for both contenders alike.
  await run("sh", [
    "-c",
    `cat ${shardNames.map((n) => `'${modelDir}/${n}'`).join(" ")} > /dev/null`,
  ]);

  const cpDir = `${dir}/cp-copy`;
  const modes = values.modes!.split(",");
  const repeat = Math.max(1, Number(values.repeat));
  const cpTimes: number[] = [];
  const runs = new Map<string, { seconds: number[]; peakRssMiB: number; outBytes: number }>();
  for (let round = 0; round < repeat; round++) {
    await Deno.mkdir(cpDir, { recursive: true });
    await run("sync", []);
    const cp = await run("sh", [
      "-c",
      // fdatasync of the copies, the same durability the import's sink asks for.
      `cp ${
        shardNames.map((n) => `'${modelDir}/${n}'`).join(" ")
      } '${cpDir}/' && sync -d '${cpDir}'/*`,
    ]);
    cpTimes.push(cp.seconds);
    await Deno.remove(cpDir, { recursive: true });
    for (const mode of modes) {
      const [quantize, ...suffixes] = mode.split("+");
      const extra: string[] = [];
      for (const s of suffixes) {
        if (s === "ts") extra.push("--kernels", "typescript");
        else if (/^t\d+$/.test(s)) extra.push("--threads", s.slice(1));
        else throw new Error(`unknown mode suffix "+${s}" in ${mode}`);
      }
      const output = `${dir}/import-${mode}.apr`;
      await run("sync", []);
      const { stdout, seconds: wall } = await run(Deno.execPath(), [
        "run",
        "-A",
        new URL(import.meta.url).pathname,
        "--child",
        modelDir,
        "--quantize",
        quantize!,
        ...extra,
        "--output",
        output,
      ]);
      const child = JSON.parse(stdout.trim().split("\n").pop()!);
      const r = runs.get(mode) ?? { seconds: [], peakRssMiB: 0, outBytes: 0 };
      r.seconds.push(wall);
      r.peakRssMiB = Math.max(r.peakRssMiB, child.peakRssMiB);
      r.outBytes = (await Deno.stat(output)).size;
      runs.set(mode, r);
      // Progress on stderr: a long run that dies still leaves its figures.
      console.error(
        `round ${round + 1}: cp ${cp.seconds.toFixed(2)} s; ${mode} ${wall.toFixed(2)} s, ` +
          `peak ${child.peakRssMiB.toFixed(0)} MiB`,
      );
      await Deno.remove(output);
    }
  }

  const median = (xs: number[]): number => {
    const s = [...xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
  };
  const cpSeconds = median(cpTimes);
  const rows = [...runs].map(([mode, r]) => ({
    mode,
    seconds: median(r.seconds),
    all: r.seconds,
    peakRssMiB: r.peakRssMiB,
    outBytes: r.outBytes,
  }));

  const gib = (b: number) => (b / 1024 ** 3).toFixed(2);
  console.log(
    `\nmodel: ${gib(totalBytes)} GiB BF16 in ${shardNames.length} shards, largest tensor 512 MiB`,
  );
  const list = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(" / ");
  console.log(
    `cp + sync of the shards: ${cpSeconds.toFixed(2)} s (${
      (totalBytes / MiB / cpSeconds).toFixed(0)
    } MiB/s)${repeat > 1 ? `, median of ${list(cpTimes)} s` : ""}\n`,
  );
  console.log("| mode | wall time | × cp | peak RSS | output |");
  console.log("|---|---|---|---|---|");
  for (const r of rows) {
    console.log(
      `| ${r.mode} | ${r.seconds.toFixed(2)} s${repeat > 1 ? ` (${list(r.all)})` : ""} | ${
        (r.seconds / cpSeconds).toFixed(2)
      } | ${r.peakRssMiB.toFixed(0)} MiB | ${gib(r.outBytes)} GiB |`,
    );
  }
  if (!values.keep) await Deno.remove(modelDir, { recursive: true });
}
