/**
 * A Hub repository as {@linkcode ModelFiles} over HTTP, for `--no-cache`
 * imports (DESIGN.md principle 3): format readers read shard headers and
 * stream tensor ranges straight from Range requests, and nothing is written
 * to disk.
 *
 * @module
 */

import {
  HubAnswerError,
  HubOfflineError,
  HubRequestError,
  HubUnreachableError,
} from "../errors.ts";
import type { ByteSource } from "../io/byte_source.ts";
import { ContentDigest } from "../io/digest_source.ts";
import { parallelRanges } from "../io/parallel_ranges.ts";
import type { RetryOptions } from "../io/http_source.ts";
import type { ModelFiles } from "../io/model_files.ts";
import { HubClient } from "./hub_client.ts";
import { DigestCheckpoint } from "./hub_digest_checkpoint.ts";
import { HubCache } from "./hub_cache.ts";
import { reachHub } from "./hub_reach.ts";
import { assertSafeRevision } from "./hub_names.ts";
import { DEFAULT_REVISION, formatHubRef, type HubRef, parseHubRef } from "./hub_ref.ts";
import { hubClientOptions, type HubSettings, hubSettingsFromEnv } from "./hub_settings.ts";

/** Options of {@linkcode openHubModelFiles}. */
export interface HubModelFilesOptions extends RetryOptions {
  /** Hub settings. Default: {@linkcode hubSettingsFromEnv}. */
  settings?: HubSettings;
  /** Revision, overriding the reference's `@revision`. Default: `main`. */
  revision?: string | undefined;
  /**
   * Save the sha256 checks in this file as they advance, so a later run
   * continues them (`hub_digest_checkpoint.ts`); `restore` reads what an
   * earlier run saved there.
   */
  checkpoint?: { path: string; restore: boolean } | undefined;
}

/** A Hub repository's files over HTTP, whose checks can be saved for a later run. */
export interface HubModelFilesHandle extends ModelFiles {
  /** Check every opened file against its sha256, reading what was not read yet. */
  verify(): Promise<void>;
  /** Save the checks' progress now (when a checkpoint file was asked for); never throws. */
  saveProgress(): Promise<void>;
}

/**
 * Open a Hub repository (or the sub-folder its reference names) for reading
 * over HTTP. Files stored in LFS are checked against their sha256 as they
 * stream; `verify()` completes the check. The revision is resolved to a commit once, so every file comes
 * from the same commit even if the branch moves meanwhile.
 *
 * @example Usage
 * ```ts ignore
 * import { openHubModelFiles } from "./hub_files.ts";
 * const files = await openHubModelFiles("hf://org/name");
 * const config = await files.open("config.json");
 * ```
 *
 * @param ref The model, as `hf://org/name[@revision][/folder]` or parsed.
 * @param options Settings, revision, retries.
 * @returns The files; paths are relative to the folder the reference names.
 * @throws {HubRequestError} When offline, or the repository or revision cannot be read.
 * @throws {HubUnreachableError} When the Hub cannot be reached (one short attempt) while the cache holds the revision's snapshot.
 */
