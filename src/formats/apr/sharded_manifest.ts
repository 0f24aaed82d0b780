// This module is browser compatible.

/**
 * Sharded APR sets (APR_V2.md §8): the shard plan, the file names, and the
 * manifest JSON aprender writes, with a strict parser.
 *
 * Naming, for an output `DIR/NAME.apr` split into N shards:
 * `DIR/NAME-00001-of-0000N.apr` … (1-based, 5 digits like Hugging Face
 * shards) and the manifest `DIR/NAME.apr.manifest.json`. Each shard is a
 * complete APR v2 file with flag SHARDED (0x0010) and `metadata.sharding =
 * {shard_count, shard_index (0-based), total_size (tensor bytes of the whole
 * set), pattern}` where `pattern` is the shard file name with `{index}` in
 * place of the 5-digit 1-based number (`"NAME-{index}-of-00003.apr"`).
 *
 * @module
 */

import { APR_MANIFEST_SUFFIX } from "./manifest_suffix.ts";
import { ModelFormatError } from "../../errors.ts";
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from "../../io/json_depth.ts";
import type { TensorInfo } from "../../tensor.ts";
import { pad64 } from "./layout.ts";

/** Most shards a set may have: real sets have a few hundred; refused before opening files. */
export const APR_MAX_SHARDS = 10_000;

/** Largest manifest read (it lists every tensor name twice): refused before reading. */
export const APR_MAX_MANIFEST_BYTES = 250_000_000;

export { APR_MANIFEST_SUFFIX };

/** One shard in an {@linkcode AprShardManifest}. */
export interface AprManifestShard {
  /** File name of the shard, relative to the manifest's folder. */
  filename: string;
  /** 0-based shard index. */
  index: number;
  /** File size in bytes. */
  size: number;
  /** Names of the tensors in the shard. */
  tensors: string[];
}

/** aprender's manifest of a sharded APR set (APR_V2.md §8). */
export interface AprShardManifest {
  /** `"2.0"`. */
  version: string;
  /** Number of shards. */
  shard_count: number;
  /** Tensor payload bytes of the whole set. */
  total_size: number;
  /** Number of tensors of the whole set. */
  tensor_count: number;
  /** The shards, in index order. */
  shards: AprManifestShard[];
  /** Tensor name → shard index. */
  weight_map: Record<string, number>;
}

/** Where the files of a sharded set go. */
export interface AprShardNames {
  /** Shard file names (no folder), index order. */
  readonly files: readonly string[];
  /** The manifest file name (no folder). */
  readonly manifest: string;
  /** `metadata.sharding.pattern`. */
  readonly pattern: string;
}

/**
 * Shard and manifest file names for an output path's base name.
 *
 * @param base The output's file name, e.g. `"model.apr"`.
 * @param count Number of shards.
 * @returns The names.
 */
export function aprShardNames(base: string, count: number): AprShardNames {
  const stem = base.replace(/\.apr$/i, "") || "model";
  const of = String(count).padStart(5, "0");
  const pattern = `${stem}-{index}-of-${of}.apr`;
  return {
    files: Array.from({ length: count }, (_, i) => shardFileName(pattern, i)),
    manifest: `${stem}${APR_MANIFEST_SUFFIX}`,
    pattern,
  };
}

/**
 * The file name of shard `index` (0-based) under a `{index}` pattern.
 *
 * @param pattern E.g. `"model-{index}-of-00003.apr"`.
 * @param index 0-based shard index.
 * @returns E.g. `"model-00001-of-00003.apr"`.
 */
export function shardFileName(pattern: string, index: number): string {
  return pattern.replace("{index}", String(index + 1).padStart(5, "0"));
}

/**
 * Split tensors into shards in arrival order: a shard takes tensors while
 * its padded tensor data stays within `maxShardSize`; a tensor larger than
 * the limit gets a shard of its own (never split). The limit applies to
 * tensor data, not to each file's header, metadata and index.
 *
 * @param tensors The tensors, in arrival order.
 * @param maxShardSize Largest tensor data per shard, in bytes.
 * @returns For each shard, the indices of its tensors.
 * @throws {RangeError} When `maxShardSize` is not a positive integer or the plan needs too many shards.
 */
