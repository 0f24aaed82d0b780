/**
 * Incremental SHA-256: `node:crypto` in Deno and Node (native speed), a
 * plain JavaScript implementation in a browser (Web Crypto has no
 * incremental digest, and a model is never held whole to hash it at once).
 *
 * This module is browser compatible.
 *
 * @module
 */

import { HAS_NODE_MODULES } from "./which.ts";

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

const K = new Uint32Array([
  0x428a2f98,
  0x71374491,
  0xb5c0fbcf,
  0xe9b5dba5,
  0x3956c25b,
  0x59f111f1,
  0x923f82a4,
  0xab1c5ed5,
  0xd807aa98,
  0x12835b01,
  0x243185be,
  0x550c7dc3,
  0x72be5d74,
  0x80deb1fe,
  0x9bdc06a7,
  0xc19bf174,
  0xe49b69c1,
  0xefbe4786,
  0x0fc19dc6,
  0x240ca1cc,
  0x2de92c6f,
  0x4a7484aa,
  0x5cb0a9dc,
  0x76f988da,
  0x983e5152,
  0xa831c66d,
  0xb00327c8,
  0xbf597fc7,
  0xc6e00bf3,
  0xd5a79147,
  0x06ca6351,
  0x14292967,
  0x27b70a85,
  0x2e1b2138,
  0x4d2c6dfc,
  0x53380d13,
  0x650a7354,
  0x766a0abb,
  0x81c2c92e,
  0x92722c85,
  0xa2bfe8a1,
  0xa81a664b,
  0xc24b8b70,
  0xc76c51a3,
  0xd192e819,
  0xd6990624,
  0xf40e3585,
  0x106aa070,
  0x19a4c116,
  0x1e376c08,
  0x2748774c,
  0x34b0bcb5,
  0x391c0cb3,
  0x4ed8aa4a,
  0x5b9cca4f,
  0x682e6ff3,
  0x748f82ee,
  0x78a5636f,
  0x84c87814,
  0x8cc70208,
  0x90befffa,
  0xa4506ceb,
  0xbef9a3f7,
  0xc67178f2,
]);

/** FIPS 180-4 SHA-256 over 64-byte blocks, buffering at most one block. */
export class PlainSha256 implements Sha256 {
  #state = new Uint32Array([
    0x6a09e667,
    0xbb67ae85,
    0x3c6ef372,
    0xa54ff53a,
    0x510e527f,
    0x9b05688c,
    0x1f83d9ab,
    0x5be0cd19,
  ]);
  #block = new Uint8Array(64);
  #filled = 0;
  #length = 0;
  #w = new Uint32Array(64);
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
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    this.#length += bytes.length;
    let i = 0;
    if (this.#filled > 0) {
      const take = Math.min(64 - this.#filled, bytes.length);
      this.#block.set(bytes.subarray(0, take), this.#filled);
      this.#filled += take;
      i = take;
      if (this.#filled < 64) return this;
      this.#compress(this.#block, 0);
      this.#filled = 0;
    }
    for (; i + 64 <= bytes.length; i += 64) this.#compress(bytes, i);
    this.#block.set(bytes.subarray(i), 0);
    this.#filled = bytes.length - i;
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
    const bits = this.#length * 8;
    const pad = new Uint8Array((this.#filled < 56 ? 56 : 120) - this.#filled + 8);
    pad[0] = 0x80;
    const view = new DataView(pad.buffer);
    view.setUint32(pad.length - 8, Math.floor(bits / 0x100000000));
    view.setUint32(pad.length - 4, bits >>> 0);
    this.update(pad);
    this.#done = true;
    return [...this.#state].map((v) => v.toString(16).padStart(8, "0")).join("");
  }

  #compress(bytes: Uint8Array, at: number): void {
    const w = this.#w;
    for (let t = 0; t < 16; t++) {
      const j = at + t * 4;
      w[t] = (bytes[j]! << 24) | (bytes[j + 1]! << 16) | (bytes[j + 2]! << 8) | bytes[j + 3]!;
    }
    for (let t = 16; t < 64; t++) {
      const a = w[t - 15]!, b = w[t - 2]!;
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[t] = (w[t - 16]! + s0 + w[t - 7]! + s1) | 0;
    }
    const s = this.#state;
    let a = s[0]!, b = s[1]!, c = s[2]!, d = s[3]!, e = s[4]!, f = s[5]!, g = s[6]!, h = s[7]!;
    for (let t = 0; t < 64; t++) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + s1 + ((e & f) ^ (~e & g)) + K[t]! + w[t]!) | 0;
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    s[0] = s[0]! + a;
    s[1] = s[1]! + b;
    s[2] = s[2]! + c;
    s[3] = s[3]! + d;
    s[4] = s[4]! + e;
    s[5] = s[5]! + f;
    s[6] = s[6]! + g;
    s[7] = s[7]! + h;
  }
}
