/**
 * Hub settings from the environment (FORMATS.md §4): `HF_ENDPOINT`,
 * `HF_TOKEN` (else the file `$HF_HOME/token`), `HF_HOME`, `HF_HUB_CACHE`,
 * `HF_HUB_OFFLINE`.
 *
 * @module
 */

import { join } from "node:path";

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
}

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
 */
export function hubSettingsFromEnv(env: HubEnv = Deno.env.toObject()): HubSettings {
  const userHome = env.HOME ?? env.USERPROFILE ?? ".";
  const home = nonEmpty(env.HF_HOME) ??
    join(nonEmpty(env.XDG_CACHE_HOME) ?? join(userHome, ".cache"), "huggingface");
  const cacheDir = nonEmpty(env.HF_HUB_CACHE) ?? join(home, "hub");
  const endpoint = (nonEmpty(env.HF_ENDPOINT) ?? DEFAULT_HUB_ENDPOINT).replace(/\/+$/, "");
  let token = nonEmpty(env.HF_TOKEN) ?? nonEmpty(env.HUGGING_FACE_HUB_TOKEN);
  if (token === undefined) {
    try {
      token = nonEmpty(Deno.readTextFileSync(join(home, "token")).trim());
    } catch {
      // No token file (or not readable): anonymous access.
    }
  }
  const offline = TRUE_VALUES.has((env.HF_HUB_OFFLINE ?? "").trim().toUpperCase());
  return { endpoint, token, home, cacheDir, offline };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}
