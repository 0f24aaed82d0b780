/**
 * End-to-end import benchmark (not a `deno bench` file: it times whole runs).
 *
 * Generates a synthetic sharded BF16 model (default 2.25 GiB in 3 shards, one
 * tensor of 512 MiB), then in the same run measures:
 * - `cp -r DIR copy && sync` of the model folder (the reference: it ends
 *   durable, as the import does), and
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
 * With `--kill-at F`, each mode is then imported again, killed with SIGKILL
 * once F of its output is written, and resumed with `--resume`: the table
 * shows the resume's wall time against the fresh import's, the share of the
 * output it took as committed, and its peak RSS.
 *
 * Usage:
 *   deno run -A bench/import_measure.ts [--gib 2.25] [--modes none,f16,q8,q4_k] [--repeat 1] [--kill-at F] [--keep]
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
      sha256: { type: "string" },
      threads: { type: "string" },
      output: { type: "string" },
      "no-cache": { type: "boolean", default: false },
      "kill-at": { type: "string" },
      resume: { type: "boolean", default: false },
    },
  });

  const MiB = 1024 * 1024;

  if (values.child !== undefined) {
    // Child mode: one import in this process, then report peak RSS.
    const { importModel } = await import("../src/pipeline/convert_model.ts");
    const { setKernelBackend } = await import("../src/quant/kernels.ts");
    if (values.kernels !== undefined) setKernelBackend(values.kernels as "typescript");
    // --sha256 typescript: the resumable digests of --no-cache without WebAssembly.
    const { setSha256Backend } = await import("../src/runtime/sha256_state.ts");
    if (values.sha256 !== undefined) setSha256Backend(values.sha256 as "typescript");
    const t0 = performance.now();
    const killAt = values["kill-at"] === undefined ? undefined : Number(values["kill-at"]);
    const result = await importModel(values.child, values.output!, {
      quantize: values.quantize as "none",
      force: true,
      resume: values.resume === true,
      noCache: values["no-cache"] === true,
      ...(values.threads !== undefined ? { threads: Number(values.threads) } : {}),
      // --kill-at F: SIGKILL this process once F of the output is written
      // (no cleanup runs: a crash, for the resume measurement).
      ...(killAt === undefined ? {} : {
        onProgress: (e) => {
          if (e.bytesTotal !== undefined && e.bytesDone >= killAt * e.bytesTotal) {
            Deno.kill(Deno.pid, "SIGKILL");
          }
        },
      }),
    });
    const seconds = (performance.now() - t0) / 1000;
    const status = await Deno.readTextFile("/proc/self/status");
    const hwmKiB = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN);
    console.log(
      JSON.stringify({ seconds, peakRssMiB: hwmKiB / 1024, resumedBytes: result.resumedBytes }),
    );
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
  interface ModeRuns {
    seconds: number[];
    peakRssMiB: number;
    outBytes: number;
    /** With --kill-at: resume wall times and their largest peak RSS. */
    resumeSeconds: number[];
    resumePeakRssMiB: number;
    resumedShare: number[];
  }
  const killAt = values["kill-at"];
  const runs = new Map<string, ModeRuns>();
  const child = async (mode: string, output: string, extra: string[] = []) => {
    const [quantize, ...suffixes] = mode.split("+");
    const modeFlags: string[] = [];
    for (const suffix of suffixes) {
      if (suffix === "ts") modeFlags.push("--kernels", "typescript");
      else if (/^t\d+$/.test(suffix)) modeFlags.push("--threads", suffix.slice(1));
      else throw new Error(`unknown mode suffix "+${suffix}" in ${mode}`);
    }
    const t0 = performance.now();
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL(import.meta.url).pathname,
        "--child",
        modelDir,
        "--quantize",
        quantize!,
        ...modeFlags,
        "--output",
        output,
        ...extra,
      ],
      stdout: "piped",
      stderr: "inherit",
    }).output();
    const seconds = (performance.now() - t0) / 1000;
    const text = new TextDecoder().decode(out.stdout).trim();
    return { out, seconds, report: text === "" ? undefined : JSON.parse(text.split("\n").pop()!) };
  };
  for (let round = 0; round < repeat; round++) {
    await run("sync", []);
    // The reference ends durable as the import does: a recursive copy, then
    // a global sync (every dirty page of the copy, data and metadata).
    const cp = await run("sh", ["-c", `cp -r '${modelDir}' '${cpDir}' && sync`]);
    cpTimes.push(cp.seconds);
    await Deno.remove(cpDir, { recursive: true });
    for (const mode of modes) {
      const output = `${dir}/import-${mode}.apr`;
      await run("sync", []);
      const fresh = await child(mode, output);
      if (!fresh.out.success) throw new Error(`import ${mode} failed`);
      const r = runs.get(mode) ??
        {
          seconds: [],
          peakRssMiB: 0,
          outBytes: 0,
          resumeSeconds: [],
          resumePeakRssMiB: 0,
          resumedShare: [],
        };
      r.seconds.push(fresh.seconds);
      r.peakRssMiB = Math.max(r.peakRssMiB, fresh.report.peakRssMiB);
      r.outBytes = (await Deno.stat(output)).size;
      runs.set(mode, r);
      await Deno.remove(output);
      if (killAt !== undefined) {
        // A crash at that point (SIGKILL, no cleanup), then a timed --resume.
        const killed = await child(mode, output, ["--kill-at", killAt]);
        if (killed.out.signal !== "SIGKILL") throw new Error(`import ${mode} was not killed`);
        await run("sync", []);
        const resumed = await child(mode, output, ["--resume"]);
        if (!resumed.out.success) throw new Error(`resume ${mode} failed`);
        r.resumeSeconds.push(resumed.seconds);
        r.resumePeakRssMiB = Math.max(r.resumePeakRssMiB, resumed.report.peakRssMiB);
        r.resumedShare.push(resumed.report.resumedBytes / (r.outBytes || 1));
        await Deno.remove(output);
      }
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
    resume: r.resumeSeconds.length === 0 ? undefined : median(r.resumeSeconds),
    resumeAll: r.resumeSeconds,
    resumePeakRssMiB: r.resumePeakRssMiB,
    resumedShare: median(r.resumedShare),
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
  if (killAt !== undefined) {
    console.log(
      `\nkilled (SIGKILL) once ${
        (Number(killAt) * 100).toFixed(0)
      } % of the output was written, then --resume:\n`,
    );
    console.log("| mode | resume wall time | × fresh import | output kept | peak RSS |");
    console.log("|---|---|---|---|---|");
    for (const r of rows) {
      if (r.resume === undefined) continue;
      console.log(
        `| ${r.mode} | ${r.resume.toFixed(2)} s${repeat > 1 ? ` (${list(r.resumeAll)})` : ""} | ${
          (r.resume / r.seconds).toFixed(2)
        } | ${(r.resumedShare * 100).toFixed(0)} % | ${r.resumePeakRssMiB.toFixed(0)} MiB |`,
      );
    }
  }
  if (!values.keep) await Deno.remove(modelDir, { recursive: true });
}
