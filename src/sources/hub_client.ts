/**
 * A small client of the Hugging Face Hub API over `fetch` (FORMATS.md §4):
 * revision → commit, the file tree with sizes and LFS sha256, per-file
 * metadata from `HEAD`, and files as {@linkcode HttpSource}s.
 *
 * @module
 */

import { HubAnswerError, HubRequestError } from "../errors.ts";
import {
  fetchWithRetry,
  type HttpLocation,
  HttpSource,
  readBodyLimited,
  redactUrl,
  type RetryOptions,
} from "../io/http_source.ts";
import { assertSafeRepoPath, isBlobEtag, isCommitId, quoteName } from "./hub_names.ts";

/** A sha256 as the Hub writes it: 64 lowercase hex digits. */
const SHA256_HEX = /^[0-9a-f]{64}$/;
/** Options of {@linkcode HubClient}. */
export interface HubClientOptions extends RetryOptions {
  /**
   * The Hub's base URL.
   *
   * @default {"https://huggingface.co"}
   */
  endpoint?: string;
  /** Access token, sent as a bearer header to the Hub only (never to a CDN, never logged). */
  token?: string | undefined;
}

/** What the revision endpoint says. */
export interface HubRepoInfo {
  /** The commit the revision points at (40 hex digits). */
  commit: string;
  /** Every file's path, sorted. */
  files: string[];
}

/** One file of the tree listing. */
export interface HubTreeEntry {
  /** Path inside the repository. */
  path: string;
  /** Size in bytes. */
  size: number;
  /** Git object id (for non-LFS files also the cache etag). */
  oid: string;
  /** For LFS files, the sha256 of the content. */
  sha256: string | undefined;
}

/** What `HEAD` on a file's resolve URL says. */
export interface HubFileInfo {
  /** Path inside the repository. */
  path: string;
  /** The commit the revision resolved to. */
  commit: string;
  /** The cache key: the LFS sha256, or the git blob id. */
  etag: string;
  /** Size in bytes. */
  size: number;
  /** The sha256 of the content when the file is in LFS (equals `etag`). */
  sha256: string | undefined;
  /** Where to download it from (a CDN URL for LFS files), with the headers to send. */
  location: HttpLocation;
}

/** Longest chain of same-host redirects followed (renamed repositories). */
const MAX_REDIRECTS = 5;
/**
 * Largest file size believed from a server: the Hub stores files of at most
 * 50 GB. A size of 2^53 − 1 would have split one download into 134 million
 * parts (an out-of-memory crash) before a single byte was fetched.
 */
export const MAX_HUB_FILE_BYTES = 2 ** 42;
/**
 * Largest API answer read (a revision's info, one page of a tree listing).
 * The Hub's pages hold about a thousand entries, well under a megabyte; a
 * repository with 10^5 files lists in under 50 MB. Anything longer is a
 * server trying to exhaust memory (docs/SECURITY.md).
 */
export const MAX_API_ANSWER_BYTES = 64 * 1024 * 1024;
/** Pages of a tree listing before giving up (a loop in `Link` headers). */
const MAX_TREE_PAGES = 10_000;

/** What a request was about, for a 404 message that says which thing is missing. */
type Subject =
  | { kind: "repo"; repoId: string; revision: string }
  | { kind: "file"; repoId: string; revision: string; path: string };

/**
 * The Hub API, with retries, and D6 errors that say what is wrong.
 *
 * @example Usage
 * ```ts ignore
 * import { HubClient } from "./hub_client.ts";
 * const client = new HubClient({ token: Deno.env.get("HF_TOKEN") });
 * const { commit } = await client.repoInfo("microsoft/phi-4", "main");
 * ```
 */
export class HubClient {
  /** The Hub's base URL. */
  readonly endpoint: string;
  #token: string | undefined;
  #retry: RetryOptions;

  /**
   * Configure a client.
   *
   * @param options Endpoint, token, retries.
   */
  constructor(options: HubClientOptions = {}) {
    this.endpoint = (options.endpoint ?? "https://huggingface.co").replace(/\/+$/, "");
    this.#token = options.token;
    const { endpoint: _endpoint, token: _token, ...retry } = options;
    this.#retry = retry;
  }

