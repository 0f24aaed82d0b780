/**
 * Download one file into the cache's `blobs/` (FORMATS.md §4): resumable from
 * `blobs/{etag}.incomplete`, in parallel byte ranges for big files, verified
 * against the LFS sha256, and never leaving a wrong blob behind.
 *
 * **Resume.** Without a sidecar, the `.incomplete` file's length is the valid
 * prefix (the rule the Hugging Face tools use, so their partial downloads
 * resume here and ours there). When a file is fetched as several ranges at
 * once, the ranges land at their offsets with positioned writes and a small
 * sidecar `blobs/{etag}.incomplete.parts.json` records, per range,
 * `{start, end, next}` (bytes `[start, next)` are written). It is replaced
 * atomically (write + rename) after each chunk is written, so after a kill it
 * may understate progress (those bytes are fetched again and rewritten with the
 * same content) but never overstate it. It is deleted when the blob is complete.
 *
 * **Checking.** An LFS file is checked against its sha256 (D5); any other
 * file against its git blob id, the SHA-1 of `blob {size}\0{content}` that the
 * Hub sends as its ETag and the tree lists as its `oid`. Nothing that fails
 * its check reaches `blobs/`: one bad answer (a body spliced from a gzip
 * answer and a plain one) must not poison the cache for every later run.
 *
 * **Hashing.** A file fetched as one sequential range is hashed while it
 * downloads (a resumed prefix is re-hashed from disk first). A file fetched as
 * parallel ranges is hashed by one sequential pass over the finished file:
 * an extra read of the file (from the page cache when it fits in memory) is the
 * price of not stalling fast ranges behind slow ones.
 *
 * @module
 */

import { createSha1, createSha256, type Sha256 } from "../runtime/sha256.ts";
import { EnvironmentError, HubAnswerError, HubRequestError } from "../errors.ts";
import type { HttpSource } from "../io/http_source.ts";
import type { HubCache } from "./hub_cache.ts";
import { hashFile } from "../io/hash_file.ts";
import { fs, type RuntimeFile, SEEK_START } from "../runtime/fs.ts";
import { SerialSaves } from "./_serial_saves.ts";

/** Size of the writes to disk and of the chunks hashed. */
const WRITE_CHUNK_SIZE = 64 * 1024;
/**
 * Largest step of a file's download progress: the write chunk. Small, so a
 * slow link (a few hundred KB/s) still moves the display several times a
 * second; on a fast one, 64 KiB writes cost nothing next to the network.
 */
export const PROGRESS_STEP_BYTES: number = WRITE_CHUNK_SIZE;
/** Default size of the byte ranges a big file is split into for parallel download. */
export const DEFAULT_PART_SIZE = 64 * 1024 * 1024;
/** Version of the sidecar format; another version is ignored (and the download restarted). */
const PARTS_VERSION = 1;

/** The disk filled up while downloading; the partial download is kept for resume. */
export class DiskFullError extends EnvironmentError {
  /**
   * Describe a full disk.
   *
   * @param path The file being written.
   * @param options The cause.
   */
  constructor(path: string, options?: ErrorOptions) {
    super(
      `Cannot write "${path}": the disk is full; the partial download is kept, free some space and run again to resume`,
      path,
      options,
    );
    this.name = "DiskFullError";
  }
}

/** Bounds how many ranges download at once across all files. */
export class JobLimiter {
  /** The most jobs at once. */
  readonly jobs: number;
  #active = 0;
  #waiting: (() => void)[] = [];

  /**
   * Make a limiter.
   *
   * @param jobs The most jobs at once (at least 1).
   */
  constructor(jobs: number) {
    if (!Number.isSafeInteger(jobs) || jobs < 1) {
      throw new RangeError(`Cannot limit jobs: ${jobs} is not a positive integer`);
    }
    this.jobs = jobs;
  }

  /**
   * Run a job when a slot is free.
   *
   * @param job The work.
   * @returns Its result.
   */
  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.#active >= this.jobs) await new Promise<void>((r) => this.#waiting.push(r));
    this.#active++;
    try {
      return await job();
    } finally {
      this.#active--;
      this.#waiting.shift()?.();
    }
  }
}

/** Options of {@linkcode downloadBlob}. */
export interface DownloadBlobOptions {
  /** The cache of the repository. */
  cache: HubCache;
  /** The blob's etag (its file name in `blobs/`). */
  etag: string;
  /**
   * The content's sha256 (LFS files); checked before the blob is kept. Without
   * it, an etag of 40 hex digits is the git blob id and is checked instead.
   */
  sha256: string | undefined;
  /** The remote file. */
  source: Pick<HttpSource, "size" | "name" | "stream">;
  /** Shared bound on concurrent ranges. */
  limiter: JobLimiter;
  /**
   * Split files larger than this into ranges fetched in parallel (when the limiter allows more than one job).
   *
   * @default {67108864}
   */
  partSize?: number;
  /** Called with the bytes found already downloaded, before fetching. */
  onResume?: (bytes: number) => void;
  /** Called with each newly written byte count. */
  onBytes?: (bytes: number) => void;
  /** Stops the download (the partial is kept). */
  signal?: AbortSignal;
}

