/**
 * Measure one command in a fresh process under `/usr/bin/time` (Linux):
 * wall time, user+sys CPU-seconds, peak RSS, bytes it wrote, and the load
 * average when it started (figures taken under load are only comparable
 * within one run, as ratios).
 *
 * @module
 */

/** What one command cost. */
export interface Measured {
  /** Wall time, seconds. */
  wallS: number;
  /** User + system CPU time, seconds (of every thread). */
  cpuS: number;
  /** Peak resident set, MiB. */
  peakRssMiB: number;
  /** Total size of the outputs afterwards. */
  writtenBytes: number;
  /** 1-minute load average when the command started. */
  load: number;
}

/** The 1-minute load average. */
export async function loadAverage(): Promise<number> {
  return Number((await Deno.readTextFile("/proc/loadavg")).split(" ")[0]);
}

/**
 * Run `cmd` under /usr/bin/time; the sizes of `outputs` afterwards are the bytes written.
 *
 * @throws {Error} When the command fails (with its stderr).
 */
export async function measure(
  cmd: string[],
  outputs: string[],
  env: Record<string, string> = {},
): Promise<Measured> {
  const timeFile = await Deno.makeTempFile();
  try {
    await new Deno.Command("sync").output();
    const load = await loadAverage();
    const t0 = performance.now();
    const out = await new Deno.Command("/usr/bin/time", {
      args: ["-f", "%U %S %M", "-o", timeFile, ...cmd],
      stdout: "null",
      stderr: "piped",
      env,
    }).output();
    const wallS = (performance.now() - t0) / 1000;
    if (!out.success) {
      throw new Error(`${cmd.join(" ")} failed:\n${new TextDecoder().decode(out.stderr)}`);
    }
    const last = (await Deno.readTextFile(timeFile)).trim().split("\n").at(-1)!;
    const [user, sys, kib] = last.split(" ").map(Number);
    let writtenBytes = 0;
    for (const o of outputs) writtenBytes += await sizeOf(o);
    return { wallS, cpuS: user! + sys!, peakRssMiB: kib! / 1024, writtenBytes, load };
  } finally {
    await Deno.remove(timeFile);
  }
}

/** Size of a file, or of every file under a folder; 0 when missing. */
export async function sizeOf(path: string): Promise<number> {
  const s = await Deno.stat(path).catch(() => undefined);
  if (s === undefined) return 0;
  if (!s.isDirectory) return s.size;
  let n = 0;
  for await (const e of Deno.readDir(path)) n += await sizeOf(`${path}/${e.name}`);
  return n;
}

/** The median of `xs`. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
