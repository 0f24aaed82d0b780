// This module is browser compatible.

/**
 * Names of Hub models: `hf://org/name[@revision][/path]` (DESIGN.md §2.4), and
 * `hf://org/name[@revision]:QUANT` — llama.cpp's `-hf repo:quant` and ollama's
 * `hf.co/repo:tag` — naming the GGUF file or split set of one quantization.
 *
 * @module
 */

import { quoteName, unsafePathReason, unsafeRevisionReason } from "./hub_names.ts";

/** A parsed `hf://` reference. */
export interface HubRef {
  /** `org/name`. */
  readonly repoId: string;
  /** The revision after `@` (branch, tag or commit), or `undefined` for the default (`main`). */
  readonly revision: string | undefined;
  /** A file or sub-folder inside the repository, `/`-separated, or `undefined` for the root. */
  readonly path: string | undefined;
  /** The quantization tag after `:` (e.g. `"Q4_K_M"`, any case), choosing a GGUF file or split set. */
  readonly quant?: string;
}

// A quantization tag as GGUF file names spell it (llama.cpp's `[A-Z0-9_]+`, plus `-`).
const QUANT_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/;

/** The scheme of Hub references. */
export const HUB_SCHEME = "hf://";
/** The revision used when a reference names none. */
export const DEFAULT_REVISION = "main";

// The Hub's own rule for owner and repository names: letters, digits, `-`,
// `_`, `.`; not starting or ending with `-`/`.`; at most 96 characters.
const NAME_PATTERN = /^(?![-.])[A-Za-z0-9._-]{1,96}(?<![-.])$/;

/**
 * Whether a text is a Hub reference (starts with `hf://`).
 *
 * @param text Any model location.
 * @returns `true` for `hf://…`.
 */
export function isHubRef(text: string): boolean {
  return text.startsWith(HUB_SCHEME);
}

/**
 * Parse `hf://org/name[@revision][/path]` or `hf://org/name[@revision]:QUANT`.
 * A revision containing `/` (such as `refs/pr/1`) is written percent-encoded:
 * `@refs%2Fpr%2F1`.
 *
 * @example Usage
 * ```ts
 * import { parseHubRef } from "./hub_ref.ts";
 * const ref = parseHubRef("hf://microsoft/phi-4@main/model.safetensors.index.json");
 * console.assert(ref.repoId === "microsoft/phi-4" && ref.revision === "main");
 * ```
 *
 * @param text The reference.
 * @returns Its parts.
 * @throws {TypeError} When the text is not a valid reference, naming what is wrong.
 */
export function parseHubRef(text: string): HubRef {
  const fail = (reason: string): never => {
    throw new TypeError(`Cannot parse Hub reference ${quoteName(text)}: ${reason}`);
  };
  if (!isHubRef(text)) fail(`it must start with "${HUB_SCHEME}"`);
  const rest = text.slice(HUB_SCHEME.length);
  const parts = rest.split("/");
  const org = parts[0] ?? "";
  let nameAndRevision = parts[1];
  if (nameAndRevision === undefined || org === "") fail("expected hf://org/name");
  nameAndRevision = nameAndRevision as string;
  let quant: string | undefined;
  const colon = nameAndRevision.lastIndexOf(":");
  if (colon >= 0) {
    quant = nameAndRevision.slice(colon + 1);
    nameAndRevision = nameAndRevision.slice(0, colon);
    if (!QUANT_PATTERN.test(quant)) {
      fail(`"${quant}" is not a quantization tag (expected e.g. :Q4_K_M)`);
    }
    if (parts.slice(2).some((p) => p !== "")) {
      fail(`a quantization tag (:${quant}) chooses the file itself: give no path after it`);
    }
  }
  let name = nameAndRevision;
  let revision: string | undefined;
  const at = nameAndRevision.indexOf("@");
  if (at >= 0) {
    name = nameAndRevision.slice(0, at);
    const raw = nameAndRevision.slice(at + 1);
    if (raw === "") fail('the revision after "@" is empty');
    try {
      revision = decodeURIComponent(raw);
    } catch {
      fail(`the revision "${raw}" is not valid percent-encoding`);
    }
    const reason = unsafeRevisionReason(revision!);
    if (reason !== undefined) {
      fail(`the revision ${quoteName(revision!)} is not allowed: ${reason}`);
    }
  }
  if (!NAME_PATTERN.test(org)) fail(`"${org}" is not a valid owner name`);
  if (!NAME_PATTERN.test(name)) fail(`"${name}" is not a valid repository name`);
  const pathParts = parts.slice(2);
  while (pathParts.length > 0 && pathParts[pathParts.length - 1] === "") pathParts.pop();
  let path: string | undefined;
  if (pathParts.length > 0) {
    // A path must stay inside the repository (and later inside the cache).
    const reason = unsafePathReason(pathParts.join("/"));
    if (reason !== undefined) {
      fail(`the path ${quoteName(pathParts.join("/"))} is not a plain relative path: ${reason}`);
    }
    path = pathParts.join("/");
  }
  return { repoId: `${org}/${name}`, revision, path, ...(quant === undefined ? {} : { quant }) };
}

/**
 * Write a reference back as text.
 *
 * @param ref The reference.
 * @returns `hf://org/name[@revision][/path]`.
 */
export function formatHubRef(ref: HubRef): string {
  const revision = ref.revision === undefined ? "" : `@${encodeURIComponent(ref.revision)}`;
  const path = ref.path === undefined ? "" : `/${ref.path}`;
  const quant = ref.quant === undefined ? "" : `:${ref.quant}`;
  return `${HUB_SCHEME}${ref.repoId}${revision}${quant}${path}`;
}