/** What {@linkcode downloadBlob} did. */
export interface DownloadBlobResult {
  /** Bytes fetched in this run. */
  downloaded: number;
  /** Bytes of a partial download found and kept. */
  resumed: number;
}

interface Part {
  start: number;
  end: number;
  next: number;
}

interface PartsFile {
  version: number;
  size: number;
  parts: Part[];
}

/**
 * Fetch a file into `blobs/{etag}` through `blobs/{etag}.incomplete`.
 *
 * @param options What to fetch, where, and how.
 * @returns Bytes fetched and resumed.
 * @throws {HubRequestError} On a transport failure or a sha256 mismatch (the partial is then deleted).
 * @throws {DiskFullError} When the disk fills (the partial is kept).
 */
export async function downloadBlob(options: DownloadBlobOptions): Promise<DownloadBlobResult> {
  const { cache, etag, source } = options;
  const size = source.size;
  const partSize = options.partSize ?? DEFAULT_PART_SIZE;
  if (!Number.isSafeInteger(partSize) || partSize < 1) {
    throw new RangeError(`Cannot download: part size ${partSize} is not a positive integer`);
  }
  const blobPath = cache.blobPath(etag);
  const incomplete = cache.incompletePath(etag);
  const partsPath = `${incomplete}.parts.json`;
  await fs.mkdir(`${cache.repoDir}/blobs`, { recursive: true });

  const check = contentCheck(options.sha256, etag, size);
  let parts = await readParts(partsPath, size);
  let sequentialHash: Sha256 | undefined;
  if (parts === undefined) {
    let prefix = await fileLength(incomplete);
    if (prefix > size) {
      // Longer than the file can be: not a prefix of it. Start over.
      await fs.truncate(incomplete, 0);
      prefix = 0;
    }
    const remaining = size - prefix;
    if (options.limiter.jobs > 1 && remaining > partSize) {
      parts = prefix > 0 ? [{ start: 0, end: prefix, next: prefix }] : [];
      for (let start = prefix; start < size; start += partSize) {
        parts.push({ start, end: Math.min(size, start + partSize), next: start });
      }
      // Written before any range byte lands beyond the prefix (see the module doc).
      await writeParts(partsPath, { version: PARTS_VERSION, size, parts });
    } else {
      parts = [{ start: 0, end: size, next: prefix }];
      if (check !== undefined) {
        // D7: re-hash the prefix kept from an earlier run, then hash as bytes arrive.
        sequentialHash = check.start();
        await hashFile(incomplete, prefix, sequentialHash);
      }
    }
  }
  const resumed = parts.reduce((sum, p) => sum + (p.next - p.start), 0);
  options.onResume?.(resumed);
  const saver = parts.length > 1 ? new PartsSaver(partsPath, size, parts) : undefined;

  let downloaded = 0;
  const fetchPart = async (part: Part): Promise<void> => {
    if (part.next >= part.end) return;
    await options.limiter.run(async () => {
      options.signal?.throwIfAborted();
      const file = await fs.open(incomplete, { write: true, create: true });
      const reader = source.stream(part.next, part.end, WRITE_CHUNK_SIZE).getReader();
      // Ctrl-C must not wait for a silent server's next chunk: cancelling
      // drops the connection in flight and the pending read ends.
      const stop = (): void => void reader.cancel(options.signal?.reason).catch(() => {});
      options.signal?.addEventListener("abort", stop, { once: true });
      try {
        await file.seek(part.next, SEEK_START);
        while (true) {
          options.signal?.throwIfAborted();
          const { done, value } = await reader.read();
          if (done) break;
          await writeAll(file, value, incomplete);
          sequentialHash?.update(value);
          part.next += value.length;
          downloaded += value.length;
          saver?.save();
          options.onBytes?.(value.length);
        }
        // A cancelled read ends like a finished one: the partial stays for resume.
        options.signal?.throwIfAborted();
      } finally {
        options.signal?.removeEventListener("abort", stop);
        await reader.cancel().catch(() => {});
        file.close();
      }
    });
  };

  try {
    const results = await Promise.allSettled(parts.map(fetchPart));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
  } finally {
    await saver?.flush();
  }

  const length = await fileLength(incomplete);
  if (length !== size) {
    // Should not happen (every range ended where announced); never accept it (D4).
    await discard(incomplete, partsPath);
    throw new HubRequestError(
      `Cannot download "${source.name}": got ${length} bytes, the Hub announced ${size}; the partial download was deleted`,
      200,
      source.name,
    );
  }
  if (check !== undefined) {
    let hash = sequentialHash;
    if (hash === undefined) {
      hash = check.start();
      await hashFile(incomplete, size, hash);
    }
    const actual = hash.digest("hex");
    if (actual !== check.expected) {
      // D5: never cache content that is not what the Hub announced.
      await discard(incomplete, partsPath);
      // A wrong answer from the server, as with --no-cache: exit code 2 both ways.
      throw new HubAnswerError(
        `Cannot download "${source.name}": its ${check.what} is ${actual} but the Hub announced ${check.expected}; the download was deleted and not cached, run again to retry`,
        source.name,
      );
    }
  }
  await fs.rename(incomplete, blobPath);
  await fs.remove(partsPath).catch(() => {});
  return { downloaded, resumed };
}

