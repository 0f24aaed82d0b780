/**
 * Two trees' BF16 encoders in one process, in alternating repetitions: each
 * tree's `encodeFromBf16(target)` on the same BF16-rounded Gaussian values
 * (the old tree from `git archive`), the outputs compared, and the median of
 * the per-repetition CPU-time ratios (this tree / the other) printed per target.
 *
 *     deno run -A bench/bf16_kernels_ab_measure.ts --tree BASE [--targets Q4_0,Q4_1,Q6_K] [--reps 21] [--calls 4]
 *
 * @module
 */

import process from "node:process";
import { wasmKernels } from "../src/quant/wasm/kernels.ts";
import type { Bf16Target, WasmKernels } from "../src/quant/wasm/_kernels_instance.ts";

const flag = (name: string): string | undefined => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : undefined;
};
const args = {
  tree: flag("tree"),
  targets: flag("targets"),
  reps: flag("reps"),
  calls: flag("calls"),
};
if (!args.tree) {
  console.error(
    "bf16_kernels_ab_measure: --tree DIR (a `git archive` of the other tree) is needed",
  );
  Deno.exit(2);
}
const targets = (args.targets ?? "Q4_0,Q4_1,Q6_K").split(",") as Bf16Target[];
const reps = Number(args.reps ?? 21);
const calls = Number(args.calls ?? 4);
const other = await import(`${Deno.realPathSync(args.tree)}/src/quant/wasm/kernels.ts`);
const mine = wasmKernels() as WasmKernels;
const theirs = other.wasmKernels() as WasmKernels;

// 512 Ki values, Gaussian (Box–Muller, fixed seed), rounded to BF16.
const n = 512 * 1024;
const f = new Float32Array(n);
let s = 12345;
const rand = () => ((s = (s * 1103515245 + 12345) >>> 0) + 1) / 4294967297;
for (let i = 0; i < n; i++) {
  f[i] = Math.sqrt(-2 * Math.log(rand())) * Math.cos(2 * Math.PI * rand());
}
const u32 = new Uint32Array(f.buffer);
const bf16 = new Uint8Array(n * 2);
const v16 = new Uint16Array(bf16.buffer);
for (let i = 0; i < n; i++) v16[i] = (u32[i]! + 0x7fff + ((u32[i]! >>> 16) & 1)) >>> 16;

const time = (k: WasmKernels, t: Bf16Target, out: Uint8Array): number => {
  // CPU time of the process (the machine is shared: wall time counts others' jobs).
  const t0 = process.cpuUsage();
  for (let i = 0; i < calls; i++) k.encodeFromBf16(t, bf16, out);
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / 1000;
};
for (const t of targets) {
  const a = new Uint8Array(n * 2);
  const b = new Uint8Array(n * 2);
  // Warm-up: both modules' kernels past V8's baseline tier.
  for (let i = 0; i < 3; i++) time(mine, t, a), time(theirs, t, b);
  if (a.some((x, i) => x !== b[i])) throw new Error(`${t}: the two trees' bytes differ`);
  const ratios: number[] = [];
  const mineMs: number[] = [];
  const theirsMs: number[] = [];
  for (let r = 0; r < reps; r++) {
    const first = r % 2 === 0;
    const x = first ? time(mine, t, a) : time(theirs, t, b);
    const y = first ? time(theirs, t, b) : time(mine, t, a);
    const [m, o] = first ? [x, y] : [y, x];
    mineMs.push(m);
    theirsMs.push(o);
    ratios.push(m / o);
  }
  const med = (v: number[]): number => v.toSorted((p, q) => p - q)[v.length >> 1]!;
  console.log(
    `${t}: this tree ${med(mineMs).toFixed(2)} ms, other ${
      med(theirsMs).toFixed(2)
    } ms (${calls} calls of ${n} values), ` +
      `ratio median ${med(ratios).toFixed(3)} (${reps} reps), same bytes`,
  );
}