export function planAprShards(tensors: readonly TensorInfo[], maxShardSize: number): number[][] {
  if (!Number.isSafeInteger(maxShardSize) || maxShardSize <= 0) {
    throw new RangeError(`Cannot shard APR output: max shard size ${maxShardSize} is not positive`);
  }
  const shards: number[][] = [];
  let current: number[] = [];
  let size = 0;
  tensors.forEach((t, i) => {
    const bytes = pad64(t.byteLength);
    if (current.length > 0 && size + bytes > maxShardSize) {
      shards.push(current);
      current = [];
      size = 0;
    }
    current.push(i);
    size += bytes;
  });
  if (current.length > 0 || shards.length === 0) shards.push(current);
  if (shards.length > APR_MAX_SHARDS) {
    throw new RangeError(
      `Cannot shard APR output: ${shards.length} shards exceed the limit of ${APR_MAX_SHARDS}; raise maxShardSize`,
    );
  }
  return shards;
}

function isCount(v: unknown, min = 0): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= min;
}

/**
 * Parse and check a manifest: structure, shard indices in order, file names
 * without folders, no tensor in two shards, `weight_map` agreeing with the
 * shard lists, and `tensor_count` matching them.
 *
 * @param text The manifest JSON.
 * @param path Its location, for messages.
 * @returns The manifest.
 * @throws {ModelFormatError} When a rule is broken.
 */
export function parseAprManifest(text: string, path: string): AprShardManifest {
  const fail = (reason: string, cause?: unknown): never => {
    throw new ModelFormatError(
      "APR",
      path,
      `manifest: ${reason}`,
      cause === undefined ? {} : { cause },
    );
  };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    fail(`not valid JSON: ${(cause as Error).message}`, cause);
  }
  if (jsonNestsDeeperThan(text)) fail(`nests deeper than ${MAX_JSON_DEPTH} levels`);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    fail("not a JSON object");
  }
  const m = value as Record<string, unknown>;
  if (m.version !== "2.0") fail(`version ${JSON.stringify(m.version)} is not "2.0"`);
  if (!isCount(m.shard_count, 1) || m.shard_count > APR_MAX_SHARDS) {
    fail(
      `shard_count ${JSON.stringify(m.shard_count)} is not an integer in [1, ${APR_MAX_SHARDS}]`,
    );
  }
  if (!isCount(m.total_size)) fail("total_size is not a non-negative integer");
  if (!isCount(m.tensor_count)) fail("tensor_count is not a non-negative integer");
  if (!Array.isArray(m.shards)) fail("shards is not an array");
  const shards = m.shards as unknown[];
  const count = m.shard_count as number;
  if (shards.length !== count) {
    fail(`shard_count is ${count} but shards lists ${shards.length}`);
  }
  const owner = new Map<string, number>();
  shards.forEach((s, i) => {
    if (typeof s !== "object" || s === null) fail(`shards[${i}] is not an object`);
    const shard = s as Record<string, unknown>;
    if (
      typeof shard.filename !== "string" || shard.filename === "" ||
      /[\\/]/.test(shard.filename) || shard.filename === ".." || shard.filename === "."
    ) {
      fail(`shards[${i}].filename ${JSON.stringify(shard.filename)} is not a plain file name`);
    }
    if (shard.index !== i) {
      fail(`shards[${i}].index is ${JSON.stringify(shard.index)}, expected ${i}`);
    }
    if (!isCount(shard.size)) fail(`shards[${i}].size is not a non-negative integer`);
    if (!Array.isArray(shard.tensors) || shard.tensors.some((t) => typeof t !== "string")) {
      fail(`shards[${i}].tensors is not an array of names`);
    }
    for (const name of shard.tensors as string[]) {
      const before = owner.get(name);
      if (before !== undefined) fail(`tensor "${name}" is listed in shards ${before} and ${i}`);
      owner.set(name, i);
    }
  });
  if (typeof m.weight_map !== "object" || m.weight_map === null || Array.isArray(m.weight_map)) {
    fail("weight_map is not an object");
  }
  const map = m.weight_map as Record<string, unknown>;
  for (const [name, index] of Object.entries(map)) {
    const listed = owner.get(name);
    if (listed === undefined) fail(`weight_map names tensor "${name}", which no shard lists`);
    if (index !== listed) {
      fail(
        `weight_map puts tensor "${name}" in shard ${
          JSON.stringify(index)
        }, shards[${listed}] lists it`,
      );
    }
  }
  for (const name of owner.keys()) {
    if (!(name in map)) fail(`tensor "${name}" is listed in a shard but missing from weight_map`);
  }
  if (owner.size !== m.tensor_count) {
    fail(`tensor_count is ${m.tensor_count} but the shards list ${owner.size} tensors`);
  }
  return m as unknown as AprShardManifest;
}
