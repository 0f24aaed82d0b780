/**
 * `openModel()`: open any model aprkit reads — a local file or folder, a URL,
 * a `Blob`, or a Hugging Face reference — as one {@linkcode Model}.
 *
 * @module
 */

import { posix } from "../runtime/path.ts";
import { HubUnreachableError, ModelFormatError, UsageError } from "../errors.ts";
import { hexBytes } from "../formats/_hex.ts";
import { openGguf } from "../formats/gguf/reader.ts";
import {
  availableGgufTags,
  ggufGroups,
  isGgufSplitShard,
  openGgufSplit,
} from "../formats/gguf/split.ts";
import { APR_MANIFEST_SUFFIX } from "../formats/apr/manifest_suffix.ts";
import { BlobSource } from "../io/blob_source.ts";
import type { ByteSource } from "../io/byte_source.ts";
import { openFileSource } from "../io/file_source.ts";
import { BlobFolder } from "../io/blob_folder.ts";
import { abortableFiles } from "../io/abortable_reads.ts";
import type { PullProgressEvent } from "../sources/hub_pull.ts";
import { DEFAULT_REVISION, formatHubRef, isHubRef, parseHubRef } from "../sources/hub_ref.ts";
import { type HubSettings, hubSettingsFromEnv } from "../sources/hub_settings.ts";
import {
  localSourceIdentity,
  pinnedSourceIdentity,
  rememberSourceIdentity,
} from "./source_identity.ts";
import { LocalModelFiles, type ModelFiles } from "../io/model_files.ts";
import type { ModelReader } from "../tensor.ts";
import { DETECT_BYTES, detectFormat } from "./detect_format.ts";
import { Model } from "./model.ts";
import { fs, notFoundError } from "../runtime/fs.ts";

/** Where a model can come from. */
export type ModelLocation = string | URL | Blob | BlobFolder;

/** Options of {@linkcode openModel}. */
export interface OpenModelOptions {
  /** Keep GGUF tensor names instead of mapping them to Hugging Face names. @default false */
  keepNames?: boolean;
  /** Hub revision (branch, tag or commit), overriding `@revision` in the reference. */
  revision?: string | undefined;
  /** For `hf://`: stream byte ranges from the Hub instead of filling the cache. @default false */
  noCache?: boolean;
  /** For `hf://`: parallel downloads. */
  jobs?: number | undefined;
  /** Hub settings; by default read from `HF_*` environment variables. */
  hubSettings?: HubSettings;
  /** Download progress of an `hf://` model filling the cache. */
  onDownloadProgress?: (event: PullProgressEvent) => void;
  /** Warnings that do not stop reading (e.g. an index's `total_size` mismatch). */
  onWarning?: (message: string) => void;
  /**
   * For GGUF output: a quantized checkpoint whose blocks llama.cpp's
   * converter keeps (gpt-oss's MXFP4, NVFP4) is read with them as stored, checked,
   * for the GGUF layout to repack. @default false
   */
  packedForGguf?: boolean;
  /** Stops an `hf://` download (its partial blobs stay for the next run). */
  signal?: AbortSignal;
  /**
   * For `hf://` with `noCache`: save the sha256 checks' progress in this file
   * so a resumed import continues them (`restore`) instead of downloading
   * every file again to hash it.
   */
  hubDigestCheckpoint?: { path: string; restore: boolean } | undefined;
}

/**
 * Open a model for reading. Formats are detected by their bytes, not their
 * names. A folder is read as a Hugging Face model: its
 * `model.safetensors.index.json` if present (never a glob of shards), else
 * `model.safetensors`, else its one `.gguf` or `.apr` file.
 *
 * @example Usage
 * ```ts ignore
 * import { openModel } from "./open_model.ts";
 * const model = await openModel("model.safetensors");
 * const values = await model.tensor("model.norm.weight").toFloat32();
 * await model.close();
 * ```
 *
 * @param location A path, an `http(s)://` URL, a `Blob`, a {@linkcode BlobFolder} (a browser's picked folder), or `hf://org/name[@revision][/path]`.
 * @param options Hub and naming options.
 * @returns The opened model; close it when done.
 * @throws {ModelFormatError} When the input is malformed or holds no model.
 */
export async function openModel(
  location: ModelLocation,
  options: OpenModelOptions = {},
): Promise<Model> {
  if (location instanceof BlobFolder) {
    return new Model(await openModelFolder(location, options), location.name);
  }
  if (location instanceof Blob) {
    const name = location instanceof File ? location.name : "blob";
    return new Model(await openModelFile(new BlobSource(location, name), options), name);
  }
  const text = location instanceof URL ? location.href : location;
  if (isHubRef(text)) return await openHubModel(text, options);
  if (/^https?:\/\//i.test(text)) {
    const { timeouts } = options.hubSettings ?? hubSettingsFromEnv();
    const { openHttpSource } = await import("../io/http_source.ts");
    return new Model(
      await openModelFile(await openHttpSource(text, { ...timeouts, ...waits(options) }), options),
      text,
    );
  }
  return identified(new Model(await openLocalModel(text, options), text), text);
}

