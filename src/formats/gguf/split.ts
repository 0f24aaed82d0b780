// This module is browser compatible.

/**
 * Split GGUF sets — llama.cpp's `gguf-split` layout, how every GGUF over the
 * Hub's 50 GB file limit is published — read as one model: shards named
 * `PREFIX-0000i-of-0000N.gguf` (`llama_split_path`), each carrying `split.no`
 * (0-based, u16), `split.count` (u16) and `split.tensors.count` (i32); the
 * model's metadata in the first shard; every tensor whole in one shard.
 *
 * Opened from any shard, the set is found by name, every shard's header is
 * read and checked (a missing, extra or mismatched shard is one
 * {@linkcode ModelFormatError}), and tensors stream shard after shard with
 * at most a few shards open at once.
 *
 * @module
 */

import { posix } from "../../runtime/path.ts";
import { ModelFormatError } from "../../errors.ts";
import { DEFAULT_CHUNK_SIZE } from "../../io/byte_source.ts";
import type { ModelFiles } from "../../io/model_files.ts";
import { ShardPool } from "../../io/shard_pool.ts";
import type { ModelHeader, ModelReader, TensorEntry, TensorInfo } from "../../tensor.ts";
import { GGUF_MAX_TENSORS, type GgufHeader, parseGgufHeader } from "./header.ts";
import { ggufToAprMetadata } from "./metadata.ts";
import { GGUF_SPLIT_KEY_SET, GGUF_SPLIT_KEYS } from "./split_keys.ts";

export { GGUF_SPLIT_KEYS };
import { type GgufReader, ggufTensorNames, type OpenGgufOptions } from "./reader.ts";

/** Most shards a set can have: `split.count` is a u16. */
export const GGUF_MAX_SPLITS = 65_535;

const SPLIT_NAME = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/i;

/**
 * The file name of shard `index` (0-based) of `count`, as `llama_split_path`
 * spells it: `PREFIX-00001-of-00003.gguf`.
 *
 * @example Usage
 * ```ts
 * import { ggufSplitPath } from "./split.ts";
 * console.assert(ggufSplitPath("out/model", 0, 3) === "out/model-00001-of-00003.gguf");
 * ```
 *
 * @param prefix The path without the shard suffix.
 * @param index The 0-based shard index.
 * @param count The number of shards.
 * @returns The shard's path.
 */
export function ggufSplitPath(prefix: string, index: number, count: number): string {
  const pad = (n: number) => String(n).padStart(5, "0");
  return `${prefix}-${pad(index + 1)}-of-${pad(count)}.gguf`;
}

/**
 * Parse a split shard's path.
 * Never throws.
 *
 * @param path A path or file name.
 * @returns The prefix, 0-based index and count, or `undefined` when the name
 * is not `PREFIX-0000i-of-0000N.gguf` with 1 ≤ i ≤ N.
 */
export function parseGgufSplitPath(
  path: string,
): { prefix: string; index: number; count: number } | undefined {
  const m = SPLIT_NAME.exec(path);
  if (m === null) return undefined;
  const index = Number(m[2]) - 1;
  const count = Number(m[3]);
  if (index < 0 || count < 1 || index >= count) return undefined;
  return { prefix: m[1]!, index, count };
}

/**
 * The `split.count` a GGUF header declares when it is one shard of a set of
 * two or more (a `split.count` of 1 is an unsplit file, as llama.cpp reads it).
 * Never throws.
 *
 * @param gguf A parsed header.
 * @returns The shard count, or `undefined` for an unsplit file.
 */
export function ggufSplitCount(gguf: GgufHeader): number | undefined {
  const count = gguf.kv.get(GGUF_SPLIT_KEYS.count)?.value;
  return typeof count === "number" && Number.isSafeInteger(count) && count > 1 ? count : undefined;
}

/**
 * Whether an opened model is one shard of a split GGUF set: it has a
 * `split.count` other than 1 (a malformed one too, so that
 * {@linkcode openGgufSplit} refuses it rather than a shard being read as a
 * whole model).
 * Never throws.
 *
 * @param reader An opened model reader.
 * @returns True for a GGUF that declares a split.
 */
export function isGgufSplitShard(reader: ModelReader): reader is GgufReader {
  const gguf = (reader as Partial<GgufReader>).gguf;
  const entry = gguf?.kv.get(GGUF_SPLIT_KEYS.count);
  return entry !== undefined && entry.value !== 1;
}

/** A split GGUF set read as one model. */
export interface GgufSplitReader extends ModelReader {
  /** Paths (inside the files) of the shards, in order. */
  readonly shards: readonly string[];
  /** Every shard's GGUF header, in order (the first holds the model's metadata). */
  readonly ggufShards: readonly GgufHeader[];
}

