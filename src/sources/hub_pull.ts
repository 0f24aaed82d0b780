/**
 * `apr pull`: fill the standard Hugging Face cache with the files a model
 * needs (DESIGN.md §2.4, FORMATS.md §4) — several files and byte ranges at
 * once, resumable, sha256-verified, reusing whatever is already there, and
 * working offline from the cache.
 *
 * @module
 */

import { join } from "../runtime/path.ts";
import { HubOfflineError, HubRequestError } from "../errors.ts";
import type { RetryOptions } from "../io/http_source.ts";
import type { ProgressEvent } from "../tensor.ts";
import { HubCache } from "./hub_cache.ts";
import { HubClient, type HubFileInfo } from "./hub_client.ts";
import { DEFAULT_PART_SIZE, downloadBlob, JobLimiter } from "./hub_download.ts";
import { withBlobLock } from "./hub_lock.ts";
import { reachHub, unreachableWarning } from "./hub_reach.ts";
import { DEFAULT_REVISION, formatHubRef, type HubRef, parseHubRef } from "./hub_ref.ts";
import { assertSafeRevision } from "./hub_names.ts";
import { selectModelFiles, selectQuant } from "./hub_select.ts";
import { MAX_JSON_FILE_BYTES } from "../io/model_files.ts";
import { hubClientOptions, type HubSettings, hubSettingsFromEnv } from "./hub_settings.ts";
import { fs } from "../runtime/fs.ts";

/** Ranges downloading at once by default: enough to fill a fast link, few enough for a laptop. */
export const DEFAULT_JOBS = 8;
/** Free space kept beyond the download, for the rest of the system. */
const FREE_SPACE_MARGIN = 64 * 1024 * 1024;

/** One file's progress, for a per-file progress row. */
export interface PullFileProgress {
  /** Path inside the repository. */
  readonly path: string;
  /** Bytes present (resumed or downloaded). */
  readonly bytesDone: number;
  /** The file's size. */
  readonly bytesTotal: number;
}

/** A progress event of {@linkcode pullModel}: overall bytes plus the files downloading now. */
export interface PullProgressEvent extends ProgressEvent {
  /** The files being downloaded at this moment. */
  readonly active: readonly PullFileProgress[];
}

/** Options of {@linkcode pullModel}. */
export interface PullOptions extends RetryOptions {
  /** Hub settings. Default: {@linkcode hubSettingsFromEnv}. */
  settings?: HubSettings;
  /** Revision, overriding the reference's `@revision`. Default: `main`. */
  revision?: string | undefined;
  /** Globs choosing the files instead of the model rules. */
  include?: readonly string[] | undefined;
  /**
   * Ranges downloaded at once, across files.
   *
   * @default {8}
   */
  jobs?: number;
  /**
   * Files larger than this download as parallel ranges of this size.
   *
   * @default {67108864}
   */
  partSize?: number;
  /** Progress: overall bytes and per-file rows. */
  onProgress?: (event: PullProgressEvent) => void;
  /**
   * Told what the user should know but that does not stop the pull: the Hub
   * was unreachable and the cache was used, another run holds a file's lock.
   */
  onWarning?: (message: string) => void;
}

/** One file of a pull. */
export interface PulledFile {
  /** Path inside the repository. */
  path: string;
  /** Size in bytes. */
  size: number;
  /** Whether it was already in the cache (no data fetched). */
  reused: boolean;
}

/** What {@linkcode pullModel} did. */
export interface PullResult {
  /** `snapshots/{commit}` in the cache. */
  snapshotPath: string;
  /** The file or folder the reference names inside the snapshot (the snapshot itself for a root reference). */
  modelPath: string;
  /** The commit pulled. */
  commit: string;
  /** The files, sorted by path. */
  files: PulledFile[];
  /** Bytes fetched in this run. */
  bytesDownloaded: number;
  /** Bytes found in the cache (complete files and resumed partials). */
  bytesReused: number;
}