/**
 * Remember the identity of a local source for resume (source_identity.ts):
 * an index or manifest stands for its folder, whose shards it names; one
 * shard of a set for the set, which is what is read.
 */
function identified(model: Model, path: string): Model {
  const unix = path.replaceAll("\\", "/");
  const subject = unix.toLowerCase().endsWith(".json") ? posix.dirname(unix) : path;
  const shards = (model.reader as { shards?: unknown }).shards;
  const members = subject === path && Array.isArray(shards) && shards.length > 1
    ? shards as string[]
    : undefined;
  rememberSourceIdentity(model, () => localSourceIdentity(subject, members));
  return model;
}

/**
 * A missing path shaped like a Hub repository id (`org/name`, as `hf` and
 * transformers take it): say how aprkit spells a Hub model.
 */
function hubHint(path: string): string {
  return /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/.test(path) && !path.includes("..")
    ? `; for the Hugging Face model, write hf://${path}`
    : "";
}

async function openLocalModel(path: string, options: OpenModelOptions): Promise<ModelReader> {
  const stat = await fs.stat(path).catch((error) => {
    if (error instanceof fs.errors.NotFound) {
      throw notFoundError(`Cannot open "${path}": no such file or folder${hubHint(path)}`, {
        cause: error,
      });
    }
    throw error;
  });
  if (stat.isDirectory) return await openModelFolder(new LocalModelFiles(path), options);
  if (path.toLowerCase().endsWith(APR_MANIFEST_SUFFIX)) {
    // A sharded APR set's manifest (APR_V2.md §8): the set as one model.
    const unix = path.replaceAll("\\", "/");
    const { openShardedApr } = await import("../formats/apr/sharded_reader.ts");
    return await openShardedApr(new LocalModelFiles(posix.dirname(unix)), posix.basename(unix));
  }
  if (path.endsWith(".json")) {
    // A path to an index: its folder is the repository, its name the index.
    const folder = posix.dirname(path.replaceAll("\\", "/"));
    const files = new LocalModelFiles(folder);
    const { openSafetensorsModel } = await safetensorsModels();
    return await openSafetensorsModel(files, {
      indexPath: posix.basename(path.replaceAll("\\", "/")),
      ...safetensorsOptions(options),
    });
  }
  const unix = path.replaceAll("\\", "/");
  return await openWholeSet(
    await openModelFile(await openFileSource(path), options),
    new LocalModelFiles(posix.dirname(unix)),
    posix.basename(unix),
    options,
  );
}

/**
 * One shard of a sharded APR set or a split GGUF set stands for its whole
 * set: close it and open the set it belongs to. Any other model is returned
 * as it is.
 */
async function openWholeSet(
  reader: ModelReader,
  files: ModelFiles,
  path: string,
  options: OpenModelOptions,
): Promise<ModelReader> {
  if (reader.header.format === "apr") {
    const { isAprShard, openShardedApr } = await import("../formats/apr/sharded_reader.ts");
    if (isAprShard(reader)) {
      await reader.close();
      return await openShardedApr(files, path);
    }
  }
  if (isGgufSplitShard(reader)) {
    await reader.close();
    return await openGgufSplit(files, path, { keepNames: options.keepNames === true });
  }
  return reader;
}

/**
 * Open the model held by a repository folder.
 *
 * @param files The folder's files.
 * @param options Naming options and warnings.
 * @returns The model reader.
 */
