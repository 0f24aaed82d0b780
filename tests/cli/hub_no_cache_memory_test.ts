/**
 * Bounded memory of a streaming import from the Hub (DESIGN.md §1.2,
 * docs/BENCHMARKS.md "`--no-cache` import from the Hub"): `apr import
 * hf://… --no-cache` of a 512 MiB model, two shards of one 256 MiB tensor
 * each, served by the local test Hub (tests/_hub_server.ts), peaks (VmHWM)
 * far below the model's size and below one tensor plus the runtime — and so
 * does `apr convert … --no-cache` to GGUF, SafeTensors and QNAT (one child
 * process per format, the same served model; I8 tensors, which every format
 * holds as they are).
 *
 * Chunks streamed from a server are fresh allocations (a local file's are
 * recycled, so tests/pipeline/memory_test.ts cannot see this): anything that
 * keeps every chunk of a tensor reachable shows here. It did once — a
 * `Promise.race` against one never-settling promise per tensor held every
 * chunk read (src/io/abortable_reads.ts), 400 MiB for this model.
 *
 * @module
 */

import { equal, ok } from "node:assert/strict";
import { join } from "node:path";
import { startHubServer } from "../_hub_server.ts";
import { runAprPeakRss, withTempDir } from "./_run_apr.ts";

const MIB = 1024 * 1024;
const SHARDS = 2;
const TENSOR_BYTES = 256 * MIB;

/**
 * Measured after the fix: 178–197 MiB (runtime, HTTP and hashing, and chunks
 * V8 has not collected yet; the same for 128 MiB to 512 MiB tensors). A
 * tensor's chunks kept until its end put the peak at ~400 MiB.
 */
const PEAK_RSS_LIMIT = 240 * MIB;

const HUB_MODEL = "hf://test-org/tiny-model";

const HAS_PROC = await Deno.stat("/proc/self/status").then(() => true, () => false);

/** An I8 tensor of `bytes` in a SafeTensors file at `path`, written 4 MiB at a time. */
async function writeI8Shard(path: string, name: string, bytes: number, seed: number) {
  let json = JSON.stringify({ [name]: { dtype: "I8", shape: [bytes], data_offsets: [0, bytes] } });
  json += " ".repeat((8 - (json.length % 8)) % 8);
  const header = new Uint8Array(8 + json.length);
  new DataView(header.buffer).setBigUint64(0, BigInt(json.length), true);
  header.set(new TextEncoder().encode(json), 8);
  const block = new Uint8Array(4 * MIB);
  for (let i = 0; i < block.length; i++) block[i] = (Math.imul(i, 2654435761) + seed) >>> 24;
  using file = await Deno.open(path, { write: true, create: true, truncate: true });
  const writeAll = async (data: Uint8Array) => {
    for (let done = 0; done < data.length;) done += await file.write(data.subarray(done));
  };
  await writeAll(header);
  for (let written = 0; written < bytes; written += block.length) {
    await writeAll(block.subarray(0, Math.min(block.length, bytes - written)));
  }
}

/** One command per output format, each reading the same served model. */
const COMMANDS: readonly { format: string; args: (out: string) => string[] }[] = [
  { format: "apr", args: (out) => ["import", HUB_MODEL, "--quantize", "none", "-o", out] },
  { format: "gguf", args: (out) => ["convert", HUB_MODEL, "-o", out] },
  { format: "safetensors", args: (out) => ["convert", HUB_MODEL, "-o", out] },
  { format: "qnat", args: (out) => ["convert", HUB_MODEL, "-o", out] },
];

Deno.test({
  name: "apr import/convert hf:// --no-cache of a 512 MiB model peaks far below its size",
  ignore: !HAS_PROC,
  fn: async (t) => {
    await withTempDir(async (dir) => {
      const files = [];
      const weightMap: Record<string, string> = {};
      for (let s = 1; s <= SHARDS; s++) {
        const name = `model-0000${s}-of-0000${SHARDS}.safetensors`;
        const diskPath = join(dir, name);
        await writeI8Shard(diskPath, `layers.${s}.weight`, TENSOR_BYTES, s);
        weightMap[`layers.${s}.weight`] = name;
        files.push({ path: name, diskPath });
      }
      const shards = files.slice();
      const index = JSON.stringify({ metadata: {}, weight_map: weightMap });
      files.push(
        { path: "model.safetensors.index.json", data: new TextEncoder().encode(index), lfs: false },
        { path: "config.json", data: new TextEncoder().encode('{"hidden_size":8}'), lfs: false },
      );
      const server = await startHubServer({ files, serveChunkSize: MIB });
      try {
        for (const { format, args } of COMMANDS) {
          await t.step(`${format} output`, async () => {
            const home = join(dir, "hf-home");
            const out = join(dir, `model.${format}`);
            const before = new Map(server.counters.bytesByFile);
            const { run, peakBytes } = await runAprPeakRss(
              [...args(out), "--no-cache", "--quiet"],
              { HF_ENDPOINT: server.endpoint, HF_HOME: home, HF_HUB_OFFLINE: "0" },
            );
            equal(run.code, 0, run.stderr);
            // Both tensors were streamed in full from the server and written.
            ok((await Deno.stat(out)).size > SHARDS * TENSOR_BYTES);
            await Deno.remove(out);
            for (const { path, diskPath } of shards) {
              const served = (server.counters.bytesByFile.get(path) ?? 0) - (before.get(path) ?? 0);
              ok(served >= (await Deno.stat(diskPath)).size, `${path}: ${served} bytes served`);
            }
            await Deno.stat(home).then(
              () => ok(false, "--no-cache created the Hub cache folder"),
              () => {},
            );
            ok(peakBytes !== undefined, "VmHWM was not read");
            const mib = (peakBytes / MIB).toFixed(0);
            console.log(`peak RSS of the --no-cache ${format} output: ${mib} MiB`);
            ok(peakBytes < PEAK_RSS_LIMIT, `${format}: peak RSS ${mib} MiB`);
          });
        }
      } finally {
        await server.close();
      }
    });
  },
});

if (!HAS_PROC) {
  console.warn("hub_no_cache_memory_test.ts: /proc/self/status is absent; the test is skipped");
}