/**
 * Open a split GGUF set from any of its shards.
 *
 * @example Usage
 * ```ts ignore
 * import { openGgufSplit } from "./split.ts";
 * import { LocalModelFiles } from "../../io/model_files.ts";
 * const set = await openGgufSplit(new LocalModelFiles("q4"), "model-00002-of-00003.gguf");
 * console.log(set.header.tensors.length, set.shards);
 * await set.close();
 * ```
 *
 * @param files The folder holding the set.
 * @param path Any shard's path inside `files`.
 * @param options Name mapping and chunk size.
 * @returns One reader over every shard.
 * @throws {ModelFormatError} When a shard is missing, extra, or disagrees
 * with the others (`split.no`, `split.count`, `split.tensors.count`), or a
 * header breaks a rule of FORMATS.md §3.
 */
export async function openGgufSplit(
  files: ModelFiles,
  path: string,
  options: OpenGgufOptions = {},
): Promise<GgufSplitReader> {
  const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
  const opened = await readShardHeader(files, path);
  const fail = (reason: string, at = files.locate(path)): never => {
    throw new ModelFormatError("GGUF", at, reason);
  };
  const declared = opened.gguf.kv.get(GGUF_SPLIT_KEYS.count)?.value;
  const count = ggufSplitCount(opened.gguf);
  if (count === undefined || count > GGUF_MAX_SPLITS) {
    fail(
      declared === undefined
        ? "not a shard of a split GGUF set (no split.count)"
        : `split.count is ${
          JSON.stringify(String(declared))
        }, not a number of shards from 2 to ${GGUF_MAX_SPLITS}`,
    );
  }
  const no = splitInteger(opened.gguf, GGUF_SPLIT_KEYS.no) ??
    fail(`has split.count ${count} but no integer ${GGUF_SPLIT_KEYS.no}`);
  const folder = posix.dirname(path) === "." ? "" : `${posix.dirname(path)}/`;
  const parsed = parseGgufSplitPath(posix.basename(path));
  if (parsed === undefined || parsed.index !== no || parsed.count !== count) {
    fail(
      `is shard ${no + 1} of ${count} of a split GGUF set (split.no, split.count), but its ` +
        `name is not PREFIX-${ggufSplitPath("", no, count!).slice(1)}, so the other shards ` +
        "cannot be found",
    );
  }
  const prefix = parsed!.prefix;
  const paths = Array.from({ length: count! }, (_, i) => folder + ggufSplitPath(prefix, i, count!));
  const listing = new Set(await files.list());
  const missing = paths.filter((p) => !listing.has(p));
  if (missing.length > 0) {
    fail(
      `split GGUF set of ${count} shards (split.count) is missing ${
        missing.length === 1 ? "shard" : `${missing.length} shards, first`
      } "${posix.basename(missing[0]!)}"`,
    );
  }
  const expected = new Set(paths);
  for (const other of listing) {
    if (expected.has(other) || posix.dirname(other) !== posix.dirname(path)) continue;
    const p = parseGgufSplitPath(posix.basename(other));
    if (p !== undefined && p.prefix === prefix) {
      fail(
        `"${posix.basename(other)}" sits beside the ${count}-shard set "${
          posix.basename(paths[0]!)
        }"…: an extra or mismatched shard (its name says ${p.index + 1} of ${p.count}); remove it`,
      );
    }
  }

  const headers: GgufHeader[] = [];
  const sizes: number[] = [];
  let declaredTensors: number | undefined;
  let held = 0;
  for (let i = 0; i < paths.length; i++) {
    const shard = i === no ? opened : await readShardHeader(files, paths[i]!);
    const at = files.locate(paths[i]!);
    const shardNo = splitInteger(shard.gguf, GGUF_SPLIT_KEYS.no);
    const shardCount = splitInteger(shard.gguf, GGUF_SPLIT_KEYS.count);
    const tensors = splitInteger(shard.gguf, GGUF_SPLIT_KEYS.tensorsCount);
    if (shardNo !== i) {
      fail(`shard ${i + 1} of ${count} has ${describe(GGUF_SPLIT_KEYS.no, shardNo, i)}`, at);
    }
    if (shardCount !== count) {
      fail(
        `shard ${i + 1} of ${count} has ${describe(GGUF_SPLIT_KEYS.count, shardCount, count!)}`,
        at,
      );
    }
    if (tensors === undefined || tensors < 0) {
      fail(`shard ${i + 1} of ${count} has no ${GGUF_SPLIT_KEYS.tensorsCount}`, at);
    }
    if (declaredTensors !== undefined && tensors !== declaredTensors) {
      fail(
        `shard ${
          i + 1
        } says ${GGUF_SPLIT_KEYS.tensorsCount} = ${tensors}, shard 1 says ${declaredTensors}`,
        at,
      );
    }
    declaredTensors = tensors!;
    held += shard.gguf.tensors.length;
    if (held > GGUF_MAX_TENSORS) {
      fail(
        `the shards hold more than the ${GGUF_MAX_TENSORS} tensors a model may have in all`,
        at,
      );
    }
    // Only the first shard's metadata is the model's: the others keep their
    // split keys, so a set of many shards cannot hold many headers' metadata.
    headers.push(i === 0 ? shard.gguf : { ...shard.gguf, kv: splitKeysOf(shard.gguf) });
    sizes.push(shard.size);
  }
  if (held !== declaredTensors) {
    fail(
      `the ${count} shards hold ${held} tensors, but ${GGUF_SPLIT_KEYS.tensorsCount} says ${declaredTensors}`,
      files.locate(paths[0]!),
    );
  }

  const first = headers[0]!;
  const names = ggufTensorNames(
    first.kv,
    headers,
    options.keepNames === true,
    files.locate(paths[0]!),
  );
  const pool = new ShardPool(files, paths, sizes, "GGUF");
  const entries: TensorEntry[] = [];
  headers.forEach((gguf, shard) => {
    for (const t of gguf.tensors) {
      const info: TensorInfo = {
        name: names[entries.length]!,
        dtype: t.dtype,
        shape: [...t.ne].reverse(),
        byteLength: t.byteLength,
      };
      const start = gguf.dataOffset + t.offset;
      entries.push({
        info,
        open: () => pool.stream(shard, start, start + t.byteLength, chunkSize, info.name),
        slice: (from, to) => pool.stream(shard, start + from, start + to, chunkSize, info.name),
      });
    }
  });
  const header: ModelHeader = {
    format: "gguf",
    metadata: ggufToAprMetadata(first.kv),
    tensors: entries.map((e) => e.info),
  };
  return {
    header,
    tensors: entries,
    shards: paths,
    ggufShards: headers,
    close: () => pool.close(),
  };
}

