/**
 * Hub settings from the environment (FORMATS.md §4): `HF_ENDPOINT`,
 * `HF_TOKEN` (else the file `$HF_HOME/token`), `HF_HOME`, `HF_HUB_CACHE`,
 * `HF_HUB_OFFLINE`.
 *
 * @module
 */

import { join } from "../runtime/path.ts";
import type { RetryOptions } from "../io/http_source.ts";
import type { HubClientOptions } from "./hub_client.ts";
import { fs } from "../runtime/fs.ts";
import { envObject } from "../runtime/env.ts";

/** Where the Hub is, how to authenticate, and where the cache lives. */
export interface HubSettings {
  /** The Hub's base URL, without a trailing `/`. */
  endpoint: string;
  /**
   * The access token, sent as `Authorization: Bearer …`; never print, log or
   * write it.
   */
  token: string | undefined;
  /** `HF_HOME`. */
  home: string;
  /** The cache directory (`HF_HUB_CACHE`, default `$HF_HOME/hub`). */
  cacheDir: string;
  /** `HF_HUB_OFFLINE`: no network, the cache only. */
  offline: boolean;
  /**
   * Time limits of requests: `HF_HUB_ETAG_TIMEOUT` (seconds to wait for a
   * response's headers), `HF_HUB_DOWNLOAD_TIMEOUT` (seconds a body may stay
   * silent), `APR_HTTP_MIN_SPEED` (bytes per second a body must average over
   * `APR_HTTP_SPEED_TIME` seconds; 0 disables). Unset fields take the defaults of
   * `http_source.ts` (30 s, 30 s, 1024 B/s over 30 s).
   */
  timeouts?: HttpTimeouts;
}

/** The time limits of HTTP requests (see {@linkcode RetryOptions}). */
export type HttpTimeouts = Pick<
  RetryOptions,
  "headerTimeoutMs" | "idleTimeoutMs" | "minBytesPerSecond" | "speedWindowMs"
>;

/** The public Hub. */
export const DEFAULT_HUB_ENDPOINT = "https://huggingface.co";

/** The environment variables read, as a plain record. */
export type HubEnv = Readonly<Record<string, string | undefined>>;

const TRUE_VALUES: ReadonlySet<string> = new Set(["1", "ON", "YES", "TRUE"]);

/**
 * Read the Hub settings the way the Hugging Face tools do.
 *
 * @example Usage
 * ```ts
 * import { hubSettingsFromEnv } from "./hub_settings.ts";
 * const settings = hubSettingsFromEnv({ HF_HOME: "/tmp/hf", HF_HUB_OFFLINE: "1" });
 * console.assert(settings.cacheDir === "/tmp/hf/hub" && settings.offline);
 * ```
 *
 * @param env The variables. Default: the process environment.
 * @returns The settings.
 * @throws {TypeError} When a timeout variable (`HF_HUB_ETAG_TIMEOUT`, `HF_HUB_DOWNLOAD_TIMEOUT`, `APR_HTTP_MIN_SPEED`, `APR_HTTP_SPEED_TIME`) is not a number of the right kind, naming it.
 */
export function hubSettingsFromEnv(env: HubEnv = envObject()): HubSettings {
  const userHome = env.HOME ?? env.USERPROFILE ?? ".";
  const home = nonEmpty(env.HF_HOME) ??
    join(nonEmpty(env.XDG_CACHE_HOME) ?? join(userHome, ".cache"), "huggingface");
  const cacheDir = nonEmpty(env.HF_HUB_CACHE) ?? join(home, "hub");
  const endpoint = (nonEmpty(env.HF_ENDPOINT) ?? DEFAULT_HUB_ENDPOINT).replace(/\/+$/, "");
  let token = nonEmpty(env.HF_TOKEN) ?? nonEmpty(env.HUGGING_FACE_HUB_TOKEN);
  if (token === undefined) {
    try {
      token = nonEmpty(fs.readTextFileSync(join(home, "token")).trim());
    } catch {
      // No token file (or not readable): anonymous access.
    }
  }
  const offline = TRUE_VALUES.has((env.HF_HUB_OFFLINE ?? "").trim().toUpperCase());
  return { endpoint, token, home, cacheDir, offline, timeouts: timeoutsFromEnv(env) };
}

/**
 * A Hub client's options under these settings: their time limits, the
 * caller's retry options over them, then the endpoint and token.
 *
 * @param settings The Hub settings.
 * @param retry The caller's retry options (retries, time limits, signal).
 * @returns The options for `HubClient` and `reachHub`.
 */
export function hubClientOptions(settings: HubSettings, retry: RetryOptions): HubClientOptions {
  return { ...settings.timeouts, ...retry, endpoint: settings.endpoint, token: settings.token };
}

/**
 * Read the request time limits from the environment (see {@linkcode HubSettings.timeouts}).
 *
 * @param env The variables.
 * @returns The limits that are set.
 * @throws {TypeError} When a variable is not a number of the right kind, naming it.
 */
export function timeoutsFromEnv(env: HubEnv): HttpTimeouts {
  const timeouts: HttpTimeouts = {};
  const seconds = (name: string, zeroAllowed: boolean): number | undefined => {
    const text = nonEmpty(env[name]);
    if (text === undefined) return undefined;
    const value = Number(text);
    if (!Number.isFinite(value) || value < 0 || (value === 0 && !zeroAllowed)) {
      throw new TypeError(
        `Cannot use ${name}=${JSON.stringify(text.slice(0, 40))}: expected a ${
          zeroAllowed ? "non-negative" : "positive"
        } number`,
      );
    }
    return value;
  };
  const header = seconds("HF_HUB_ETAG_TIMEOUT", false);
  if (header !== undefined) timeouts.headerTimeoutMs = header * 1000;
  const idle = seconds("HF_HUB_DOWNLOAD_TIMEOUT", false);
  if (idle !== undefined) timeouts.idleTimeoutMs = idle * 1000;
  const speed = seconds("APR_HTTP_MIN_SPEED", true);
  if (speed !== undefined) timeouts.minBytesPerSecond = speed;
  const window = seconds("APR_HTTP_SPEED_TIME", false);
  if (window !== undefined) timeouts.speedWindowMs = window * 1000;
  return timeouts;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}