  /** Whether a token is configured (the token itself is never exposed). */
  get hasToken(): boolean {
    return this.#token !== undefined;
  }

  #headers(): Record<string, string> {
    return this.#token === undefined ? {} : { authorization: `Bearer ${this.#token}` };
  }

  /**
   * The `resolve/` URL of a file.
   *
   * @param repoId `org/name`.
   * @param revision Branch, tag or commit.
   * @param path Path inside the repository.
   * @returns The URL.
   */
  resolveUrl(repoId: string, revision: string, path: string): string {
    // A ".." segment would be normalised away by URL parsing: refuse it first.
    assertSafeRepoPath(path, `a file of hf://${repoId}`);
    const encodedPath = path.split("/").map(encodeURIComponent).join("/");
    return `${this.endpoint}/${repoId}/resolve/${encodeURIComponent(revision)}/${encodedPath}`;
  }

  /**
   * Resolve a revision to its commit and list the files.
   *
   * @param repoId `org/name`.
   * @param revision Branch, tag or commit.
   * @returns The commit and file list.
   * @throws {HubRequestError} 401/403/404 with a message naming the repository or revision.
   */
  async repoInfo(repoId: string, revision: string): Promise<HubRepoInfo> {
    const url = `${this.endpoint}/api/models/${repoId}/revision/${encodeURIComponent(revision)}`;
    const subject: Subject = { kind: "repo", repoId, revision };
    const body = await this.#getJson(url, subject) as {
      sha?: unknown;
      siblings?: { rfilename?: unknown }[];
    };
    if (typeof body?.sha !== "string" || !isCommitId(body.sha)) {
      throw this.#badAnswer(url, "no commit id (sha) in the revision info");
    }
    const files = (Array.isArray(body.siblings) ? body.siblings : [])
      .map((s) => s?.rfilename).filter((f): f is string => typeof f === "string").sort();
    return { commit: body.sha, files };
  }

  /**
   * List every file with its size and LFS sha256, following `Link` pagination.
   *
   * @param repoId `org/name`.
   * @param revision Branch, tag or commit (prefer the commit).
   * @returns The files, sorted by path.
   */
  async listTree(repoId: string, revision: string): Promise<HubTreeEntry[]> {
    let url: string | undefined = `${this.endpoint}/api/models/${repoId}/tree/${
      encodeURIComponent(revision)
    }?recursive=true&expand=false`;
    const subject: Subject = { kind: "repo", repoId, revision };
    const entries: HubTreeEntry[] = [];
    for (let page = 0; url !== undefined; page++) {
      if (page >= MAX_TREE_PAGES) throw this.#badAnswer(url, "too many pages in the file listing");
      const response = await this.#get(url, subject);
      const body = await this.#readJson(response, url);
      if (!Array.isArray(body)) throw this.#badAnswer(url, "the file listing is not a JSON array");
      for (const item of body as Record<string, unknown>[]) {
        if (item?.type !== "file" || typeof item.path !== "string") continue;
        const lfs = item.lfs as { oid?: unknown } | undefined;
        entries.push({
          path: item.path,
          size: typeof item.size === "number" ? item.size : 0,
          oid: typeof item.oid === "string" ? item.oid : "",
          // Gated repositories may list a redacted hash (64 "*",
          // huggingface_hub #4595): only hex is a sha256; without one, the
          // resolve answer's X-Linked-Etag (fileInfo) gives it.
          sha256: typeof lfs?.oid === "string" && SHA256_HEX.test(lfs.oid) ? lfs.oid : undefined,
        });
      }
      const next = nextLink(response.headers.get("link"));
      // The next page carries the token: it must stay on the Hub's origin.
      url = next === undefined ? undefined : this.#checkedTarget(url, next, "next page", true);
    }
    return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  /**
   * `HEAD` a file: its commit, etag, size, and where to download it from
   * (following same-host redirects, stopping at a CDN redirect).
   *
   * @param repoId `org/name`.
   * @param revision Branch, tag or commit.
   * @param path Path inside the repository.
   * @returns The metadata.
   */
  async fileInfo(repoId: string, revision: string, path: string): Promise<HubFileInfo> {
    const subject: Subject = { kind: "file", repoId, revision, path };
    let url = this.resolveUrl(repoId, revision, path);
    for (let hop = 0;; hop++) {
      const response = await fetchWithRetry(url, {
        method: "HEAD",
        redirect: "manual",
        headers: { ...this.#headers(), "accept-encoding": "identity" },
      }, this.#retry);
      await response.body?.cancel().catch(() => {});
      const location = response.headers.get("location");
      const isRedirect = response.status >= 300 && response.status < 400 && location !== null;
      let target: string | undefined;
      if (isRedirect) {
        target = this.#checkedTarget(url, location, "redirect");
        // A same-host redirect (renamed repository) is followed; a redirect
        // elsewhere is the CDN, where the metadata headers of this response count.
        if (new URL(target).origin === new URL(this.endpoint).origin && !hasLinkedEtag(response)) {
          if (hop >= MAX_REDIRECTS) throw this.#badAnswer(url, "too many redirects");
          url = target;
          continue;
        }
      } else if (!response.ok) {
        throw this.#describe(response, url, subject);
      }
      const headers = response.headers;
      const commit = headers.get("x-repo-commit") ?? "";
      const rawEtag = headers.get("x-linked-etag") ?? headers.get("etag") ?? "";
      const etag = rawEtag.replace(/^W\//, "").replace(/^"|"$/g, "");
      const size = Number(headers.get("x-linked-size") ?? headers.get("content-length") ?? NaN);
      if (!isBlobEtag(etag)) {
        // The ETag becomes a file name in the cache: only a plain hex digest will do.
        throw this.#badAnswer(url, `no usable ETag for "${path}" (got ${quoteName(rawEtag)})`);
      }
      if (!Number.isSafeInteger(size) || size < 0 || size > MAX_HUB_FILE_BYTES) {
        throw this.#badAnswer(
          url,
          `no usable size for "${path}" (got ${
            quoteName(String(size))
          }, at most ${MAX_HUB_FILE_BYTES})`,
        );
      }
      if (!isCommitId(commit)) {
        throw this.#badAnswer(url, `no X-Repo-Commit for "${path}"`);
      }
      const sha256 = headers.has("x-linked-etag") && SHA256_HEX.test(etag) ? etag : undefined;
      const downloadUrl = target ?? url;
      // The token goes to the Hub only, never to the CDN host.
      const sameOrigin = new URL(downloadUrl).origin === new URL(this.endpoint).origin;
      return {
        path,
        commit,
        etag,
        size,
        sha256,
        location: { url: downloadUrl, headers: sameOrigin ? this.#headers() : {} },
      };
    }
  }

  /**
   * Open a file for random access over Range requests; an expired signed CDN
   * URL is resolved again with `HEAD`.
   *
   * @param repoId `org/name`.
   * @param revision Branch, tag or commit (prefer the commit).
   * @param path Path inside the repository.
   * @param info Metadata from {@linkcode HubClient.fileInfo}, when already known.
   * @returns The source.
   */
  async openFile(
    repoId: string,
    revision: string,
    path: string,
    info?: HubFileInfo,
  ): Promise<HttpSource> {
    const meta = info ?? await this.fileInfo(repoId, revision, path);
    const subject: Subject = { kind: "file", repoId, revision, path };
    return new HttpSource(meta.location.url, meta.size, {
      ...this.#retry,
      headers: meta.location.headers ?? {},
      name: `hf://${repoId}@${revision}/${path}`,
      refresh: async () => (await this.fileInfo(repoId, revision, path)).location,
      describeError: (response, url) => this.#describe(response, url, subject),
    });
  }

  /** Turn a failed response into a D6 error that says what is wrong. */
  #describe(response: Response, url: string, subject: Subject): HubRequestError {
    const code = response.headers.get("x-error-code") ?? "";
    const what = subject.kind === "file"
      ? `"${subject.path}" in hf://${subject.repoId}@${subject.revision}`
      : `hf://${subject.repoId}@${subject.revision}`;
    const status = response.status;
    let reason: string;
    if (status === 401 || (status === 403 && this.#token === undefined)) {
      reason = this.#token === undefined
        ? `authentication required (HTTP ${status}): the repository may be private or gated, or may not exist; set HF_TOKEN to a token that can read it`
        : `the token was refused (HTTP ${status}): the repository may not exist, or HF_TOKEN is invalid or expired`;
    } else if (status === 403) {
      reason = code === "GatedRepo"
        ? `access denied (HTTP 403): the repository is gated; accept its conditions on the Hub with the account of HF_TOKEN`
        : `access denied (HTTP 403): the token in HF_TOKEN has no access to it`;
    } else if (status === 404) {
      if (code === "RevisionNotFound") {
        reason = `revision "${subject.revision}" not found in hf://${subject.repoId} (HTTP 404)`;
      } else if (code === "EntryNotFound" || (subject.kind === "file" && code !== "RepoNotFound")) {
        reason = subject.kind === "file"
          ? `file "${subject.path}" not found in hf://${subject.repoId} at revision "${subject.revision}" (HTTP 404)`
          : `not found (HTTP 404)`;
      } else if (code === "RepoNotFound") {
        reason = `repository "${subject.repoId}" not found (HTTP 404)`;
      } else {
        reason =
          `repository "${subject.repoId}" or revision "${subject.revision}" not found (HTTP 404)`;
      }
    } else if (status === 416) {
      reason = `the server refused the byte range (HTTP 416)`;
    } else {
      reason = `unexpected HTTP ${status} ${response.statusText}`.trimEnd() +
        (status === 400 || status === 413
          ? " (the server may refuse plain-HTTP downloads of very large files)"
          : "");
    }
    return new HubRequestError(`Cannot fetch ${what}: ${reason}`, status, redactUrl(url));
  }

  async #get(url: string, subject: Subject): Promise<Response> {
    const response = await fetchWithRetry(url, { headers: this.#headers() }, this.#retry);
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      throw this.#describe(response, url, subject);
    }
    return response;
  }

  async #getJson(url: string, subject: Subject): Promise<unknown> {
    return await this.#readJson(await this.#get(url, subject), url);
  }

  /** A JSON answer of at most {@linkcode MAX_API_ANSWER_BYTES}. */
  async #readJson(response: Response, url: string): Promise<unknown> {
    const what = `the answer of "${redactUrl(url)}"`;
    const bytes = await readBodyLimited(response, MAX_API_ANSWER_BYTES, what, this.#retry);
    try {
      return JSON.parse(new TextDecoder().decode(bytes));
    } catch (error) {
      throw this.#badAnswer(url, "the answer is not JSON", error);
    }
  }

  /**
   * A URL the server points to (a redirect, the next page), resolved and
   * checked: http(s) only (fetch would read a `file:` URL from the local
   * disk), and on the Hub's own origin when
   * `sameOrigin` (the request will carry the token).
   */
  #checkedTarget(url: string, location: string, what: string, sameOrigin = false): string {
    let target: URL;
    try {
      target = new URL(location, url);
    } catch (error) {
      throw this.#badAnswer(url, `the ${what} URL ${quoteName(location)} is not a URL`, error);
    }
    const refused = target.protocol !== "https:" && target.protocol !== "http:"
      ? "is not http(s)"
      : sameOrigin && target.origin !== new URL(this.endpoint).origin
      ? `is not on ${new URL(this.endpoint).origin}`
      : undefined;
    if (refused !== undefined) {
      throw this.#badAnswer(url, `the ${what} ${quoteName(redactUrl(target.href))} ${refused}`);
    }
    return target.href;
  }

  #badAnswer(url: string, reason: string, cause?: unknown): HubAnswerError {
    return new HubAnswerError(
      `Cannot use the answer of "${redactUrl(url)}": ${reason}`,
      redactUrl(url),
      cause === undefined ? undefined : { cause },
    );
  }
}

function hasLinkedEtag(response: Response): boolean {
  return response.headers.has("x-linked-etag");
}

/** The `rel="next"` target of a `Link` header, as written (resolved by the caller). */
function nextLink(link: string | null): string | undefined {
  if (link === null) return undefined;
  for (const part of link.split(",")) {
    const match = /<([^>]*)>\s*;(.*)/.exec(part.trim());
    if (match && /rel\s*=\s*"?next"?/.test(match[2] ?? "")) return match[1]!;
  }
  return undefined;
}
