/**
 * SHA-256 throughput: `deno bench bench/sha256_bench.ts`. The resumable
 * SHA-256 (`src/runtime/sha256_state.ts`, used by the content checks of a
 * `--no-cache` import and in a browser) with its WebAssembly compression (the
 * default) and its TypeScript fallback, against node:crypto (OpenSSL, the
 * baseline: `deno bench` prints each as a ratio of it, from the same run). Each
 * hashes 16 MiB of pseudo-random bytes fed in 1 MiB updates (the size of a
 * stream chunk); MiB/s is 16 divided by the time per iteration.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { setSha256Backend, Sha256State } from "../src/runtime/sha256_state.ts";
import { randomBytes } from "../tests/runtime/_random_bytes.ts";

const MIB = 1024 * 1024;
const data = randomBytes(16 * MIB);

function resumable(backend: "wasm" | "typescript"): string {
  setSha256Backend(backend);
  try {
    const state = new Sha256State();
    for (let at = 0; at < data.length; at += MIB) state.update(data.subarray(at, at + MIB));
    return state.digestHex();
  } finally {
    setSha256Backend("wasm");
  }
}

Deno.bench("node:crypto (OpenSSL), 16 MiB", { group: "sha256", baseline: true }, () => {
  const hash = createHash("sha256");
  for (let at = 0; at < data.length; at += MIB) hash.update(data.subarray(at, at + MIB));
  hash.digest("hex");
});

Deno.bench("Sha256State wasm, 16 MiB", { group: "sha256" }, () => {
  resumable("wasm");
});

Deno.bench("Sha256State typescript, 16 MiB", { group: "sha256" }, () => {
  resumable("typescript");
});