/**
 * Download a model's files into the Hugging Face cache.
 *
 * @example Usage
 * ```ts ignore
 * import { pullModel } from "./hub_pull.ts";
 * const result = await pullModel("hf://org/name", { jobs: 4 });
 * console.log(result.snapshotPath);
 * ```
 *
 * @param ref The model, as `hf://org/name[@revision][/path]` or parsed.
 * @param options Settings, revision, jobs, progress.
 * @returns Where the files are and what was fetched.
 * @throws {HubRequestError} On network, authentication or verification failure, or offline with an incomplete cache.
 * @throws {DiskFullError} When the disk fills (the partial download is kept).
 */
export async function pullModel(
  ref: HubRef | string,
  options: PullOptions = {},
): Promise<PullResult> {
  const parsed = typeof ref === "string" ? parseHubRef(ref) : ref;
  const jobs = options.jobs ?? DEFAULT_JOBS;
  const limiter = new JobLimiter(jobs); // validates jobs before any I/O
  const settings = options.settings ?? hubSettingsFromEnv();
  // --revision follows the same rules as @rev: it becomes refs/{revision}.
  const revision = assertSafeRevision(options.revision ?? parsed.revision ?? DEFAULT_REVISION);
  const cache = new HubCache(settings.cacheDir, parsed.repoId);
  if (settings.offline) return await pullOffline(parsed, revision, cache, options);

  const {
    settings: _s,
    revision: _r,
    include: _i,
    jobs: _j,
    partSize: _p,
    onProgress: _o,
    onWarning: _w,
    ...retry
  } = options;
  const clientOptions = hubClientOptions(settings, retry);
  const client = new HubClient(clientOptions);
  // With the model in the cache, an unreachable Hub is found out with one
  // short attempt and the cache is used, with a warning (hub_reach.ts).
  const reach = await reachHub(client, clientOptions, cache, parsed.repoId, revision);
  if (reach.unreachable !== undefined) {
    let pulled: PullResult;
    try {
      pulled = await pullOffline(parsed, revision, cache, options);
    } catch {
      throw reach.unreachable;
    }
    options.onWarning?.(
      unreachableWarning(
        settings.endpoint,
        reach.unreachable,
        pulled.commit,
        formatHubRef({ ...parsed, revision, path: undefined }),
      ),
    );
    return pulled;
  }
  const info = reach.info;
  const commit = info.commit;
  await cache.writeRef(revision, commit);
  const snapshot = cache.snapshotDir(commit);

  let bytesDownloaded = 0;
  let bytesReused = 0;
  const result = new Map<string, PulledFile>();
  const downloading = new Map<string, Promise<void>>();
  const download = async (path: string, file: HubFileInfo): Promise<void> => {
    const source = await client.openFile(parsed.repoId, commit, path, file);
    const row = { path, bytesDone: 0, bytesTotal: file.size };
    active.add(row);
    try {
      const { downloaded } = await downloadBlob({
        cache,
        etag: file.etag,
        sha256: file.sha256,
        source,
        limiter,
        partSize: options.partSize ?? DEFAULT_PART_SIZE,
        signal: abort.signal,
        onResume: (bytes) => {
          row.bytesDone += bytes;
          progress.done += bytes;
          bytesReused += bytes;
          report(path);
        },
        onBytes: (bytes) => {
          row.bytesDone += bytes;
          progress.done += bytes;
          report(path);
        },
      });
      bytesDownloaded += downloaded;
    } finally {
      active.delete(row);
    }
    result.set(path, { path, size: file.size, reused: false });
  };
  const fetchOne = async (path: string, meta?: HubFileInfo): Promise<void> => {
    const file = meta ?? await client.fileInfo(parsed.repoId, commit, path);
    progress.total += file.size;
    progress.itemCount++;
    // Two paths with the same content share one blob: download it once. The
    // check and the claim happen with no await between them.
    for (let running = downloading.get(file.etag); running !== undefined;) {
      await running;
      running = downloading.get(file.etag);
    }
    let finished = (): void => {};
    downloading.set(file.etag, new Promise<void>((resolve) => (finished = resolve)));
    const reuse = (): void => {
      // Same content already cached (another commit or path, or another run): link it, fetch nothing.
      bytesReused += file.size;
      progress.done += file.size;
      result.set(path, { path, size: file.size, reused: true });
    };
    try {
      if (await cache.hasBlob(file.etag, file.size)) {
        reuse();
      } else {
        // Another process sharing the cache may be downloading it: wait for
        // it, then use its blob (huggingface_hub's lock, FORMATS.md §4).
        await withBlobLock(cache, file.etag, async () => {
          if (await cache.hasBlob(file.etag, file.size)) return reuse();
          await download(path, file);
        }, {
          signal: abort.signal,
          onWait: (lock) =>
            options.onWarning?.(
              `waiting for another run downloading "${path}" into the same cache (lock "${lock}")`,
            ),
        });
      }
    } finally {
      downloading.delete(file.etag);
      finished();
    }
    await cache.linkSnapshot(commit, path, file.etag);
    progress.items++;
    report(path);
  };

  const active = new Set<{ path: string; bytesDone: number; bytesTotal: number }>();
  const progress = { done: 0, total: 0, items: 0, itemCount: 0 };
  const report = (current: string): void => {
    options.onProgress?.({
      phase: "download",
      bytesDone: progress.done,
      bytesTotal: progress.total,
      itemsDone: progress.items,
      itemsTotal: progress.itemCount,
      current,
      active: [...active].map((r) => ({ ...r })),
    });
  };
  const abort = new AbortController();
  if (options.signal) {
    options.signal.addEventListener("abort", () => abort.abort(options.signal?.reason), {
      once: true,
    });
  }

  // The index is needed to choose the shards: fetch it first (or reuse it).
  // The index is the repository's to make as large as it likes: its size is
  // checked before it is downloaded, and again before it is read whole.
  const readText = async (path: string): Promise<string> => {
    if (!(await cache.hasSnapshotFile(commit, path))) {
      const meta = await client.fileInfo(parsed.repoId, commit, path);
      assertJsonSize(meta.size, `hf://${parsed.repoId}@${commit}/${path}`);
      await fetchOne(path, meta);
    }
    return await readSnapshotText(join(snapshot, path));
  };
  const selected = await selectModelFiles(info.files, readText, {
    path: parsed.path,
    include: options.include,
    quant: parsed.quant,
    repo: formatRepo(parsed.repoId, options.revision ?? parsed.revision),
  });

  // Files already in the snapshot are reused without any request.
  const todo: string[] = [];
  for (const path of selected) {
    if (result.has(path)) continue;
    if (await cache.hasSnapshotFile(commit, path)) {
      const size = (await fs.stat(join(snapshot, path))).size;
      bytesReused += size;
      result.set(path, { path, size, reused: true });
    } else {
      todo.push(path);
    }
  }
  if (todo.length > 0) {
    const metas = await Promise.all(
      todo.map((path) => limiter.run(() => client.fileInfo(parsed.repoId, commit, path))),
    );
    await checkFreeSpace(cache, metas);
    const settled = await Promise.allSettled(
      metas.map((meta) =>
        fetchOne(meta.path, meta).catch((error) => {
          // One failure stops the others; their partials stay for resume.
          abort.abort(error);
          throw error;
        })
      ),
    );
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
    if (failed) throw failed.reason;
  }

  return {
    snapshotPath: snapshot,
    modelPath: modelPathIn(snapshot, parsed, info.files),
    commit,
    files: [...result.values()].sort((a, b) => (a.path < b.path ? -1 : 1)),
    bytesDownloaded,
    bytesReused,
  };
}