export async function openHubModelFiles(
  ref: HubRef | string,
  options: HubModelFilesOptions = {},
): Promise<HubModelFilesHandle> {
  const parsed = typeof ref === "string" ? parseHubRef(ref) : ref;
  const settings = options.settings ?? hubSettingsFromEnv();
  const revision = assertSafeRevision(options.revision ?? parsed.revision ?? DEFAULT_REVISION);
  if (settings.offline) {
    const name = formatHubRef({ ...parsed, revision });
    throw new HubOfflineError(
      `Cannot stream ${name}: HF_HUB_OFFLINE is set and streaming without the cache needs the network; unset it, or import from the cache`,
      name,
    );
  }
  const { settings: _s, revision: _r, checkpoint: _c, ...retry } = options;
  const clientOptions = hubClientOptions(settings, retry);
  const client = new HubClient(clientOptions);
  // With the model cached, one short attempt tells an unreachable Hub; the
  // caller may then read the cache (HubUnreachableError, hub_reach.ts).
  const reach = await reachHub(
    client,
    clientOptions,
    new HubCache(settings.cacheDir, parsed.repoId),
    parsed.repoId,
    revision,
  );
  if (reach.unreachable !== undefined) {
    throw new HubUnreachableError(reach.unreachable, reach.commit);
  }
  const info = reach.info;
  const prefix = parsed.path === undefined ? "" : `${parsed.path}/`;
  const files = info.files.filter((f) => f.startsWith(prefix)).map((f) => f.slice(prefix.length));
  if (parsed.path !== undefined && files.length === 0) {
    throw new HubRequestError(
      `Cannot stream ${
        formatHubRef(parsed)
      }: no folder "${parsed.path}" in hf://${parsed.repoId} at revision "${revision}"`,
      404,
      formatHubRef(parsed),
    );
  }
  const checkpoint = options.checkpoint === undefined
    ? undefined
    : await DigestCheckpoint.open(options.checkpoint.path, info.commit, options.checkpoint.restore);
  return new HubModelFiles(client, parsed.repoId, info.commit, prefix, files, checkpoint);
}

class HubModelFiles implements HubModelFilesHandle {
  readonly name: string;
  #client: HubClient;
  #repoId: string;
  #commit: string;
  #prefix: string;
  #files: string[];
  /** One running sha256 per LFS file opened, kept across re-opens. */
  #digests = new Map<string, ContentDigest>();
  #checkpoint: DigestCheckpoint | undefined;

  constructor(
    client: HubClient,
    repoId: string,
    commit: string,
    prefix: string,
    files: string[],
    checkpoint: DigestCheckpoint | undefined,
  ) {
    this.#checkpoint = checkpoint;
    this.#client = client;
    this.#repoId = repoId;
    this.#commit = commit;
    this.#prefix = prefix;
    this.#files = files;
    this.name = `hf://${repoId}@${commit}${prefix === "" ? "" : `/${prefix.slice(0, -1)}`}`;
  }

  list(): Promise<string[]> {
    return Promise.resolve([...this.#files]);
  }

  async open(path: string): Promise<ByteSource> {
    const fullPath = this.#prefix + path;
    const info = await this.#client.fileInfo(this.#repoId, this.#commit, fullPath);
    // Long tensor spans come as parallel ranges, as `apr pull` downloads them
    // (bounded: a few parts held at once).
    const source = parallelRanges(
      await this.#client.openFile(this.#repoId, this.#commit, fullPath, info),
    );
    // LFS files (every weight file) carry a sha256: bytes are hashed as they
    // stream, and verify() settles it before any output is kept (FORMATS.md D5).
    if (info.sha256 === undefined) return source;
    let digest = this.#digests.get(fullPath);
    if (digest === undefined) {
      digest = this.#checkpoint?.digest(fullPath, source.name, info.size, info.sha256) ??
        new ContentDigest(source.name, info.size, info.sha256);
      this.#digests.set(fullPath, digest);
    }
    return digest.wrap(source);
  }

  async verify(): Promise<void> {
    try {
      for (const [fullPath, digest] of this.#digests) {
        await digest.verify(() => this.#client.openFile(this.#repoId, this.#commit, fullPath));
      }
    } catch (error) {
      // A mismatch is final (its state is worthless); a network failure may be resumed.
      if (error instanceof HubAnswerError) await this.#checkpoint?.remove();
      else await this.saveProgress();
      throw error;
    }
    await this.#checkpoint?.remove();
  }

  async saveProgress(): Promise<void> {
    await this.#checkpoint?.flush();
  }

  locate(path: string): string {
    return `hf://${this.#repoId}@${this.#commit}/${this.#prefix}${path}`;
  }
}
