// This module is browser compatible.

/**
 * A Hugging Face SafeTensors model as one logical {@linkcode ModelReader}:
 * either `model.safetensors.index.json` and exactly the shards it names
 * (FORMATS.md §2, never a glob), or a single `model.safetensors`, plus the
 * companion metadata (`config.json`, `tokenizer.json`…).
 *
 * @module
 */

import { ModelFormatError } from "../../errors.ts";
import { DEFAULT_CHUNK_SIZE } from "../../io/byte_source.ts";
import { aprMetadataFromHf, readHfCompanionFiles, withTensorCounts } from "./hf_metadata.ts";
import {
  dequantizeCheckpoint,
  quantizationConfig,
  refuseUnlabelledQuantized,
} from "../../quant/checkpoint/mod.ts";
import { jsonHoldsMoreThan } from "../../io/json_depth.ts";
import { type ModelFiles, readCheckedFile } from "../../io/model_files.ts";
import type {
  ModelHeader,
  ModelMetadata,
  ModelReader,
  TensorEntry,
  TensorInfo,
} from "../../tensor.ts";
import { MAX_TENSORS, parseSafetensorsHeader, type SafetensorsHeader } from "./header.ts";
import { ShardPool } from "../../io/shard_pool.ts";
import { openSafetensors } from "./reader.ts";
import { withSentenceDense } from "./sentence_dense.ts";

/** The index file name `transformers` writes. */
export const SAFETENSORS_INDEX_NAME = "model.safetensors.index.json";

/** The single-file name `transformers` writes when a model fits in one shard. */
export const SAFETENSORS_SINGLE_NAME = "model.safetensors";

/** Most shards an index may name (FORMATS.md I5): the largest real models use a few hundred. */
export const MAX_SHARDS = 10_000;

/**
 * Most entries (weight_map members, metadata fields) an index may hold: one
 * per tensor, and a file holds at most {@linkcode MAX_TENSORS}; real indexes
 * list fewer than 10^5.
 */
export const MAX_INDEX_ITEMS = 2 * MAX_TENSORS;

/** Largest index file read (FORMATS.md I5), checked before reading: real ones are under 10 MB. */
export const MAX_INDEX_BYTES = 250_000_000;

/** Shard headers read at once while opening a model. */
const HEADER_READ_CONCURRENCY = 8;

/** Options of {@linkcode openSafetensorsModel}. */
export interface OpenSafetensorsModelOptions {
  /**
   * Path of the index file inside `files`, when it is not the default name
   * (e.g. a path the user gave). Shards are resolved beside it.
   *
   * @default {"model.safetensors.index.json", else "model.safetensors"}
   */
  indexPath?: string;
  /** Receives warnings that do not stop reading (FORMATS.md I12). */
  onWarning?: (message: string) => void;
  /**
   * Largest chunk a tensor payload stream yields, in bytes.
   *
   * @default {DEFAULT_CHUNK_SIZE}
   */
  chunkSize?: number;
  /**
   * Read `config.json`, `tokenizer.json`… into the metadata.
   *
   * @default {true}
   */
  companions?: boolean;
  /**
   * Serve the tensors as stored: a quantized checkpoint's packed weights and
   * scales as they are, not dequantized (for tools that inspect them).
   *
   * @default {false}
   */
  asStored?: boolean;
  /**
   * For GGUF output: serve the packed tensors of a method llama.cpp's
   * converter keeps (gpt-oss's MXFP4, NVFP4) as stored, checked, and dequantize the
   * others.
   *
   * @default {false}
   */
  packedForGguf?: boolean;
}

/** A SafeTensors model (one file or N shards) as one reader. */
export interface SafetensorsModelReader extends ModelReader {
  /** Paths inside the repository of the SafeTensors files read, in reading order. */
  readonly shards: readonly string[];
  /**
   * The `quantization_config.quant_method` whose tensors this reader serves
   * dequantized (`fp8`, `gptq`…), or `undefined` for a plain checkpoint.
   */
  readonly quantMethod?: string | undefined;
  /**
   * The ggml type of the packed tensors served as stored, for GGUF output
   * (see `packedForGguf`), when there are any.
   */
  readonly quantKept?: "MXFP4" | "NVFP4";
  /**
   * The weights this reader makes by dequantizing a quantized checkpoint's
   * groups (served as F32), by name, when it keeps none as stored.
   */
  readonly quantDequantized?: readonly string[];
  /**
   * Of those made under names no file holds, the stored tensor marking each
   * one's group (`.qweight`…): llama.cpp's converter orders them by it.
   */
  readonly quantMarkedBy?: ReadonlyMap<string, string>;
  /**
   * The shard (its path or URL) holding a tensor, for messages; `undefined`
   * for one the reader makes (a dequantized checkpoint's weights).
   */
  readonly shardOf?: (tensor: string) => string | undefined;
}