async function readShardHeader(
  files: ModelFiles,
  path: string,
): Promise<{ gguf: GgufHeader; size: number }> {
  const source = await files.open(path);
  try {
    return { gguf: await parseGgufHeader(source), size: source.size };
  } finally {
    await source.close();
  }
}

function splitKeysOf(gguf: GgufHeader): GgufHeader["kv"] {
  return new Map([...gguf.kv].filter(([key]) => GGUF_SPLIT_KEY_SET.has(key)));
}

function splitInteger(gguf: GgufHeader, key: string): number | undefined {
  const v = gguf.kv.get(key)?.value;
  return typeof v === "number" && Number.isSafeInteger(v) ? v : undefined;
}

function describe(key: string, found: number | undefined, expected: number): string {
  return found === undefined
    ? `no integer ${key} (expected ${expected})`
    : `${key} = ${found} (expected ${expected})`;
}

/** One GGUF model of a repository: a single file, or the files of one split set. */
export interface GgufGroup {
  /** The files, shard order (one for an unsplit file). */
  readonly files: readonly string[];
  /** The quantization tag its name ends with (llama.cpp's rule, upper case), or `""`. */
  readonly tag: string;
}

/**
 * llama.cpp's rule for which `.gguf` files of a repository are models: not a
 * multimodal projector, an importance matrix or a draft/MTP model.
 */
function isModelGguf(path: string): boolean {
  const name = path.slice(path.lastIndexOf("/") + 1);
  return name.toLowerCase().endsWith(".gguf") &&
    !["mmproj", "imatrix", "mtp-", "eagle3-", "dflash-", "dspark-"].some((k) => name.includes(k));
}

/**
 * Group a repository's model GGUF files into models: the shards of one split
 * set (same folder, prefix and count) are one; every other file is its own.
 * Never throws.
 *
 * @param files Paths in the repository.
 * @returns The models, in the order their first file appears.
 */
export function ggufGroups(files: readonly string[]): GgufGroup[] {
  const groups = new Map<string, string[]>();
  for (const f of files) {
    if (!isModelGguf(f)) continue;
    const split = parseGgufSplitPath(f);
    const key = split === undefined ? f : `${split.prefix}\0${split.count}`;
    const list = groups.get(key);
    if (list === undefined) groups.set(key, [f]);
    else list.push(f);
  }
  return [...groups.values()].map((list) => {
    const sorted = [...list].sort();
    const base = sorted[0]!.slice(sorted[0]!.lastIndexOf("/") + 1);
    const stem = parseGgufSplitPath(base)?.prefix ?? base.replace(/\.gguf$/i, "");
    // llama.cpp's get_gguf_split_info: the tag is the last [-.]-separated word.
    const tag = /[-.]([A-Z0-9_]+)$/i.exec(stem)?.[1]?.toUpperCase() ?? "";
    return { files: sorted, tag };
  });
}

/**
 * The tags of some GGUF models, for a message.
 * Never throws.
 *
 * @param groups Models from {@linkcode ggufGroups}.
 * @returns `"available: Q4_K_M, Q8_0"`, or a note that no name carries a tag.
 */
export function availableGgufTags(groups: readonly GgufGroup[]): string {
  const tags = [...new Set(groups.map((g) => g.tag).filter((t) => t !== ""))].sort();
  return tags.length === 0 ? "no file name ends with a tag" : `available: ${tags.join(", ")}`;
}
