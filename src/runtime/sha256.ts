/**
 * Incremental SHA-256: `node:crypto` in Deno and Node (native speed), the
 * resumable {@linkcode Sha256State} (WebAssembly, TypeScript where that cannot
 * run) in a browser (Web Crypto has no incremental digest, and a model is
 * never held whole to hash it at once).
 *
 * This module is browser compatible.
 *
 * @module
 */

import { HAS_NODE_MODULES } from "./which.ts";
import { Sha256State } from "./sha256_state.ts";

/** An incremental SHA-256 hash. */
export interface Sha256 {
  /** Add bytes (strings as UTF-8). Returns itself, for chaining. */
  update(data: Uint8Array | string): Sha256;
  /** The digest as lowercase hex. The hash cannot be updated after. */
  digest(encoding: "hex"): string;
}

const nodeCrypto = HAS_NODE_MODULES ? await import("node:crypto") : undefined;

/**
 * Start a SHA-256 hash.
 *
 * @returns The hash to feed.
 */
export function createSha256(): Sha256 {
  return nodeCrypto ? nodeCrypto.createHash("sha256") as Sha256 : new PlainSha256();
}

/**
 * Start a SHA-1 hash (the Hub's git blob ids), where `node:crypto` exists:
 * only the Hugging Face cache, which needs a file system, uses it.
 *
 * @returns The hash to feed.
 * @throws {TypeError} In a browser.
 */
export function createSha1(): Sha256 {
  if (!nodeCrypto) throw new TypeError("Cannot hash with SHA-1 here: no node:crypto");
  return nodeCrypto.createHash("sha1") as Sha256;
}

/**
 * FIPS 180-4 SHA-256 over 64-byte blocks, buffering at most one block: the
 * resumable {@linkcode Sha256State} behind the {@linkcode Sha256} interface.
 */
export class PlainSha256 implements Sha256 {
  #state = new Sha256State();
  #done = false;

  /**
   * Add bytes.
   *
   * @param data Bytes, or a string hashed as UTF-8.
   * @returns This hash.
   * @throws {TypeError} After {@linkcode PlainSha256.digest}.
   */
  update(data: Uint8Array | string): Sha256 {
    if (this.#done) throw new TypeError("Cannot update a SHA-256 hash after its digest");
    this.#state.update(typeof data === "string" ? new TextEncoder().encode(data) : data);
    return this;
  }

  /**
   * Finish.
   *
   * @param _encoding Only "hex".
   * @returns The digest as lowercase hex.
   * @throws {TypeError} When called twice.
   */
  digest(_encoding: "hex"): string {
    if (this.#done) throw new TypeError("SHA-256 digest already taken");
    this.#done = true;
    return this.#state.digestHex();
  }
}
