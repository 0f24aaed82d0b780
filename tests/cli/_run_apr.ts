/**
 * Helpers for the CLI tests: run `apr` as a real subprocess, check its
 * one-line errors, make temporary folders, and build small SafeTensors and
 * GGUF files (valid and malformed) on disk.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { ok } from "node:assert/strict";

/** Absolute path of the CLI entry. */
export const CLI_PATH: string = new URL("../../cli.ts", import.meta.url).pathname;

/** Absolute path of the demo model (2 BF16 shards, index, config, tokenizer). */
export const DEMO_MODEL: string = new URL("../../examples/tiny-llama", import.meta.url).pathname;

/**
 * Absolute path of a file under tests/testdata/.
 *
 * @param path Path inside tests/testdata/.
 * @returns The absolute path.
 */
export function testdata(path: string): string {
  return new URL(`../testdata/${path}`, import.meta.url).pathname;
}

/** What one run of `apr` produced. */
export interface AprRun {
  /** Exit code. */
  code: number;
  /** Standard output. */
  stdout: string;
  /** Standard error. */
  stderr: string;
}

/** Options of {@linkcode runApr}. */
export interface RunAprOptions {
  /** Working directory. */
  cwd?: string;
  /** Extra environment variables. */
  env?: Record<string, string>;
}

/**
 * Run `apr ARGS` in a subprocess (stdin closed, stdout/stderr captured, not a TTY).
 * `HF_HOME` points at a folder that does not exist unless `env` sets it, so no
 * test ever touches the user's Hugging Face cache.
 *
 * @param args Arguments after `apr`.
 * @param options Working directory and environment.
 * @returns Exit code and output.
 */
export async function runApr(args: string[], options: RunAprOptions = {}): Promise<AprRun> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI_PATH, ...args],
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: {
      HF_HOME: "/nonexistent/aprkit-test-hf-home",
      HF_HUB_OFFLINE: "1",
      NO_COLOR: "1",
      ...options.env,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return {
    code: output.code,
    stdout: text.decode(output.stdout),
    stderr: text.decode(output.stderr),
  };
}

/**
 * Run `apr ARGS` and measure its peak resident memory (Linux: VmHWM of
 * /proc/PID/status, polled until it exits; `undefined` elsewhere).
 *
 * @param args Arguments after `apr`.
 * @param env Extra environment variables (e.g. a local Hub's HF_ENDPOINT).
 * @returns The run and its peak resident bytes.
 */
export async function runAprPeakRss(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ run: AprRun; peakBytes?: number }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI_PATH, ...args],
    env: { HF_HOME: "/nonexistent", HF_HUB_OFFLINE: "1", NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let peak: number | undefined;
  let done = false;
  const output = child.output().finally(() => (done = true));
  while (!done) {
    const status = await Deno.readTextFile(`/proc/${child.pid}/status`).catch(() => "");
    const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
    if (kb !== undefined) peak = Math.max(peak ?? 0, Number(kb) * 1024);
    await new Promise((r) => setTimeout(r, 20));
  }
  const { code, stdout, stderr } = await output;
  const text = new TextDecoder();
  const run = { code, stdout: text.decode(stdout), stderr: text.decode(stderr) };
  return peak === undefined ? { run } : { run, peakBytes: peak };
}

/**
 * The non-empty lines of a text.
 *
 * @param text Output text.
 * @returns Its lines.
 */
export function lines(text: string): string[] {
  return text.split("\n").filter((l) => l.trim() !== "");
}

/**
 * Assert a run failed as bad input should (FORMATS.md preamble, DESIGN.md
 * §2.6): exit code 2, exactly one stderr line matching every pattern, no
 * stack trace, nothing on stdout.
 *
 * @param run The run.
 * @param patterns What the line must contain.
 */
export function assertOneLineError(run: AprRun, ...patterns: (RegExp | string)[]): void {
  if (Deno.env.get("APR_TEST_DUMP")) console.log(run.stderr.trim());
  const context = `exit ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`;
  ok(run.code === 2, `expected exit code 2: ${context}`);
  const errLines = lines(run.stderr);
  ok(errLines.length === 1, `expected exactly one stderr line: ${context}`);
  const line = errLines[0]!;
  ok(!/^\s+at /m.test(run.stderr), `stack trace printed: ${context}`);
  ok(line.startsWith("apr"), `the line should start with "apr": ${context}`);
  for (const p of patterns) {
    ok(
      typeof p === "string" ? line.includes(p) : p.test(line),
      `stderr line should match ${p}: ${context}`,
    );
  }
  ok(run.stdout === "", `nothing expected on stdout: ${context}`);
}

/**
 * Run `fn` with a fresh temporary folder, removed afterwards.
 *
 * @param fn What to do with the folder.
 * @returns What `fn` returns.
 */
export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "aprkit-cli-test-" });
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * Copy a model folder's files (not subfolders) into `dir/model`, for a test
 * to edit.
 *
 * @param dir The test's temporary folder.
 * @param from The model folder.
 * @returns The copy's path.
 */
export async function copyModel(dir: string, from: string): Promise<string> {
  const model = `${dir}/model`;
  await Deno.mkdir(model);
  for await (const entry of Deno.readDir(from)) {
    if (entry.isFile) await Deno.copyFile(`${from}/${entry.name}`, `${model}/${entry.name}`);
  }
  return model;
}

/**
 * The names of the entries of a folder, sorted.
 *
 * @param dir The folder.
 * @returns Entry names.
 */
export async function listDir(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) names.push(e.name);
  return names.sort();
}

/**
 * Whether a path exists (without following a final symlink).
 *
 * @param path The path.
 * @returns True when it exists.
 */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
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

const encoder = new TextEncoder();

/**
 * SafeTensors bytes from raw header text (need not be valid) and data.
 *
 * @param header Header JSON text.
 * @param data Data bytes after the header.
 * @param declared Header length written in the prefix (default: the real one).
 * @returns The file bytes.
 */
export function rawSafetensors(header: string, data: Uint8Array, declared?: bigint): Uint8Array {
  const json = encoder.encode(header);
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, declared ?? BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

/**
 * A valid F32 SafeTensors file.
 *
 * @param tensors Name → values (1-D).
 * @returns The file bytes.
 */
export function f32Safetensors(tensors: Record<string, Float32Array>): Uint8Array {
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const [name, values] of Object.entries(tensors)) {
    header[name] = {
      dtype: "F32",
      shape: [values.length],
      data_offsets: [offset, offset + values.byteLength],
    };
    offset += values.byteLength;
  }
  const data = new Uint8Array(offset);
  offset = 0;
  for (const values of Object.values(tensors)) {
    data.set(new Uint8Array(values.buffer, values.byteOffset, values.byteLength), offset);
    offset += values.byteLength;
  }
  return rawSafetensors(JSON.stringify(header), data);
}

/**
 * Deterministic pseudo-random floats in about [-1, 1).
 *
 * @param count How many.
 * @param seed Seed.
 * @returns The values.
 */
export function noise(count: number, seed: number): Float32Array {
  const out = new Float32Array(count);
  let x = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < count; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x / 2 ** 31 - 1;
  }
  return out;
}