/** A hash to check a download against: which, the expected digest, and a fresh hash primed for it. */
interface ContentCheck {
  what: string;
  expected: string;
  start(): Sha256;
}

/**
 * The check of a blob: its sha256 (LFS), else its git blob id when the etag
 * is one (a SHA-1 over `blob {size}\0` and the content, as git computes it).
 */
function contentCheck(
  sha256: string | undefined,
  etag: string,
  size: number,
): ContentCheck | undefined {
  // An etag of 64 hex digits is the content's sha256 (an LFS file served without a redirect).
  const digest = sha256 ?? (/^[0-9a-f]{64}$/.test(etag) ? etag : undefined);
  if (digest !== undefined) {
    return { what: "sha256", expected: digest, start: () => createSha256() };
  }
  if (/^[0-9a-f]{40}$/.test(etag)) {
    return {
      what: "git blob SHA-1",
      expected: etag,
      start: () => createSha1().update(`blob ${size}\0`),
    };
  }
  return undefined;
}

async function writeAll(file: RuntimeFile, bytes: Uint8Array, path: string): Promise<void> {
  let written = 0;
  try {
    while (written < bytes.length) written += await file.write(bytes.subarray(written));
  } catch (error) {
    if (isDiskFull(error)) throw new DiskFullError(path, { cause: error });
    throw error;
  }
}

/**
 * Whether an error is "no space left on device" (ENOSPC) or a quota error.
 *
 * @param error Anything thrown by a write.
 * @returns `true` for a full disk.
 */
export function isDiskFull(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ENOSPC" || code === "EDQUOT" ||
    (error instanceof Error && /No space left on device|os error 28\b/.test(error.message));
}

async function fileLength(path: string): Promise<number> {
  try {
    const info = await fs.stat(path);
    return info.isFile ? info.size : 0;
  } catch (error) {
    if (error instanceof fs.errors.NotFound) return 0;
    throw error;
  }
}

async function discard(incomplete: string, partsPath: string): Promise<void> {
  await fs.remove(incomplete).catch(() => {});
  await fs.remove(partsPath).catch(() => {});
}

/** The sidecar's ranges, or `undefined` when absent or not for this file. */
async function readParts(path: string, size: number): Promise<Part[] | undefined> {
  let text: string;
  try {
    text = await fs.readTextFile(path);
  } catch {
    return undefined;
  }
  try {
    const data = JSON.parse(text) as PartsFile;
    if (data.version !== PARTS_VERSION || data.size !== size || !Array.isArray(data.parts)) {
      throw new Error("stale");
    }
    let expected = 0;
    for (const p of data.parts) {
      const ok = Number.isSafeInteger(p.start) && Number.isSafeInteger(p.end) &&
        Number.isSafeInteger(p.next) && p.start === expected && p.start <= p.next &&
        p.next <= p.end;
      if (!ok) throw new Error("bad range");
      expected = p.end;
    }
    if (expected !== size) throw new Error("ranges do not cover the file");
    return data.parts.map(({ start, end, next }) => ({ start, end, next }));
  } catch {
    // A sidecar we cannot trust makes the whole partial untrustworthy: start over.
    await fs.remove(path).catch(() => {});
    await fs.remove(path.replace(/\.parts\.json$/, "")).catch(() => {});
    return undefined;
  }
}

async function writeParts(path: string, data: PartsFile): Promise<void> {
  const temporary = `${path}.tmp`;
  await fs.writeTextFile(temporary, JSON.stringify(data));
  await fs.rename(temporary, path);
}

/** Saves the sidecar after writes, coalescing saves requested while one is in flight. */
class PartsSaver {
  #path: string;
  #size: number;
  #parts: Part[];
  #saves = new SerialSaves(() => this.#write());
  #error: unknown;

  constructor(path: string, size: number, parts: Part[]) {
    this.#path = path;
    this.#size = size;
    this.#parts = parts;
  }

  save(): void {
    this.#saves.request();
  }

  async #write(): Promise<boolean> {
    // Snapshot the ranges now: bytes written later are not yet promised.
    const data = {
      version: PARTS_VERSION,
      size: this.#size,
      parts: this.#parts.map((p) => ({ ...p })),
    };
    try {
      await writeParts(this.#path, data);
    } catch (error) {
      this.#error = error;
      return false;
    }
    return true;
  }

  async flush(): Promise<void> {
    await this.#saves.idle();
    if (this.#saves.pending) {
      this.save();
      await this.#saves.idle();
    }
    if (this.#error !== undefined && isDiskFull(this.#error)) {
      throw new DiskFullError(this.#path, { cause: this.#error });
    }
  }
}