export async function openModelFolder(
  files: ModelFiles,
  options: OpenModelOptions = {},
): Promise<ModelReader> {
  const listing = await files.list();
  const { openSafetensorsModel, SAFETENSORS_INDEX_NAME, SAFETENSORS_SINGLE_NAME } =
    await safetensorsModels();
  if (listing.includes(SAFETENSORS_INDEX_NAME) || listing.includes(SAFETENSORS_SINGLE_NAME)) {
    return await openSafetensorsModel(files, safetensorsOptions(options));
  }
  const manifests = listing.filter((p) =>
    !p.includes("/") && p.toLowerCase().endsWith(APR_MANIFEST_SUFFIX)
  );
  if (manifests.length === 1) {
    const { openShardedApr } = await import("../formats/apr/sharded_reader.ts");
    return await openShardedApr(files, manifests[0]!);
  }
  const top = listing.filter((p) => !p.includes("/"));
  // One model per .apr file, split GGUF set or other GGUF (not a projector or imatrix).
  const models = [
    ...top.filter((p) => /\.apr$/i.test(p)).map((p) => ({ files: [p], tag: "" })),
    ...ggufGroups(top),
  ];
  if (models.length === 1) {
    const path = models[0]!.files[0]!;
    return await openWholeSet(
      await openModelFile(await files.open(path), options),
      files,
      path,
      options,
    );
  }
  if (models.length > 1) {
    // Several quantizations of one model, usually: say how to name one.
    const shown = models.slice(0, 3).map((m) => m.files[0]).join(", ");
    // A Hub repository (`hf://org/name@commit[/folder]`) also takes a quantization tag.
    const tags = files.name.startsWith("hf://")
      ? `, or a quantization with ${files.name.split("@")[0]}:TAG (${
        availableGgufTags(ggufGroups(top))
      })`
      : "";
    throw new UsageError(
      `Cannot choose a model in "${files.name}": ${models.length} model files (${shown}${
        models.length > 3 ? ", …" : ""
      }); name one, e.g. "${files.locate(models[0]!.files[0]!)}"${tags}`,
    );
  }
  throw new ModelFormatError(
    "model",
    files.name,
    `no model found: expected ${SAFETENSORS_INDEX_NAME}, ${SAFETENSORS_SINGLE_NAME}, or exactly one .gguf or .apr file or split GGUF set (found none)`,
  );
}

/**
 * Open one model file of any format, detected from its first bytes.
 *
 * @param source The file's bytes; owned by the returned reader.
 * @param options Naming options.
 * @returns The model reader.
 * @throws {ModelFormatError} When the bytes match no format aprkit reads.
 */
export async function openModelFile(
  source: ByteSource,
  options: OpenModelOptions = {},
): Promise<ModelReader> {
  try {
    const head = await source.read(0, Math.min(DETECT_BYTES, source.size));
    let format = detectFormat(head);
    // A file named .safetensors whose head looks wrong still goes to the
    // SafeTensors parser, which names the exact rule it breaks (FORMATS.md S1–S4).
    if (format === undefined && /\.safetensors$/i.test(source.name)) format = "safetensors";
    // Likewise a .gguf or .apr file with the wrong magic gets its own parser's
    // message ("not a GGUF file: magic is …", FORMATS.md G1).
    if (format === undefined && /\.gguf$/i.test(source.name)) format = "gguf";
    if (format === undefined && /\.apr$/i.test(source.name)) format = "apr";
    switch (format) {
      // The readers of the other formats are loaded by the first file of
      // theirs: a GGUF conversion loads no APR or QNAT code (start-up).
      case "apr":
        return await (await import("../formats/apr/reader.ts")).openApr(source);
      case "gguf":
        return await openGguf(source, { keepNames: options.keepNames === true });
      case "safetensors": {
        const { openSafetensors } = await import("../formats/safetensors/reader.ts");
        const { refuseLoneQuantized } = await import("../quant/checkpoint/mod.ts");
        const reader = await openSafetensors(source);
        // Closed with its source by the catch below.
        refuseLoneQuantized(reader.header.tensors, source.name);
        return reader;
      }
      case "qnat":
        return await (await import("../formats/qnat/reader.ts")).openQnat(source);
      case undefined: {
        const hex = hexBytes(head.subarray(0, 8));
        throw new ModelFormatError(
          "model",
          source.name,
          `not a model file: not an APR, GGUF, SafeTensors or QNAT file (first bytes: ${
            hex || "none"
          })`,
          { offset: 0 },
        );
      }
    }
  } catch (error) {
    await source.close();
    throw error;
  }
}

async function openHubModel(text: string, options: OpenModelOptions): Promise<Model> {
  const ref = parseHubRef(text);
  const settings = options.hubSettings ?? hubSettingsFromEnv();
  const revision = options.revision ?? ref.revision;
  // Offline, the cache is the only place to read from, even for --no-cache
  // (which then writes nothing either) and for `inspect`.
  if (!options.noCache || settings.offline) {
    return await openCachedHubModel(text, settings, options);
  }
  try {
    return await openStreamedHubModel(text, settings, options);
  } catch (error) {
    // No connection, and the cache holds the model: read it there, and say so.
    if (!(error instanceof HubUnreachableError)) throw error;
    const { unreachableWarning } = await import("../sources/hub_reach.ts");
    let model: Model;
    try {
      model = await openCachedHubModel(text, { ...settings, offline: true }, options);
    } catch {
      throw error;
    }
    const name = formatHubRef({ ...ref, revision: revision ?? DEFAULT_REVISION, path: undefined });
    options.onWarning?.(unreachableWarning(settings.endpoint, error, error.cachedCommit, name));
    return model;
  }
}