/** The model inside a snapshot: the reference's path, the first file of its quantization, or the snapshot. */
function modelPathIn(snapshot: string, ref: HubRef, files: readonly string[]): string {
  if (ref.quant !== undefined) return join(snapshot, selectQuant(files, ref.quant)[0]!);
  return ref.path === undefined ? snapshot : join(snapshot, ref.path);
}

/** HF_HUB_OFFLINE: resolve from `refs/` and the snapshot, or fail naming what is missing. */
async function pullOffline(
  ref: HubRef,
  revision: string,
  cache: HubCache,
  options: PullOptions,
): Promise<PullResult> {
  const name = formatHubRef({ ...ref, revision, path: undefined });
  const fail = (what: string): never => {
    throw new HubOfflineError(
      `Cannot use ${name} offline (HF_HUB_OFFLINE is set): ${what} in the cache "${cache.cacheDir}"; run "apr pull ${name}" with the network first`,
      name,
    );
  };
  const commit = await cache.readRef(revision) ?? fail(`revision "${revision}" is not recorded`);
  const snapshot = cache.snapshotDir(commit);
  const files: string[] = [];
  const walk = async (relative: string): Promise<void> => {
    for await (const entry of fs.readDir(join(snapshot, relative))) {
      const path = relative === "" ? entry.name : `${relative}/${entry.name}`;
      const info = await fs.stat(join(snapshot, path)).catch(() => undefined);
      if (info?.isDirectory) await walk(path);
      else if (info?.isFile) files.push(path);
    }
  };
  try {
    await walk("");
  } catch (error) {
    if (!(error instanceof fs.errors.NotFound)) throw error;
    fail(`snapshot ${commit} is not present`);
  }
  files.sort();
  const selected = await selectModelFiles(
    files,
    (path) => readSnapshotText(join(snapshot, path)),
    {
      path: ref.path,
      include: options.include,
      quant: ref.quant,
      repo: formatRepo(ref.repoId, revision),
    },
  );
  const missing = [];
  const result: PulledFile[] = [];
  let bytesReused = 0;
  for (const path of selected) {
    const info = await fs.stat(join(snapshot, path)).catch(() => undefined);
    if (!info?.isFile) {
      missing.push(path);
      continue;
    }
    bytesReused += info.size;
    result.push({ path, size: info.size, reused: true });
  }
  if (missing.length > 0) {
    fail(
      `${missing.map((m) => `"${m}"`).join(", ")} ${missing.length === 1 ? "is" : "are"} missing`,
    );
  }
  return {
    snapshotPath: snapshot,
    modelPath: modelPathIn(snapshot, ref, files),
    commit,
    files: result,
    bytesDownloaded: 0,
    bytesReused,
  };
}

