/**
 * Shared helpers of the pipeline tests: paths, temp folders, sha256, and a
 * generator of big F32 SafeTensors files written in chunks (never held in memory).
 *
 * @module
 */

import { createHash } from "node:crypto";

/** Absolute path of the demo model. */
export const DEMO_MODEL: string = new URL("../../examples/tiny-llama", import.meta.url).pathname;

/** Absolute path of the CLI entry. */
export const CLI_PATH: string = new URL("../../cli.ts", import.meta.url).pathname;

/**
 * Absolute path of a file under tests/testdata/.
 *
 * @param path Path inside tests/testdata/.
 * @returns The absolute path.
 */
export function testdata(path: string): string {
  return new URL(`../testdata/${path}`, import.meta.url).pathname;
}

/**
 * Run `fn` with a fresh temporary folder, removed afterwards.
 *
 * @param fn What to do with the folder.
 * @returns What `fn` returns.
 */
export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "aprkit-pipeline-test-" });
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * sha256 of bytes or of a file, hex.
 *
 * @param data Bytes, or a file path.
 * @returns The hex digest.
 */
export async function sha256(data: Uint8Array | string): Promise<string> {
  const hash = createHash("sha256");
  if (typeof data !== "string") return hash.update(data).digest("hex");
  using file = await Deno.open(data);
  for await (const chunk of file.readable) hash.update(chunk);
  return hash.digest("hex");
}

/**
 * Write a SafeTensors file of F32 tensors filled with a cheap deterministic
 * pattern, 4 MiB at a time.
 *
 * @param path Output file.
 * @param tensors Name → element count (1-D shapes... reshaped to [n/1024, 1024] when divisible).
 */
export async function writeBigSafetensors(
  path: string,
  tensors: Record<string, number>,
): Promise<void> {
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const [name, count] of Object.entries(tensors)) {
    const shape = count % 1024 === 0 ? [count / 1024, 1024] : [count];
    header[name] = { dtype: "F32", shape, data_offsets: [offset, offset + 4 * count] };
    offset += 4 * count;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (json.length % 8)) % 8);
  using file = await Deno.open(path, { write: true, create: true, truncate: true });
  const prefix = new Uint8Array(8);
  new DataView(prefix.buffer).setBigUint64(0, BigInt(json.length), true);
  await writeAll(file, prefix);
  await writeAll(file, new TextEncoder().encode(json));
  const CHUNK = 1 << 20; // elements per write (4 MiB)
  const buffer = new Float32Array(CHUNK);
  let seed = 1;
  for (const count of Object.values(tensors)) {
    for (let done = 0; done < count; done += CHUNK) {
      const n = Math.min(CHUNK, count - done);
      for (let i = 0; i < n; i++) buffer[i] = Math.sin((done + i) * 0.001 + seed);
      await writeAll(file, new Uint8Array(buffer.buffer, 0, 4 * n));
    }
    seed++;
  }
}

async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) written += await file.write(bytes.subarray(written));
}