/** An `hf://` model read over HTTP, nothing written (`noCache`). */
async function openStreamedHubModel(
  text: string,
  settings: HubSettings,
  options: OpenModelOptions,
): Promise<Model> {
  let ref = parseHubRef(text);
  const revision = options.revision ?? ref.revision;
  const { openHubModelFiles } = await import("../sources/hub_files.ts");
  if (ref.quant !== undefined) {
    const { selectQuant } = await import("../sources/hub_select.ts");
    // `:QUANT` names the file (or first shard) its repository listing shows.
    const root = await openHubModelFiles({ ...ref, path: undefined }, { settings, revision });
    ref = { ...ref, path: selectQuant(await root.list(), ref.quant)[0] };
  }
  const isFile = ref.path !== undefined && /\.(gguf|apr|safetensors|json)$/i.test(ref.path);
  const folderRef = isFile ? { ...ref, path: parentOf(ref.path!) } : ref;
  const hubFiles = await openHubModelFiles(folderRef, {
    settings,
    revision,
    checkpoint: options.hubDigestCheckpoint,
    ...waits(options),
  });
  const verify = (): Promise<void> => hubFiles.verify();
  const save = (): Promise<void> => hubFiles.saveProgress();
  // The commit pins the content (files.name carries it).
  const pinned = (model: Model): Model => {
    rememberSourceIdentity(model, () => Promise.resolve(pinnedSourceIdentity(hubFiles.name)));
    return model;
  };
  // Opening reads the index and every shard's header over HTTP: Ctrl-C (the
  // signal) stops those reads as it stops tensor reads, not after a stalled
  // server's idle timeouts and retries.
  const files = options.signal ? abortableFiles(hubFiles, options.signal) : hubFiles;
  if (isFile && !ref.path!.endsWith(".json")) {
    const name = posix.basename(ref.path!);
    return pinned(
      new Model(
        await openWholeSet(
          await openModelFile(await files.open(name), options),
          files,
          name,
          options,
        ),
        text,
        verify,
        save,
      ),
    );
  }
  if (isFile && ref.path!.toLowerCase().endsWith(APR_MANIFEST_SUFFIX)) {
    const { openShardedApr } = await import("../formats/apr/sharded_reader.ts");
    return pinned(
      new Model(await openShardedApr(files, posix.basename(ref.path!)), text, verify, save),
    );
  }
  const { openSafetensorsModel } = await safetensorsModels();
  const reader = isFile
    ? await openSafetensorsModel(files, {
      indexPath: posix.basename(ref.path!),
      ...safetensorsOptions(options),
    })
    : await openModelFolder(files, options);
  return pinned(new Model(reader, text, verify, save));
}

/** An `hf://` model pulled into the cache (or found there, offline), then read from its snapshot. */
async function openCachedHubModel(
  text: string,
  settings: HubSettings,
  options: OpenModelOptions,
): Promise<Model> {
  const ref = parseHubRef(text);
  const revision = options.revision ?? ref.revision;
  const { pullModel } = await import("../sources/hub_pull.ts");
  const pulled = await pullModel(ref, {
    settings,
    revision,
    ...waits(options),
    ...(options.jobs !== undefined ? { jobs: options.jobs } : {}),
    ...(options.onDownloadProgress ? { onProgress: options.onDownloadProgress } : {}),
    ...warnings(options),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  let reader: ModelReader;
  try {
    reader = await openLocalModel(pulled.modelPath, options);
  } catch (error) {
    const { explainCachedFile } = await import("../sources/hub_cache.ts");
    throw await explainCachedFile(error, pulled.snapshotPath);
  }
  return identified(new Model(reader, text), pulled.modelPath);
}

function parentOf(path: string): string | undefined {
  const parent = posix.dirname(path);
  return parent === "." ? undefined : parent;
}

/** Rate-limit waits are said through the warnings (how long, and why). */
function waits(options: OpenModelOptions): { onWait?: (message: string) => void } {
  return options.onWarning ? { onWait: options.onWarning } : {};
}

function warnings(options: OpenModelOptions): { onWarning?: (message: string) => void } {
  return options.onWarning ? { onWarning: options.onWarning } : {};
}

/** What a SafeTensors checkpoint's reader takes of the options. */
/**
 * The SafeTensors model reader (a Hugging Face folder: its config, tokenizer
 * and model card readers), loaded by the first such model opened: a GGUF or
 * APR source does not load it (start-up: docs/BENCHMARKS.md, "Fixed costs per run").
 */
function safetensorsModels(): Promise<typeof import("../formats/safetensors/sharded.ts")> {
  return import("../formats/safetensors/sharded.ts");
}

function safetensorsOptions(
  options: OpenModelOptions,
): { onWarning?: (message: string) => void; packedForGguf?: boolean } {
  return {
    ...warnings(options),
    ...(options.packedForGguf === true ? { packedForGguf: true } : {}),
  };
}
