// This module is browser compatible.

/**
 * The `RateLimit` response header of the IETF draft "RateLimit header
 * fields for HTTP" (draft-ietf-httpapi-ratelimit-headers), as the Hugging
 * Face Hub sends it with HTTP 429 (huggingface_hub #3553, PR #3570):
 * `RateLimit: "api";r=0;t=55` — the quota policy `"api"`, `r` requests
 * remaining, `t` seconds until the window resets. Several policies may be
 * listed, separated by commas; the one that waits longest among those used
 * up decides.
 *
 * @module
 */

/** One quota of a `RateLimit` header. */
export interface RateLimit {
  /** The policy's name (`"api"`, `"resolvers"`…). */
  readonly policy: string;
  /** Requests remaining in the window. */
  readonly remaining: number;
  /** Seconds until the window resets. */
  readonly resetSeconds: number;
}

/** Longest header parsed: a real one is a few dozen characters. */
const MAX_HEADER_LENGTH = 1024;
/** Longest reset believed, in seconds (a day): the wait budget applies before this. */
const MAX_RESET_SECONDS = 86_400;

/**
 * The quota a client must wait for: the used-up policy (`r=0`) that resets
 * last, or `undefined` when the header is absent, malformed, or no quota is
 * used up.
 *
 * @example Usage
 * ```ts
 * import { parseRateLimit } from "./rate_limit.ts";
 * const limit = parseRateLimit('"api";r=0;t=55');
 * console.assert(limit?.policy === "api" && limit.resetSeconds === 55);
 * ```
 *
 * @param header The `RateLimit` header's value.
 * @returns The quota to wait for.
 */
export function parseRateLimit(header: string | null): RateLimit | undefined {
  if (header === null || header.length > MAX_HEADER_LENGTH) return undefined;
  let chosen: RateLimit | undefined;
  for (const item of header.split(",")) {
    const [name, ...params] = item.trim().split(";").map((p) => p.trim());
    const policy = /^"([^"\\]{0,64})"$/.exec(name ?? "")?.[1] ??
      /^[A-Za-z0-9_.-]{1,64}$/.exec(name ?? "")?.[0];
    if (policy === undefined) continue;
    let remaining: number | undefined;
    let reset: number | undefined;
    for (const p of params) {
      const m = /^([rt])=(\d{1,10})$/.exec(p);
      if (m === null) continue;
      if (m[1] === "r") remaining = Number(m[2]);
      else reset = Number(m[2]);
    }
    if (remaining !== 0 || reset === undefined || reset > MAX_RESET_SECONDS) continue;
    if (chosen === undefined || reset > chosen.resetSeconds) {
      chosen = { policy, remaining, resetSeconds: reset };
    }
  }
  return chosen;
}
