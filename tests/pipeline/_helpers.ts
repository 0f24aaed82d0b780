/**
 * Shared helpers of the pipeline tests: paths, temp folders, sha256, and a
 * generator of big F32 SafeTensors files written in chunks (never held in memory).
 *
 * @module
 */

// Paths, temp folders and hashing are the CLI tests' helpers; only the big
// model generator is the pipeline tests' own.
export { CLI_PATH, DEMO_MODEL, sha256, testdata, withTempDir } from "../cli/_run_apr.ts";

/**
 * Write a SafeTensors file of F32 tensors filled with a cheap deterministic
 * pattern, 4 MiB at a time.
 *
 * @param path Output file.
 * @param tensors Name → element count (1-D shapes... reshaped to [n/1024, 1024] when divisible), or
 *   name → shape.
 */
export async function writeBigSafetensors(
  path: string,
  tensors: Record<string, number | number[]>,
): Promise<void> {
  const header: Record<string, unknown> = {};
  let offset = 0;
  const counts: number[] = [];
  for (const [name, size] of Object.entries(tensors)) {
    const count = typeof size === "number" ? size : size.reduce((a, b) => a * b, 1);
    counts.push(count);
    const shape = typeof size !== "number"
      ? size
      : count % 1024 === 0
      ? [count / 1024, 1024]
      : [count];
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
  for (const count of counts) {
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