/** `org/name`, with `@revision` when one was asked for (not the default). */
function formatRepo(repoId: string, revision: string | undefined): string {
  return revision === undefined || revision === DEFAULT_REVISION ? repoId : `${repoId}@${revision}`;
}

/** Refuse to start a download the disk cannot hold (partials already there count as done). */
async function checkFreeSpace(cache: HubCache, metas: HubFileInfo[]): Promise<void> {
  let needed = 0;
  for (const meta of metas) {
    if (await cache.hasBlob(meta.etag, meta.size)) continue;
    const partial = await fs.stat(cache.incompletePath(meta.etag)).then((s) => s.size, () => 0);
    needed += Math.max(0, meta.size - partial);
  }
  if (needed === 0) return;
  let available: number;
  try {
    // Deno has no statfs of its own; node:fs has it. Where it is missing
    // the check is skipped and a full disk is caught by D8 handling instead.
    const { statfs } = await import("node:fs/promises");
    await fs.mkdir(cache.cacheDir, { recursive: true });
    const stats = await statfs(cache.cacheDir);
    available = Number(stats.bavail) * Number(stats.bsize);
  } catch {
    return;
  }
  if (available < needed + FREE_SPACE_MARGIN) {
    throw new HubRequestError(
      `Cannot download hf://${cache.repoId}: it needs ${needed} more bytes but "${cache.cacheDir}" has only ${available} bytes free`,
      0,
      `hf://${cache.repoId}`,
    );
  }
}

/** Refuse a JSON file larger than {@linkcode MAX_JSON_FILE_BYTES} before reading it whole. */
function assertJsonSize(size: number, where: string): void {
  if (size > MAX_JSON_FILE_BYTES) {
    throw new RangeError(
      `Cannot read "${where}": ${size} bytes is over the ${MAX_JSON_FILE_BYTES}-byte limit`,
    );
  }
}

/** A JSON file of a snapshot, read whole after its size is checked. */
async function readSnapshotText(path: string): Promise<string> {
  assertJsonSize((await fs.stat(path)).size, path);
  return await fs.readTextFile(path);
}
