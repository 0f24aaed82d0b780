/**
 * The first request of a Hub run (revision → commit and file list), made
 * the way huggingface_hub makes it when the cache could answer instead: with
 * the revision's snapshot in the cache, one short attempt (at most
 * {@linkcode FAST_TIMEOUT_MS}, no retries) finds out that the Hub is
 * unreachable, and the caller uses the cache with a warning. A Hub that
 * answers "busy" (408, 429, 5xx) is reachable and is retried as usual;
 * without the model in the cache, retrying is all there is. Callers that
 * cannot read the cache themselves throw `HubUnreachableError` (errors.ts).
 *
 * @module
 */

import { HubRequestError } from "../errors.ts";
import type { HubCache } from "./hub_cache.ts";
import { HubClient, type HubClientOptions, type HubRepoInfo } from "./hub_client.ts";
import { fs } from "../runtime/fs.ts";

/** The one attempt at the Hub when the cache could answer instead (huggingface_hub's default `HF_HUB_ETAG_TIMEOUT`). */
export const FAST_TIMEOUT_MS = 10_000;

/** What {@linkcode reachHub} found. */
export type HubReach =
  | { readonly info: HubRepoInfo; readonly unreachable?: undefined }
  /** No connection, and the cache holds `commit`'s snapshot for the revision. */
  | { readonly info?: undefined; readonly unreachable: HubRequestError; readonly commit: string };

/**
 * The commit `refs/{revision}` records, when its snapshot folder exists.
 *
 * @param cache The repository's cache.
 * @param revision Branch, tag or commit.
 * @returns The commit, or `undefined`.
 */
export async function cachedSnapshot(
  cache: HubCache,
  revision: string,
): Promise<string | undefined> {
  const commit = await cache.readRef(revision).catch(() => undefined);
  if (commit === undefined) return undefined;
  const info = await fs.stat(cache.snapshotDir(commit)).catch(() => undefined);
  return info?.isDirectory ? commit : undefined;
}

/**
 * Resolve a revision, or find the Hub unreachable with the model cached.
 *
 * @param client The client, with the run's retries.
 * @param options The same client's options (a fast twin is made from them).
 * @param cache The repository's cache.
 * @param repoId `org/name`.
 * @param revision Branch, tag or commit.
 * @returns The revision's info, or the network error and the cached commit.
 * @throws {HubRequestError} Any other failure (and a network failure without the model cached).
 */
export async function reachHub(
  client: HubClient,
  options: HubClientOptions,
  cache: HubCache,
  repoId: string,
  revision: string,
): Promise<HubReach> {
  const commit = await cachedSnapshot(cache, revision);
  if (commit === undefined) return { info: await client.repoInfo(repoId, revision) };
  const fast = new HubClient({
    ...options,
    retries: 0,
    headerTimeoutMs: Math.min(options.headerTimeoutMs ?? FAST_TIMEOUT_MS, FAST_TIMEOUT_MS),
  });
  try {
    return { info: await fast.repoInfo(repoId, revision) };
  } catch (error) {
    if (!(error instanceof HubRequestError)) throw error;
    if (error.status === 0) return { unreachable: error, commit };
    // A Hub that answers "busy" is reachable: retry it as usual.
    const busy = error.status === 408 || error.status === 429 || error.status >= 500;
    if (!busy) throw error;
    return { info: await client.repoInfo(repoId, revision) };
  }
}

/**
 * The one warning line of a run that used the cache because the Hub was unreachable.
 *
 * @param endpoint The Hub's URL.
 * @param error The network error.
 * @param commit The cached commit used.
 * @param name The model reference, as `hf://org/name@revision`.
 * @returns The line.
 */
export function unreachableWarning(
  endpoint: string,
  error: HubRequestError,
  commit: string,
  name: string,
): string {
  const cause = error.cause instanceof Error ? error.cause.message : error.message;
  return `cannot reach the Hub at ${endpoint} (${cause}); using the cached snapshot ${
    commit.slice(0, 12)
  } of ${name}`;
}