/** N shards as one reader. */
class ShardedReader implements SafetensorsModelReader {
  readonly header: ModelHeader;
  readonly shards: readonly string[];
  readonly shardOf: (tensor: string) => string | undefined;
  #pool: ShardPool;
  #headers: readonly SafetensorsHeader[];
  #chunkSize: number;
  /** Per tensor (in `header.tensors` order): its shard, and its place in that shard's header. */
  #shard: Uint32Array;
  #local: Uint32Array;
  /** The entries, made on first use (streaming makes one at a time, see `entry`). */
  #tensors: readonly TensorEntry[] | undefined;

  constructor(
    metadata: ModelMetadata,
    shards: readonly string[],
    headers: readonly SafetensorsHeader[],
    pool: ShardPool,
    chunkSize: number,
    locate: (path: string) => string,
  ) {
    this.shards = shards;
    this.#pool = pool;
    this.#headers = headers;
    this.#chunkSize = chunkSize;
    const shardOf = new Map<string, string>();
    headers.forEach((h, i) => h.tensors.forEach((t) => shardOf.set(t.name, locate(shards[i]!))));
    this.shardOf = (tensor) => shardOf.get(tensor);
    const infos: TensorInfo[] = [];
    const count = headers.reduce((n, h) => n + h.tensors.length, 0);
    this.#shard = new Uint32Array(count);
    this.#local = new Uint32Array(count);
    headers.forEach((header, shard) => {
      header.tensors.forEach((t, local) => {
        this.#shard[infos.length] = shard;
        this.#local[infos.length] = local;
        infos.push({ name: t.name, dtype: t.dtype, shape: t.shape, byteLength: t.byteLength });
      });
    });
    this.header = { format: "safetensors", metadata, tensors: infos };
  }

  /** One entry per tensor, made on first use. */
  get tensors(): readonly TensorEntry[] {
    this.#tensors ??= this.header.tensors.map((_, i) => this.entry(i));
    return this.#tensors;
  }

