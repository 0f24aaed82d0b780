/**
 * The Hugging Face cache layout, shared with every Hugging Face tool
 * (FORMATS.md §4): `models--{org}--{name}/blobs/{etag}`,
 * `refs/{revision}` (a file holding the commit) and
 * `snapshots/{commit}/{path}` → a RELATIVE symlink to `../../blobs/{etag}`.
 * Partial downloads are `blobs/{etag}.incomplete`; the lock of a download is
 * `{cacheDir}/.locks/models--{org}--{name}/{etag}.lock` (`hub_lock.ts`).
 *
 * Every name that becomes part of a path here (etag, commit, revision, file
 * path) is checked first by the rules of `hub_names.ts`, whoever calls: the
 * names come from a server, and nothing may be created outside `repoDir`.
 *
 * @module
 */

import { dirname, join } from "../runtime/path.ts";
import { ModelFormatError } from "../errors.ts";
import {
  assertSafeRepoPath,
  assertSafeRevision,
  isBlobEtag,
  isCommitId,
  quoteName,
} from "./hub_names.ts";
import { fs } from "../runtime/fs.ts";

/**
 * One repository's folder in the cache.
 *
 * @example Usage
 * ```ts
 * import { HubCache } from "./hub_cache.ts";
 * const cache = new HubCache("/tmp/hub", "org/name");
 * console.assert(cache.repoDir === "/tmp/hub/models--org--name");
 * ```
 */
export class HubCache {
  /** The cache root (`HF_HUB_CACHE`). */
  readonly cacheDir: string;
  /** `org/name`. */
  readonly repoId: string;
  /** `{cacheDir}/models--{org}--{name}`. */
  readonly repoDir: string;

  /**
   * Name a repository's cache folder (nothing is created yet).
   *
   * @param cacheDir The cache root.
   * @param repoId `org/name`.
   */
  constructor(cacheDir: string, repoId: string) {
    this.cacheDir = cacheDir;
    this.repoId = repoId;
    this.repoDir = join(cacheDir, `models--${repoId.replaceAll("/", "--")}`);
  }

  /**
   * The path of a complete blob.
   *
   * @param etag The blob's etag.
   * @returns `blobs/{etag}`.
   */
  blobPath(etag: string): string {
    if (!isBlobEtag(etag)) {
      throw new TypeError(
        `Cannot use ETag ${quoteName(etag)} as a blob name: it is not a git blob id or sha256`,
      );
    }
    return join(this.repoDir, "blobs", etag);
  }

  /**
   * The path of a partial download.
   *
   * @param etag The blob's etag.
   * @returns `blobs/{etag}.incomplete`.
   */
  incompletePath(etag: string): string {
    return `${this.blobPath(etag)}.incomplete`;
  }

  /**
   * The lock file of a blob's download, where huggingface_hub puts it.
   *
   * @param etag The blob's etag.
   * @returns `{cacheDir}/.locks/models--{org}--{name}/{etag}.lock`.
   */
  lockPath(etag: string): string {
    this.blobPath(etag); // checks the etag
    return join(
      this.cacheDir,
      ".locks",
      `models--${this.repoId.replaceAll("/", "--")}`,
      `${etag}.lock`,
    );
  }

  /**
   * The folder of one commit's files.
   *
   * @param commit The commit.
   * @returns `snapshots/{commit}`.
   */
  snapshotDir(commit: string): string {
    if (!isCommitId(commit)) {
      throw new TypeError(`Cannot use commit ${quoteName(commit)}: it is not 40 hex digits`);
    }
    return join(this.repoDir, "snapshots", commit);
  }

  /**
   * The commit a revision pointed at when last resolved, from `refs/`. A
   * revision that is itself a commit id resolves to itself.
   *
   * @param revision Branch, tag or commit.
   * @returns The commit, or `undefined` when unknown.
   */
  async readRef(revision: string): Promise<string | undefined> {
    if (isCommitId(revision)) return revision;
    assertSafeRevision(revision);
    try {
      const commit = (await fs.readTextFile(join(this.repoDir, "refs", revision))).trim();
      return isCommitId(commit) ? commit : undefined;
    } catch (error) {
      if (error instanceof fs.errors.NotFound) return undefined;
      throw error;
    }
  }

