// This module is browser compatible.

/**
 * A sharded APR set (APR_V2.md §8) as one {@linkcode ModelReader}, opened
 * from its manifest or from any of its shards. Every shard is opened and
 * checked by the strict APR reader, then the set is checked as a whole:
 * every shard present, each carrying flag SHARDED and `metadata.sharding`
 * with the right count and index and the same total, no tensor in two
 * shards, tensor bytes adding up to the total, and — with a manifest —
 * every tensor in the shard the manifest says, file sizes and counts agreeing.
 *
 * @module
 */

import { posix } from "../../runtime/path.ts";
import { ModelFormatError } from "../../errors.ts";
import { type ByteSource, DEFAULT_CHUNK_SIZE } from "../../io/byte_source.ts";
import { MAX_JSON_FILE_BYTES, type ModelFiles, readTextFile } from "../../io/model_files.ts";
import type {
  ModelHeader,
  ModelMetadata,
  ModelReader,
  TensorEntry,
  TensorInfo,
} from "../../tensor.ts";
import { APR_FLAGS } from "./header.ts";
import { compareUtf8Bytes } from "./index_entry.ts";
import { FooterCrcCheck } from "./footer_check.ts";
import { APR_MAX_TENSORS, AprReader } from "./reader.ts";
import {
  APR_MANIFEST_SUFFIX,
  APR_MAX_MANIFEST_BYTES,
  APR_MAX_SHARDS,
  type AprShardManifest,
  parseAprManifest,
  shardFileName,
} from "./sharded_manifest.ts";

/** Options of {@linkcode openShardedApr}. */
export interface OpenShardedAprOptions {
  /** Largest chunk a tensor stream yields. @default {DEFAULT_CHUNK_SIZE} */
  chunkSize?: number;
}

/** A sharded APR set read as one model. */
export interface ShardedAprReader extends ModelReader {
  /** Paths (inside the files) of the shards, index order. */
  readonly shards: readonly string[];
  /** The manifest, when the set was opened from one. */
  readonly manifest: AprShardManifest | undefined;
}

const SHARD_NAME = /^(.*)-(\d{5})-of-(\d{5})\.apr$/i;

/**
 * Whether an opened APR file is one shard of a set (flag SHARDED).
 *
 * @param reader An opened model reader.
 * @returns True for an APR shard.
 */
export function isAprShard(reader: ModelReader): reader is AprReader {
  return reader instanceof AprReader && (reader.aprHeader.flags & APR_FLAGS.SHARDED) !== 0;
}

/**
 * Open a sharded APR set from its manifest (`*.apr.manifest.json`) or any shard.
 *
 * @example Usage
 * ```ts ignore
 * import { openShardedApr } from "./sharded_reader.ts";
 * import { LocalModelFiles } from "../../io/model_files.ts";
 * const set = await openShardedApr(new LocalModelFiles("out"), "model.apr.manifest.json");
 * console.log(set.header.tensors.length, set.shards);
 * await set.close();
 * ```
 *
 * @param files The folder holding the set.
 * @param path The manifest's or a shard's path inside `files`.
 * @param options Chunk size.
 * @returns The reader over the whole set.
 * @throws {ModelFormatError} When a shard is missing or the set is inconsistent.
 */
