// This module is browser compatible.

/**
 * The rules every name coming from a Hub server (or typed by the user for
 * one) must pass before it becomes part of a path or a URL: file paths of
 * tree listings and of an index's `weight_map`, revisions (`@rev` and
 * `--revision`), commit ids and ETags. A Hub repository is anybody's to
 * publish, so a name is an attacker's until checked here (docs/SECURITY.md).
 *
 * @module
 */

/** Longest repository path accepted (Git itself allows 4096 bytes). */
export const MAX_REPO_PATH_LENGTH = 1024;
/** Longest revision accepted (branch and tag names in practice stay under 100). */
export const MAX_REVISION_LENGTH = 256;

const COMMIT_PATTERN = /^[0-9a-f]{40}$/;
// A blob name in the cache: the git blob id (40 hex) of a small file or the
// sha256 (64 hex) of an LFS file. Nothing else becomes a file name.
const ETAG_PATTERN = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
// deno-lint-ignore no-control-regex -- control characters are what this rejects
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Why a repository-relative path is unsafe, or `undefined` when it is a plain
 * relative path: `/`-separated, no empty, `.` or `..` segment (so nothing
 * absolute and nothing leaving the folder), no backslash, no control
 * character, no drive letter, at most {@linkcode MAX_REPO_PATH_LENGTH} characters.
 *
 * @example Usage
 * ```ts
 * import { unsafePathReason } from "./hub_names.ts";
 * console.assert(unsafePathReason("model-00001-of-00002.safetensors") === undefined);
 * console.assert(unsafePathReason("../../etc/passwd") !== undefined);
 * ```
 *
 * @param path The path, as the server or the user gave it.
 * @returns The reason, or `undefined`.
 */
export function unsafePathReason(path: string): string | undefined {
  if (path.length === 0) return "it is empty";
  if (path.length > MAX_REPO_PATH_LENGTH) {
    return `it is longer than ${MAX_REPO_PATH_LENGTH} characters`;
  }
  if (CONTROL.test(path)) return "it contains a control character";
  if (path.includes("\\")) return "it contains a backslash";
  if (path.startsWith("/")) return "it is absolute";
  if (/^[A-Za-z]:/.test(path)) return "it starts with a drive letter";
  for (const segment of path.split("/")) {
    if (segment === "") return "it has an empty path segment";
    if (segment === "." || segment === "..") return `it has a "${segment}" path segment`;
  }
  return undefined;
}

/**
 * Check a file path from a server (or an index) before it touches the cache
 * or a URL.
 *
 * @param path The path.
 * @param what Where it came from, for the message (e.g. `the file list of hf://org/name`).
 * @returns The path, unchanged.
 * @throws {TypeError} "Cannot use …" naming the entry and the rule it breaks.
 */
export function assertSafeRepoPath(path: string, what: string): string {
  const reason = unsafePathReason(path);
  if (reason !== undefined) {
    throw new TypeError(
      `Cannot use ${what}: the file name ${quoteName(path)} is unsafe (${reason})`,
    );
  }
  return path;
}

/**
 * Why a revision is unsafe, or `undefined`: the path rules of
 * {@linkcode unsafePathReason}, at most {@linkcode MAX_REVISION_LENGTH} characters.
 *
 * @param revision The revision.
 * @returns The reason, or `undefined`.
 */
export function unsafeRevisionReason(revision: string): string | undefined {
  return revision.length > MAX_REVISION_LENGTH
    ? `it is longer than ${MAX_REVISION_LENGTH} characters`
    : unsafePathReason(revision);
}

/**
 * Check a revision (`@rev` or `--revision`). It may contain `/` (as
 * `refs/pr/1`) and becomes `refs/{revision}` in the cache, so it follows the
 * path rules, at most {@linkcode MAX_REVISION_LENGTH} characters.
 *
 * @param revision The revision.
 * @returns The revision, unchanged.
 * @throws {TypeError} "Cannot use revision …" naming the rule it breaks.
 */
export function assertSafeRevision(revision: string): string {
  const reason = unsafeRevisionReason(revision);
  if (reason !== undefined) {
    throw new TypeError(`Cannot use revision ${quoteName(revision)}: ${reason}`);
  }
  return revision;
}

/**
 * Whether a text is a full commit id (40 lowercase hex digits).
 *
 * @param text The text.
 * @returns `true` for a commit id.
 */
export function isCommitId(text: string): boolean {
  return COMMIT_PATTERN.test(text);
}

/**
 * Whether an ETag may name a blob in the cache: a git blob id or a sha256,
 * lowercase hex.
 *
 * @param etag The ETag without quotes and `W/`.
 * @returns `true` when it is safe as a file name.
 */
export function isBlobEtag(etag: string): boolean {
  return ETAG_PATTERN.test(etag);
}

/**
 * Quote a name from a server for a one-line message: JSON escapes for
 * control characters and quotes, clipped to 80 characters.
 *
 * @param name The name.
 * @returns The quoted text.
 */
export function quoteName(name: string): string {
  const clipped = name.length > 80 ? `${name.slice(0, 77)}...` : name;
  return JSON.stringify(clipped);
}