  /**
   * Record the commit of a revision in `refs/{revision}` (no newline, as the
   * Hugging Face tools write it). Commit ids are not recorded.
   *
   * @param revision Branch or tag.
   * @param commit The commit it points at.
   */
  async writeRef(revision: string, commit: string): Promise<void> {
    if (revision === commit) return;
    assertSafeRevision(revision);
    this.snapshotDir(commit); // checks the commit
    const path = join(this.repoDir, "refs", revision);
    await fs.mkdir(dirname(path), { recursive: true });
    if ((await this.readRef(revision)) === commit) return;
    await atomicWrite(path, commit);
  }

  /**
   * Whether a snapshot file is present and its blob complete.
   *
   * @param commit The commit.
   * @param path Path inside the repository.
   * @returns `true` when `snapshots/{commit}/{path}` resolves to a file.
   */
  async hasSnapshotFile(commit: string, path: string): Promise<boolean> {
    const file = join(this.snapshotDir(commit), assertSafeRepoPath(path, "a cached file"));
    try {
      return (await fs.stat(file)).isFile;
    } catch {
      return false;
    }
  }

  /**
   * Whether a complete blob is present.
   *
   * @param etag The blob's etag.
   * @param size Its expected size, when known.
   * @returns `true` when `blobs/{etag}` exists (with that size).
   */
  async hasBlob(etag: string, size?: number): Promise<boolean> {
    try {
      const info = await fs.stat(this.blobPath(etag));
      return info.isFile && (size === undefined || info.size === size);
    } catch {
      return false;
    }
  }

  /**
   * Point `snapshots/{commit}/{path}` at `blobs/{etag}` with a relative
   * symlink (`../../blobs/{etag}`, one more `../` per folder in `path`),
   * replacing an older link.
   *
   * @param commit The commit.
   * @param path Path inside the repository.
   * @param etag The blob's etag.
   */
  async linkSnapshot(commit: string, path: string, etag: string): Promise<void> {
    const link = join(this.snapshotDir(commit), assertSafeRepoPath(path, "a cached file"));
    this.blobPath(etag); // checks the etag
    await fs.mkdir(dirname(link), { recursive: true });
    const depth = path.split("/").length - 1;
    const target = `${"../".repeat(depth + 2)}blobs/${etag}`;
    try {
      if ((await fs.readLink(link)) === target) return;
      await fs.remove(link);
    } catch (error) {
      if (!(error instanceof fs.errors.NotFound)) {
        // Not a link (a copied file, as on file systems without symlinks): replace it.
        await fs.remove(link).catch(() => {});
      }
    }
    try {
      await fs.symlink(target, link);
    } catch (error) {
      // Another run sharing the cache linked it meanwhile: fine if it points at the same blob.
      if (!(error instanceof fs.errors.AlreadyExists)) throw error;
      if ((await fs.readLink(link).catch(() => undefined)) !== target) throw error;
    }
  }
}

/**
 * A malformed file read from a snapshot is a blob of the cache that every
 * later run would read again: name the blob and say how to get rid of it.
 * Other errors are returned as they are.
 *
 * @param error What reading the snapshot threw.
 * @param snapshotPath `snapshots/{commit}` of the run.
 * @returns The error, with the blob and the remedy in its message when it is about a cached file.
 */
export async function explainCachedFile(error: unknown, snapshotPath: string): Promise<unknown> {
  if (!(error instanceof ModelFormatError)) return error;
  if (!error.path.startsWith(`${snapshotPath}/`)) return error;
  const blob = await fs.realPath(error.path).catch(() => undefined);
  if (blob === undefined || blob === error.path) return error;
  return new ModelFormatError(
    error.format,
    error.path,
    `${error.reason}; this file of the Hugging Face cache is the blob "${blob}": delete it (and the link "${error.path}") and run the same command again to fetch it anew`,
    { ...(error.offset !== undefined ? { offset: error.offset } : {}), cause: error },
  );
}

/**
 * Write a small file so that readers see the old or the new content, never half.
 *
 * @param path The file.
 * @param text Its new content.
 */
export async function atomicWrite(path: string, text: string): Promise<void> {
  const temporary = `${path}.${crypto.randomUUID()}.tmp`;
  await fs.writeTextFile(temporary, text);
  try {
    await fs.rename(temporary, path);
  } catch (error) {
    await fs.remove(temporary).catch(() => {});
    throw error;
  }
}
