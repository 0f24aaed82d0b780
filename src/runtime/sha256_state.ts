// This module is browser compatible.

/**
 * SHA-256 (FIPS 180-4) whose running state can be saved and restored, so a
 * check interrupted halfway continues where it stopped in a later process.
 * `node:crypto` and Web Crypto hash faster but cannot export their state;
 * this is used only where a check must survive an interruption (the content
 * digests of a `--no-cache` import that `--resume` continues).
 *
 * @module
 */

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

const INITIAL = [
  0x6a09e667,
  0xbb67ae85,
  0x3c6ef372,
  0xa54ff53a,
  0x510e527f,
  0x9b05688c,
  0x1f83d9ab,
  0x5be0cd19,
];

/** A saved {@linkcode Sha256State}: plain JSON. */
export interface Sha256Snapshot {
  /** The eight chaining words. */
  readonly words: readonly number[];
  /** Bytes hashed so far. */
  readonly length: number;
  /** The bytes of the unfinished 64-byte block, as lowercase hex. */
  readonly pending: string;
}

/**
 * A running SHA-256 that can be saved and restored.
 *
 * @example Usage
 * ```ts
 * import { Sha256State } from "./sha256_state.ts";
 * const a = new Sha256State().update(new TextEncoder().encode("ab"));
 * const b = Sha256State.restore(a.save()).update(new TextEncoder().encode("c"));
 * console.assert(
 *   b.digestHex() === "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
 * );
 * ```
 */
export class Sha256State {
  #h = new Uint32Array(INITIAL);
  #block = new Uint8Array(64);
  #filled = 0;
  #length = 0;
  #w = new Uint32Array(64);

  /**
   * Continue from a saved state.
   *
   * @param snapshot What {@linkcode Sha256State.save} returned.
   * @returns The state.
   * @throws {TypeError} When the snapshot is malformed.
   */
  static restore(snapshot: Sha256Snapshot): Sha256State {
    const { words, length, pending } = snapshot ?? {};
    const valid = Array.isArray(words) && words.length === 8 &&
      words.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffffffff) &&
      Number.isSafeInteger(length) && length >= 0 && typeof pending === "string" &&
      /^(?:[0-9a-f]{2})*$/.test(pending) && pending.length / 2 === length % 64;
    if (!valid) throw new TypeError("Cannot restore a SHA-256 state: it is malformed");
    const state = new Sha256State();
    state.#h.set(words);
    state.#length = length;
    state.#filled = pending.length / 2;
    for (let i = 0; i < state.#filled; i++) {
      state.#block[i] = parseInt(pending.slice(2 * i, 2 * i + 2), 16);
    }
    return state;
  }

  /** Bytes hashed so far. */
  get length(): number {
    return this.#length;
  }

  /**
   * Hash more bytes.
   *
   * @param bytes The bytes.
   * @returns This state.
   */
  update(bytes: Uint8Array): this {
    let at = 0;
    this.#length += bytes.length;
    if (this.#filled > 0) {
      const take = Math.min(64 - this.#filled, bytes.length);
      this.#block.set(bytes.subarray(0, take), this.#filled);
      this.#filled += take;
      at = take;
      if (this.#filled < 64) return this;
      this.#compress(this.#block, 0);
      this.#filled = 0;
    }
    for (; at + 64 <= bytes.length; at += 64) this.#compress(bytes, at);
    if (at < bytes.length) {
      this.#block.set(bytes.subarray(at), 0);
      this.#filled = bytes.length - at;
    }
    return this;
  }

  /**
   * The state as plain JSON, to restore later.
   *
   * @returns The snapshot.
   */
  save(): Sha256Snapshot {
    let pending = "";
    for (let i = 0; i < this.#filled; i++) pending += this.#block[i]!.toString(16).padStart(2, "0");
    return { words: [...this.#h], length: this.#length, pending };
  }

  /**
   * The digest of everything hashed (the state itself is left as it was).
   *
   * @returns 64 lowercase hex digits.
   */
  digestHex(): string {
    const copy = Sha256State.restore(this.save());
    const bits = copy.#length * 8;
    const tail = new Uint8Array(((copy.#filled + 9 + 63) & ~63) - copy.#filled);
    tail[0] = 0x80;
    const view = new DataView(tail.buffer);
    view.setUint32(tail.length - 8, Math.floor(bits / 2 ** 32));
    view.setUint32(tail.length - 4, bits >>> 0);
    copy.update(tail);
    return [...copy.#h].map((w) => w.toString(16).padStart(8, "0")).join("");
  }

  #compress(bytes: Uint8Array, at: number): void {
    const w = this.#w;
    for (let i = 0; i < 16; i++) {
      const j = at + 4 * i;
      w[i] = (bytes[j]! << 24) | (bytes[j + 1]! << 16) | (bytes[j + 2]! << 8) | bytes[j + 3]!;
    }
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15]!, b = w[i - 2]!;
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) | 0;
    }
    const h = this.#h;
    let a = h[0]!, b = h[1]!, c = h[2]!, d = h[3]!, e = h[4]!, f = h[5]!, g = h[6]!, k = h[7]!;
    for (let i = 0; i < 64; i++) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (k + s1 + ((e & f) ^ (~e & g)) + K[i]! + w[i]!) | 0;
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      k = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0] = (h[0]! + a) | 0;
    h[1] = (h[1]! + b) | 0;
    h[2] = (h[2]! + c) | 0;
    h[3] = (h[3]! + d) | 0;
    h[4] = (h[4]! + e) | 0;
    h[5] = (h[5]! + f) | 0;
    h[6] = (h[6]! + g) | 0;
    h[7] = (h[7]! + k) | 0;
  }
}
