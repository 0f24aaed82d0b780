/**
 * End-to-end benchmark of `pullModel()`: a ≥1 GiB sharded SafeTensors model
 * served from disk by the local test Hub (tests/_hub_server.ts), pulled into
 * a fresh cache with `jobs` 1 and the default, each in its own process (so its
 * peak RSS is the puller's alone), beside a plain sequential read of the same
 * files in the same run.
 *
 * Run: `deno run -A bench/hub_pull_measure.ts [GiB]` (default 1).
 *
 * @module
 */

import { join } from "node:path";
import { startHubServer } from "../tests/_hub_server.ts";
import { DEFAULT_JOBS } from "../src/sources/hub_pull.ts";

// `deno bench bench/` loads this file too (its name matches the pattern): it
// is a whole-run benchmark for `deno run`, so it does nothing there.
if (import.meta.main) {
  const GIB = 1024 ** 3;
  const MIB = 1024 ** 2;
  const totalBytes = Math.round(Number(Deno.args[0] ?? "1") * GIB);
  const SHARDS = 4;

  const work = await Deno.makeTempDir({ prefix: "aprkit-pull-bench-" });
  try {
    // 1. A sharded model on disk: each shard one U8 tensor, pseudo-random bytes.
    const source = join(work, "source");
    await Deno.mkdir(source);
    const shardData = Math.floor(totalBytes / SHARDS);
    const weightMap: Record<string, string> = {};
    const files = [];
    const block = new Uint8Array(4 * MIB);
    for (let i = 0; i < block.length; i += 65536) {
      crypto.getRandomValues(block.subarray(i, i + 65536));
    }
    for (let s = 1; s <= SHARDS; s++) {
      const name = `model-0000${s}-of-0000${SHARDS}.safetensors`;
      const tensor = `layers.${s}.weight`;
      weightMap[tensor] = name;
      let json = JSON.stringify({
        [tensor]: { dtype: "U8", shape: [shardData], data_offsets: [0, shardData] },
      });
      json += " ".repeat((8 - (json.length % 8)) % 8);
      const header = new Uint8Array(8 + json.length);
      new DataView(header.buffer).setBigUint64(0, BigInt(json.length), true);
      header.set(new TextEncoder().encode(json), 8);
      const path = join(source, name);
      const file = await Deno.open(path, { write: true, create: true, truncate: true });
      await file.write(header);
      for (let written = 0; written < shardData;) {
        block[0] = s;
        block[1] = written / block.length;
        const n = Math.min(block.length, shardData - written);
        let done = 0;
        while (done < n) done += await file.write(block.subarray(done, n));
        written += n;
      }
      file.close();
      files.push({ path: name, diskPath: path });
    }
    const index = join(source, "model.safetensors.index.json");
    await Deno.writeTextFile(index, JSON.stringify({ metadata: {}, weight_map: weightMap }));
    await Deno.writeTextFile(join(source, "config.json"), JSON.stringify({ hidden_size: 8 }));
    files.push(
      { path: "model.safetensors.index.json", diskPath: index, lfs: false },
      { path: "config.json", diskPath: join(source, "config.json"), lfs: false },
    );
    let bytes = 0;
    for (const f of files) bytes += (await Deno.stat(f.diskPath)).size;

    // 2. Baseline: a plain sequential read of the same files, 4 MiB at a time.
    const readStart = performance.now();
    const buffer = new Uint8Array(4 * MIB);
    for (const f of files) {
      const file = await Deno.open(f.diskPath);
      while ((await file.read(buffer)) !== null) { /* read only */ }
      file.close();
    }
    const readSeconds = (performance.now() - readStart) / 1000;

    // 3. Pulls, each into a fresh cache, in a child process.
    const server = await startHubServer({ files, serveChunkSize: MIB, treePageSize: 1000 });
    const driver = new URL("../tests/sources/_pull_driver.ts", import.meta.url).pathname;
    const rows: string[] = [];
    const fmt = (b: number, s: number): string => `${(b / MIB / s).toFixed(0)} MiB/s`;
    rows.push(
      `| sequential read (baseline) | ${readSeconds.toFixed(2)} s | ${
        fmt(bytes, readSeconds)
      } | — |`,
    );
    try {
      for (const jobs of [1, DEFAULT_JOBS]) {
        const cache = join(work, `cache-${jobs}`);
        const start = performance.now();
        const output = await new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", driver, "hf://test-org/tiny-model"],
          env: {
            HF_ENDPOINT: server.endpoint,
            HF_HUB_CACHE: cache,
            HF_HOME: cache,
            APR_PULL_JOBS: String(jobs),
          },
        }).output();
        const seconds = (performance.now() - start) / 1000;
        if (!output.success) throw new Error(new TextDecoder().decode(output.stderr));
        const result = JSON.parse(new TextDecoder().decode(output.stdout));
        if (result.bytesDownloaded !== bytes) {
          throw new Error(`pulled ${result.bytesDownloaded} of ${bytes} bytes`);
        }
        rows.push(
          `| pullModel, jobs ${jobs} | ${seconds.toFixed(2)} s | ${fmt(bytes, seconds)} | ${
            (result.peakRssKiB / 1024).toFixed(0)
          } MiB |`,
        );
        await Deno.remove(cache, { recursive: true });
      }
      // 4. A --no-cache import: shard ranges stream from the server into the
      // converter; nothing but the output is written. Its peak RSS is the claim.
      // Its content digests are resumable (sha256_state.ts): run once with the
      // WebAssembly compression (the default) and once with the TypeScript
      // fallback, to see what the hash costs the import.
      const importer = new URL("./import_measure.ts", import.meta.url).pathname;
      const emptyCache = join(work, "cache-unused");
      const out = join(work, "no-cache.apr");
      for (const sha256 of ["wasm", "typescript"]) {
        const start = performance.now();
        const output = await new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", importer, "--child", "hf://test-org/tiny-model", "--no-cache"]
            .concat(["--quantize", "none", "--output", out, "--sha256", sha256]),
          env: { HF_ENDPOINT: server.endpoint, HF_HUB_CACHE: emptyCache, HF_HOME: emptyCache },
        }).output();
        const seconds = (performance.now() - start) / 1000;
        if (!output.success) throw new Error(new TextDecoder().decode(output.stderr));
        const child = JSON.parse(new TextDecoder().decode(output.stdout).trim().split("\n").pop()!);
        const cached = await Deno.stat(emptyCache).then(
          () => "cache dir created!",
          () => "nothing cached",
        );
        rows.push(
          `| apr import --no-cache, ${sha256} SHA-256 (${cached}) | ${seconds.toFixed(2)} s | ${
            fmt(bytes, seconds)
          } | ${child.peakRssMiB.toFixed(0)} MiB |`,
        );
      }
    } finally {
      await server.close();
    }
    console.log(
      `Hub pull of ${
        (bytes / GIB).toFixed(2)
      } GiB in ${files.length} files (${SHARDS} shards), local server on 127.0.0.1:`,
    );
    console.log("| run | time | throughput | peak RSS (puller process) |");
    console.log("|---|---|---|---|");
    for (const row of rows) console.log(row);
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}
