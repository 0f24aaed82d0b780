/**
 * One encoder worker's fixed costs in a tree (this one, or a copy of an
 * earlier commit): the process CPU from `new Worker` to its `ready`, the CPU
 * of a few 1 MiB BF16 → Q6_K jobs after it, and the worker's V8 heap after a
 * forced collection (docs/BENCHMARKS.md, "Q4_0/Q4_1, seventh pass"). Run each
 * tree in turn, several times, in fresh processes:
 *
 *   deno run -A --v8-flags=--expose-gc bench/encoder_worker_measure.ts [--tree DIR] [--jobs 2]
 *
 * The worker is the tree's `src/quant/_encode_worker.ts`, loaded by this same
 * file running as a worker, which adds a `{ memory: true }` message (and
 * imports nothing else: what the main side needs is imported in `main`).
 *
 * @module
 */

// deno-lint-ignore no-explicit-any
const scope = globalThis as any;

async function runAsWorker(tree: string): Promise<void> {
  await import(`${tree}/src/quant/_encode_worker.ts`);
  const inner = scope.onmessage;
  scope.onmessage = (e: MessageEvent) => {
    if (e.data?.memory !== true) return inner(e);
    scope.gc?.();
    const m = Deno.memoryUsage();
    scope.postMessage({ memory: { heapUsed: m.heapUsed, heapTotal: m.heapTotal } });
  };
}

/** 1 MiB of BF16 bytes of seeded values in [−0.5, 0.5). */
function bf16Job(seed: number): Uint8Array {
  const f = new Float32Array(1 << 19);
  let s = seed;
  for (let i = 0; i < f.length; i++) f[i] = ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32) - 0.5;
  const hi = new Uint16Array(f.buffer).filter((_, i) => i % 2 === 1);
  return new Uint8Array(hi.buffer);
}

async function main(): Promise<void> {
  const { parseArgs } = await import("node:util");
  const { default: process } = await import("node:process");
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      tree: { type: "string", default: new URL("..", import.meta.url).pathname },
      jobs: { type: "string", default: "2" },
    },
  });
  const tree = values.tree!.replace(/\/$/, "");
  const { kernelsModule } = await import(`${tree}/src/quant/wasm/kernels.ts`);
  const module = kernelsModule();
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };
  const url = new URL(import.meta.url);
  url.searchParams.set("tree", tree);
  const c0 = cpu();
  const w = new Worker(url.href, { type: "module" });
  // deno-lint-ignore no-explicit-any
  const next = () => new Promise<any>((r) => (w.onmessage = (e) => r(e.data)));
  w.postMessage({ module });
  if ((await next()).ready !== true) throw new Error("the worker did not start");
  const startCpuS = cpu() - c0;
  const jobs = Array.from({ length: Number(values.jobs) }, (_, j) => bf16Job(j + 1));
  const c1 = cpu();
  for (const [j, b] of jobs.entries()) {
    w.postMessage({ id: j, target: "Q6_K", backend: "wasm", values: b }, [b.buffer as ArrayBuffer]);
    const r = await next();
    if (r.error !== undefined) throw new Error(r.error);
  }
  const jobsCpuS = cpu() - c1;
  w.postMessage({ memory: true });
  const { memory } = await next();
  w.terminate();
  console.log(JSON.stringify({
    tree,
    startCpuS,
    jobsCpuS,
    heapUsedMiB: memory.heapUsed / 2 ** 20,
    heapTotalMiB: memory.heapTotal / 2 ** 20,
  }));
}

const inWorker = typeof scope.WorkerGlobalScope !== "undefined" &&
  scope instanceof scope.WorkerGlobalScope;
if (inWorker) await runAsWorker(new URL(import.meta.url).searchParams.get("tree")!);
else if (import.meta.main) await main();
