/**
 * The per-blob lock that keeps two downloads of one file out of each other's
 * way, with huggingface_hub's path scheme (FORMATS.md §4):
 * `{cache}/.locks/models--{org}--{name}/{etag}.lock`, an advisory `flock` on
 * that file (Python's `filelock` takes the same kind of lock, so aprkit and
 * huggingface_hub sharing one cache wait for each other too). The lock file
 * stays after use, as huggingface_hub leaves it.
 *
 * Without it two runs of `apr pull` on one `HF_HOME` wrote to the same
 * `blobs/{etag}.incomplete`; the first to finish renamed it away and the
 * second failed ("got 0 bytes").
 *
 * @module
 */

import { dirname } from "../runtime/path.ts";
import type { HubCache } from "./hub_cache.ts";
import { fs } from "../runtime/fs.ts";

/** How often a waiting run asks again (a `flock` wait cannot be interrupted, so it polls). */
const POLL_MS = 100;

/** Options of {@linkcode withBlobLock}. */
export interface BlobLockOptions {
  /** Stops waiting (rejects with its reason). */
  signal?: AbortSignal | undefined;
  /** Called once when another process holds the lock and this one starts waiting. */
  onWait?: (lockPath: string) => void;
}

/**
 * Run `work` while holding the lock of one blob, waiting for another process
 * (or another aprkit call in this one) that holds it.
 *
 * @example Usage
 * ```ts ignore
 * import { HubCache } from "./hub_cache.ts";
 * import { withBlobLock } from "./hub_lock.ts";
 * const cache = new HubCache("/tmp/hub", "org/name");
 * await withBlobLock(cache, "0123456789abcdef0123456789abcdef01234567", async () => {
 *   // download into blobs/{etag}.incomplete, then rename to blobs/{etag}
 * });
 * ```
 *
 * @param cache The repository's cache.
 * @param etag The blob's etag.
 * @param work What to do under the lock.
 * @param options Abort signal and a waiting callback.
 * @returns What `work` returns.
 */
export async function withBlobLock<T>(
  cache: HubCache,
  etag: string,
  work: () => Promise<T>,
  options: BlobLockOptions = {},
): Promise<T> {
  const path = cache.lockPath(etag);
  await fs.mkdir(dirname(path), { recursive: true });
  // Group-writable, as huggingface_hub creates it, so users sharing a cache can wait on it.
  const file = await fs.open(path, { read: true, write: true, create: true, mode: 0o664 });
  try {
    let told = false;
    // Node has no file locks: there the cache is shared without one.
    while (file.tryLock && !(await file.tryLock(true))) {
      if (!told) {
        told = true;
        options.onWait?.(path);
      }
      options.signal?.throwIfAborted();
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    try {
      return await work();
    } finally {
      await file.unlock?.().catch(() => {});
    }
  } finally {
    file.close();
  }
}
