/**
 * A tiny program that pulls one model, for tests that kill a download
 * midway (FORMATS.md D7): `deno run -A _pull_driver.ts hf://org/name`.
 * Settings come from the environment (HF_ENDPOINT, HF_HUB_CACHE, …);
 * `APR_PULL_JOBS` and `APR_PULL_PART_SIZE` tune the download.
 *
 * @module
 */

import { pullModel } from "../../src/sources/hub_pull.ts";

const ref = Deno.args[0];
if (ref === undefined) {
  console.error("usage: _pull_driver.ts hf://org/name");
  Deno.exit(2);
}
const jobs = Number(Deno.env.get("APR_PULL_JOBS") ?? "8");
const partSize = Number(Deno.env.get("APR_PULL_PART_SIZE") ?? String(64 * 1024 * 1024));
const result = await pullModel(ref, { jobs, partSize, retryDelayMs: 10 });
// Peak resident memory, for the benchmark (Linux only).
const status = await Deno.readTextFile("/proc/self/status").catch(() => "");
const peakRssKiB = Number(/VmHWM:\s*(\d+)/.exec(status)?.[1] ?? NaN);
console.log(JSON.stringify({ ...result, peakRssKiB }));