  /**
   * Entry `index`, made afresh (`modelChunks` streams through it: one entry
   * at a time, not two closures per tensor up front). Never throws.
   *
   * @param index Position in `header.tensors`.
   * @returns The entry.
   */
  entry(index: number): TensorEntry {
    const shard = this.#shard[index]!;
    const header = this.#headers[shard]!;
    const t = header.tensors[this.#local[index]!]!;
    const start = header.dataOffset + t.dataOffsets[0];
    const end = header.dataOffset + t.dataOffsets[1];
    const pool = this.#pool;
    const chunkSize = this.#chunkSize;
    return {
      info: this.header.tensors[index]!,
      open: () => pool.stream(shard, start, end, chunkSize, t.name),
      slice: (from, to) => pool.stream(shard, start + from, start + to, chunkSize, t.name),
    };
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}

/** A model read from a single SafeTensors file plus companion metadata. */
class SingleFileReader implements SafetensorsModelReader {
  readonly header: ModelHeader;
  readonly shards: readonly string[] = [SAFETENSORS_SINGLE_NAME];
  readonly entry?: (index: number) => TensorEntry;
  readonly shardOf: (tensor: string) => string | undefined;
  #inner: ModelReader;

  constructor(inner: ModelReader, metadata: ModelMetadata, location: string) {
    this.#inner = inner;
    this.header = { ...inner.header, metadata };
    if (inner.entry !== undefined) this.entry = (index) => inner.entry!(index);
    const names = new Set(inner.header.tensors.map((t) => t.name));
    this.shardOf = (tensor) => names.has(tensor) ? location : undefined;
  }

  /** The inner reader's entries, made on first use there. */
  get tensors(): readonly TensorEntry[] {
    return this.#inner.tensors;
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}

function dirname(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash === -1 ? "" : path.slice(0, slash);
}

/** FORMATS.md I4: a name that could point outside the model's folder. */
function unsafeShardName(name: string): string | undefined {
  if (name === "") return "it is empty";
  if (name.includes("..")) return 'it contains ".."';
  if (name.startsWith("/")) return 'it starts with "/"';
  if (name.includes("\\")) return 'it contains "\\"';
  if (name.includes("://")) return 'it contains "://"';
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f]/.test(name)) return "it contains a control character";
  return undefined;
}

function mergeMetadata(
  companions: ModelMetadata,
  sourceMetadata: Record<string, string> | undefined,
): ModelMetadata {
  const metadata: ModelMetadata = { original_format: "safetensors", ...companions };
  metadata.original_format = "safetensors";
  if (sourceMetadata !== undefined) metadata["source_metadata"] = sourceMetadata;
  return metadata;
}

/**
 * Open a Hugging Face SafeTensors model: `model.safetensors.index.json` and
 * the shards it names if it exists (never a glob: stray `*.safetensors` files
 * are not read), else `model.safetensors`. Every shard header is read and
 * checked against the index (FORMATS.md I1–I12) before this resolves;
 * tensor data is read only when a payload is opened. Companion files in the
 * same folder feed the metadata (see `readHfCompanions`).
 *
 * Metadata: `original_format: "safetensors"`, the companion fields, and
 * `source_metadata`, the shards' `__metadata__` merged (the first shard that
 * sets a key wins). Tensor order: shards sorted by name, then data offset.
 *
 * @example Usage
 * ```ts ignore
 * import { openSafetensorsModel } from "./sharded.ts";
 * import { LocalModelFiles } from "../../io/model_files.ts";
 * const model = await openSafetensorsModel(new LocalModelFiles("./phi-4"), {
 *   onWarning: (message) => console.warn(message),
 * });
 * console.log(model.header.tensors.length);
 * await model.close();
 * ```
 *
 * @param files The repository (local folder, Hub cache snapshot, remote Hub).
 * @param options Index path, warnings, chunk size, companions.
 * @returns One reader over all shards; close it to close them.
 * @throws {ModelFormatError} For a bad index (format `"SafeTensors index"`),
 * a bad shard (`"SafeTensors"`), or when neither file exists (`"model"`).
 */
export async function openSafetensorsModel(
  files: ModelFiles,
  options: OpenSafetensorsModelOptions = {},
): Promise<SafetensorsModelReader> {
  const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
  if (!Number.isSafeInteger(chunkSize) || chunkSize <= 0) {
    throw new RangeError(`Cannot open "${files.name}": chunk size ${chunkSize} is not positive`);
  }
  const listing = new Set(await files.list());
  let indexPath = options.indexPath;
  if (indexPath !== undefined && !listing.has(indexPath)) {
    throw new ModelFormatError("model", files.name, `no file "${indexPath}" in the model`);
  }
  if (indexPath === undefined && listing.has(SAFETENSORS_INDEX_NAME)) {
    indexPath = SAFETENSORS_INDEX_NAME;
  }
  let config: unknown;
  let hfQuantConfig: unknown;
  let densePaths: string[] = [];
  const companions = async (
    directory: string,
    tensors: readonly {
      readonly name: string;
      readonly shape: readonly number[];
      readonly byteLength: number;
    }[],
  ): Promise<ModelMetadata> => {
    if (options.companions === false) return {};
    const parsed = await readHfCompanionFiles(files, { directory, tensors });
    config = parsed.config;
    hfQuantConfig = parsed.hfQuantConfig;
    densePaths = (parsed.sentenceDense ?? []).map((d) => d.path);
    return withTensorCounts(aprMetadataFromHf(parsed), tensors.map((t) => t.name));
  };

  if (indexPath === undefined) {
    if (!listing.has(SAFETENSORS_SINGLE_NAME)) {
      throw new ModelFormatError(
        "model",
        files.name,
        `no "${SAFETENSORS_INDEX_NAME}" or "${SAFETENSORS_SINGLE_NAME}" found`,
      );
    }
    const reader = await openSafetensors(await files.open(SAFETENSORS_SINGLE_NAME), { chunkSize });
    try {
      const metadata = mergeMetadata(
        await companions("", reader.header.tensors),
        reader.safetensorsHeader.metadata === undefined
          ? undefined
          : { ...reader.safetensorsHeader.metadata },
      );
      const model = await dequantized(
        new SingleFileReader(reader, metadata, files.name),
        config,
        files.name,
        options,
        hfQuantConfig,
      );
      return await withSentenceDense(model, files, "", densePaths, chunkSize);
    } catch (error) {
      await reader.close();
      throw error;
    }
  }

  const indexLocation = files.locate(indexPath);
  const fail = (reason: string, cause?: unknown): ModelFormatError =>
    new ModelFormatError(
      "SafeTensors index",
      indexLocation,
      reason,
      cause === undefined ? {} : { cause },
    );
  const index = await readIndex(files, indexPath, fail);
  const directory = dirname(indexPath);
  const prefix = directory === "" ? "" : `${directory}/`;

  // Shards in name order: transformers zero-pads the numbers, so this is
  // 00001, 00002, … whatever order the weight_map lists tensors in.
  const shardNames = [...new Set(index.weightMap.values())].sort();
  if (shardNames.length > MAX_SHARDS) {
    throw fail(`too large: ${shardNames.length} shards exceeds the ${MAX_SHARDS}-shard limit`);
  }
  for (const name of shardNames) {
    const unsafe = unsafeShardName(name);
    if (unsafe !== undefined) {
      throw fail(`unsafe shard name ${JSON.stringify(name)}: ${unsafe}`);
    }
  }
  // I8: check every shard exists before reading any.
  for (const name of shardNames) {
    if (!listing.has(prefix + name)) {
      throw fail(`missing shard "${name}": the index names it but the file does not exist`);
    }
  }

  const paths = shardNames.map((name) => prefix + name);
  const headers: SafetensorsHeader[] = new Array(paths.length);
  const sizes: number[] = new Array(paths.length);
  // A few headers at a time: over HTTP each is two small range requests, and
  // a 163-shard model should not wait for them one by one.
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < paths.length && !failed) {
      const shard = next++;
      const source = await files.open(paths[shard]!);
      try {
        headers[shard] = await parseSafetensorsHeader(source);
        sizes[shard] = source.size;
      } catch (error) {
        failed = true;
        throw error;
      } finally {
        await source.close();
      }
    }
  };
  const results = await Promise.allSettled(
    Array.from({ length: Math.min(HEADER_READ_CONCURRENCY, paths.length) }, worker),
  );
  // Every worker has closed its source by now; report the first failure.
  const rejected = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (rejected !== undefined) throw rejected.reason;

  // I6, I7, I9, I10: the shards must hold exactly the tensors the index maps to them.
  const foundIn = new Map<string, number[]>();
  headers.forEach((header, shard) => {
    for (const t of header.tensors) {
      const list = foundIn.get(t.name);
      if (list === undefined) foundIn.set(t.name, [shard]);
      else list.push(shard);
    }
  });
  for (const [name, shards] of foundIn) {
    if (shards.length > 1) {
      throw fail(
        `duplicate tensor "${name}": it is in both "${shardNames[shards[0]!]}" and "${
          shardNames[shards[1]!]
        }"`,
      );
    }
    const mapped = index.weightMap.get(name);
    const actual = shardNames[shards[0]!]!;
    if (mapped === undefined) {
      throw fail(`unexpected tensor "${name}" in shard "${actual}": the index does not list it`);
    }
    if (mapped !== actual) {
      throw fail(
        `mismatch: tensor "${name}" is mapped to shard "${mapped}" but found only in "${actual}"`,
      );
    }
  }
  for (const [name, shard] of index.weightMap) {
    if (!foundIn.has(name)) {
      throw fail(
        `missing tensor "${name}": the index maps it to shard "${shard}", which does not contain it`,
      );
    }
  }

  // I12: a wrong total_size is a sign, not a reason to refuse the model.
  const total = headers.reduce((sum, h) => sum + h.dataByteLength, 0);
  if (typeof index.totalSize === "number" && index.totalSize !== total) {
    options.onWarning?.(
      `"${indexLocation}": metadata.total_size is ${index.totalSize} but the tensors hold ${total} bytes`,
    );
  }

  let sourceMetadata: Record<string, string> | undefined;
  for (const header of headers) {
    if (header.metadata === undefined) continue;
    sourceMetadata ??= {};
    for (const [k, v] of Object.entries(header.metadata)) {
      if (!Object.hasOwn(sourceMetadata, k)) {
        Object.defineProperty(sourceMetadata, k, {
          value: v,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
    }
  }
  const metadata = mergeMetadata(
    await companions(directory, headers.flatMap((h) => h.tensors)),
    sourceMetadata,
  );
  const model = await dequantized(
    new ShardedReader(
      metadata,
      paths,
      headers,
      new ShardPool(files, paths, sizes, "SafeTensors"),
      chunkSize,
      (path) => files.locate(path),
    ),
    config,
    files.name,
    options,
    hfQuantConfig,
  );
  return await withSentenceDense(model, files, prefix, densePaths, chunkSize);
}

/**
 * A quantized checkpoint's reader serving its dequantized tensors (see
 * `quant/checkpoint/mod.ts`); a plain one as it is. Closes the reader when
 * the checkpoint is refused.
 */
async function dequantized(
  reader: SafetensorsModelReader,
  config: unknown,
  location: string,
  options: { asStored?: boolean; packedForGguf?: boolean },
  hfQuantConfig?: unknown,
): Promise<SafetensorsModelReader> {
  if (options.asStored) return reader;
  // Not quantized: checked from the infos, so the reader's entries are not
  // all made here (streaming makes them one at a time, `modelChunks`).
  if (quantizationConfig(config, hfQuantConfig) === undefined) {
    try {
      refuseUnlabelledQuantized(reader.header.tensors, location);
    } catch (error) {
      await reader.close();
      throw error;
    }
    return reader;
  }
  let result;
  try {
    result = await dequantizeCheckpoint(reader.tensors, config, location, {
      packedForGguf: options.packedForGguf === true,
      hfQuantConfig,
    });
  } catch (error) {
    await reader.close();
    throw error;
  }
  if (result.method === undefined) return reader;
  const tensors = result.tensors;
  const read = new Set(reader.tensors);
  return {
    header: { ...reader.header, tensors: tensors.map((t) => t.info) },
    tensors,
    shards: reader.shards,
    ...(reader.shardOf !== undefined ? { shardOf: reader.shardOf } : {}),
    quantMethod: result.method,
    ...(result.kept !== undefined ? { quantKept: result.kept } : {
      quantDequantized: tensors.filter((t) => !read.has(t)).map((t) => t.info.name),
      ...(result.made !== undefined ? { quantMarkedBy: result.made } : {}),
    }),
    close: () => reader.close(),
  };
}

interface SafetensorsIndex {
  weightMap: Map<string, string>;
  totalSize: unknown;
}

/** I1, I2, I3, I5 (file size): read and shape-check the index. */
async function readIndex(
  files: ModelFiles,
  path: string,
  fail: (reason: string, cause?: unknown) => ModelFormatError,
): Promise<SafetensorsIndex> {
  const bytes = await readCheckedFile(files, path, (size) => {
    if (size > MAX_INDEX_BYTES) {
      throw fail(`too large: ${size} bytes exceeds the ${MAX_INDEX_BYTES}-byte limit`);
    }
  });
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (cause) {
    throw fail("invalid index: not valid UTF-8", cause);
  }
  // Checked before parsing: JSON.parse of millions of tiny entries takes minutes and gigabytes.
  if (jsonHoldsMoreThan(text, MAX_INDEX_ITEMS)) {
    throw fail(`too large: more than ${MAX_INDEX_ITEMS} entries`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw fail(`invalid index: not JSON (${(cause as Error).message})`, cause);
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw fail("invalid index: the JSON is not an object");
  }
  const root = json as Record<string, unknown>;
  const map = root["weight_map"];
  if (map === null || typeof map !== "object" || Array.isArray(map)) {
    throw fail(`invalid index: "weight_map" is ${map === undefined ? "missing" : "not an object"}`);
  }
  const weightMap = new Map<string, string>();
  for (const [name, shard] of Object.entries(map)) {
    if (typeof shard !== "string") {
      throw fail(
        `invalid index: "weight_map" value of tensor ${JSON.stringify(name)} is not a string`,
      );
    }
    weightMap.set(name, shard);
  }
  const meta = root["metadata"];
  let totalSize: unknown;
  if (meta !== undefined && meta !== null) {
    if (typeof meta !== "object" || Array.isArray(meta)) {
      throw fail('invalid index: "metadata" is not an object');
    }
    totalSize = (meta as Record<string, unknown>)["total_size"];
  }
  return { weightMap, totalSize };
}