export async function openShardedApr(
  files: ModelFiles,
  path: string,
  options: OpenShardedAprOptions = {},
): Promise<ShardedAprReader> {
  const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
  const folder = posix.dirname(path) === "." ? "" : `${posix.dirname(path)}/`;
  const where = files.locate(path);
  const fail = (reason: string, at = where): never => {
    throw new ModelFormatError("APR", at, reason);
  };
  let manifest: AprShardManifest | undefined;
  let names: string[];
  if (path.toLowerCase().endsWith(".json")) {
    const text = await readTextFile(
      files,
      path,
      Math.min(APR_MAX_MANIFEST_BYTES, MAX_JSON_FILE_BYTES),
    );
    if (text === undefined) fail("no such manifest file");
    manifest = parseAprManifest(text!, where);
    names = manifest.shards.map((s) => `${folder}${s.filename}`);
  } else {
    const first = await AprReader.open(await files.open(path));
    try {
      const sharding = first.header.metadata.sharding;
      if (!isAprShard(first) || !sharding) {
        fail("not a shard of a sharded APR set (flag SHARDED and metadata.sharding)");
      }
      const count = sharding!.shard_count;
      if (!Number.isSafeInteger(count) || count < 1 || count > APR_MAX_SHARDS) {
        fail(`metadata.sharding.shard_count ${count} is not in [1, ${APR_MAX_SHARDS}]`);
      }
      const pattern = typeof sharding!.pattern === "string" && sharding!.pattern.includes("{index}")
        ? sharding!.pattern
        : patternFromName(posix.basename(path), count);
      if (pattern === undefined) {
        fail("metadata.sharding.pattern is missing and the name is not NAME-0000i-of-0000N.apr");
      }
      names = Array.from({ length: count }, (_, i) => `${folder}${shardFileName(pattern!, i)}`);
    } finally {
      await first.close();
    }
  }
  const listing = new Set(await files.list());
  const infos: TensorInfo[] = [];
  const entries: TensorEntry[] = [];
  const owner = new Map<string, number>();
  let metadata: ModelMetadata | undefined;
  let totalSize: number | undefined;
  let payload = 0;
  const footers: [string, FooterCrcCheck][] = [];
  for (const [index, shardPath] of names.entries()) {
    const at = files.locate(shardPath);
    if (!listing.has(shardPath)) {
      fail(`shard ${index + 1} of ${names.length} "${shardPath}" is missing`);
    }
    const source = await files.open(shardPath);
    const shard = await AprReader.open(source, { chunkSize });
    const footer = new FooterCrcCheck(at, shard.fileSize);
    footers.push([shardPath, footer]);
    try {
      const s = shard.header.metadata.sharding;
      if (!isAprShard(shard) || !s) {
        fail("is listed as a shard but lacks flag SHARDED or metadata.sharding", at);
      }
      if (s!.shard_count !== names.length) {
        fail(`metadata.sharding.shard_count is ${s!.shard_count}, the set has ${names.length}`, at);
      }
      if (s!.shard_index !== index) {
        fail(`metadata.sharding.shard_index is ${s!.shard_index}, expected ${index}`, at);
      }
      if (totalSize !== undefined && s!.total_size !== totalSize) {
        fail(
          `metadata.sharding.total_size is ${s!.total_size}, shard 1 says ${totalSize}`,
          at,
        );
      }
      totalSize = s!.total_size;
      const m = manifest?.shards[index];
      if (m) {
        if (m.size !== shard.fileSize) {
          fail(`is ${shard.fileSize} bytes, the manifest says ${m.size}`, at);
        }
        const here = new Set(shard.header.tensors.map((t) => t.name));
        for (const t of m.tensors) {
          if (!here.has(t)) fail(`lacks tensor "${t}", which the manifest puts in it`, at);
        }
      }
      for (const t of shard.tensors) {
        const name = t.info.name;
        const before = owner.get(name);
        if (before !== undefined) {
          fail(`tensor "${name}" is in shards ${before + 1} and ${index + 1}`, at);
        }
        if (manifest && manifest.weight_map[name] !== index) {
          const said = manifest.weight_map[name];
          fail(
            said === undefined
              ? `holds tensor "${name}", which the manifest does not list`
              : `holds tensor "${name}", which the manifest puts in shard ${said + 1}`,
            at,
          );
        }
        owner.set(name, index);
        // Each shard is within the per-file limit; the set as a whole is too.
        if (owner.size > APR_MAX_TENSORS) {
          fail(`the set holds more than ${APR_MAX_TENSORS} tensors`, at);
        }
        payload += t.size;
        infos.push(t.info);
        entries.push({
          info: t.info,
          open: () =>
            footer.wrap(
              t.fileOffset,
              lazyStream(files, shardPath, t.fileOffset, t.size, chunkSize),
            ),
        });
      }
      if (metadata === undefined) metadata = shard.header.metadata;
    } finally {
      await shard.close();
    }
  }
  if (payload !== totalSize) {
    fail(
      `the shards hold ${payload} bytes of tensors, metadata.sharding.total_size says ${totalSize}`,
    );
  }
  if (manifest) {
    if (manifest.total_size !== payload) {
      fail(
        `manifest total_size ${manifest.total_size} does not match the shards' ${payload} bytes`,
      );
    }
    if (manifest.tensor_count !== infos.length) {
      fail(
        `manifest tensor_count ${manifest.tensor_count}, the shards hold ${infos.length} tensors`,
      );
    }
  }
  // One index order for the set, as a single APR file would have (APR_V2.md §4),
  // so converting a set gives the same bytes as converting the unsharded file.
  const order = entries.map((_, i) => i).sort((a, b) =>
    compareUtf8Bytes(entries[a]!.info.name, entries[b]!.info.name)
  );
  const sortedEntries = order.map((i) => entries[i]!);
  const sortedInfos = sortedEntries.map((e) => e.info);
  const { sharding: _, ...rest } = metadata ?? {};
  const header: ModelHeader = {
    format: "apr",
    metadata: {
      ...rest,
      total_size: payload,
      param_count: infos.reduce((s, t) => s + t.shape.reduce((a, d) => a * d, 1), 0),
    },
    tensors: sortedInfos,
  };
  return {
    header,
    tensors: sortedEntries,
    shards: names,
    manifest,
    close: () => Promise.resolve(),
    // Each shard's footer CRC, from the tensors read plus what they left out.
    async verify() {
      for (const [shardPath, footer] of footers) {
        const source = await files.open(shardPath);
        try {
          await footer.verify(source);
        } finally {
          await source.close();
        }
      }
    },
  };
}

/** The `{index}` pattern of a shard named `NAME-0000i-of-0000N.apr`, if it is one. */
function patternFromName(name: string, count: number): string | undefined {
  const m = SHARD_NAME.exec(name);
  if (!m || Number(m[3]) !== count) return undefined;
  return `${m[1]}-{index}-of-${m[3]}.apr`;
}

/**
 * The manifest name of a set whose shards follow the default naming, for messages and lookups.
 *
 * @param shardName A shard's file name.
 * @returns `NAME.apr.manifest.json`, or undefined for other names.
 */
export function aprManifestNameOf(shardName: string): string | undefined {
  const m = SHARD_NAME.exec(shardName);
  return m ? `${m[1]}${APR_MANIFEST_SUFFIX}` : undefined;
}

/** Stream `[start, start+size)` of a shard, opening it on first read and closing it at the end. */
function lazyStream(
  files: ModelFiles,
  path: string,
  start: number,
  size: number,
  chunkSize: number,
): ReadableStream<Uint8Array> {
  let source: ByteSource | undefined;
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const release = async (): Promise<void> => {
    const s = source;
    source = undefined;
    await s?.close();
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (reader === undefined) {
          source = await files.open(path);
          reader = source.stream(start, start + size, chunkSize).getReader();
        }
        const { done, value } = await reader.read();
        if (done) {
          await release();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (error) {
        await release().catch(() => {});
        throw error;
      }
    },
    async cancel(reason) {
      await reader?.cancel(reason).catch(() => {});
      await release();
    },
  }, { highWaterMark: 0 });
}
