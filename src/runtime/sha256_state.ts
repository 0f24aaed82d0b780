// This module is browser compatible.

/**
 * SHA-256 (FIPS 180-4) whose running state can be saved and restored, so a
 * check interrupted halfway continues where it stopped in a later process.
 * `node:crypto` and Web Crypto cannot export their state; this is used where a
 * check must survive an interruption (the content digests of a `--no-cache`
 * import that `--resume` continues) and in a browser (no incremental digest
 * there).
 *
 * The state and its saved form live here; the compression function (the 64
 * rounds, over every whole 64-byte block of an update at once) runs as
 * WebAssembly (`assembly/sha256.ts`, embedded by `deno task wasm`), several
 * times faster than TypeScript. The TypeScript compression below stays as the
 * fallback where WebAssembly cannot run (no `WebAssembly`, a
 * Content-Security-Policy without `wasm-unsafe-eval`, a big-endian host);
 * both give the same state, so a snapshot saved by one restores in the other.
 *
 * @example Usage
 * ```ts
 * import { setSha256Backend, sha256Backend } from "./sha256_state.ts";
 * setSha256Backend("typescript");
 * console.assert(sha256Backend() === "typescript");
 * setSha256Backend("wasm"); // back to the default
 * ```
 *
 * @module
 */

import { SHA256_WASM_BASE64 } from "./_sha256_wasm.ts";
import { decodeBase64 } from "./_base64.ts";

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

/** Hash `blocks` whole 64-byte blocks of `bytes` from `at` into the chaining words `h`. */
type Compress = (h: Uint32Array, bytes: Uint8Array, at: number, blocks: number) => void;

/** An implementation of the compression function. */
export type Sha256Backend = "wasm" | "typescript";

let preferred: Sha256Backend = "wasm";
/** The WebAssembly compression: `null` where it cannot run, `undefined` before the first use. */
let wasm: Compress | null | undefined;

/**
 * Choose the compression function for this thread (for tests and benchmarks:
 * both give the same digests). `"wasm"` falls back to TypeScript where
 * WebAssembly cannot run.
 *
 * @param backend `"wasm"` (default) or `"typescript"`.
 * @throws {TypeError} For another value.
 */
export function setSha256Backend(backend: Sha256Backend): void {
  if (backend !== "wasm" && backend !== "typescript") {
    throw new TypeError(`Unknown SHA-256 backend "${backend}": expected wasm or typescript`);
  }
  preferred = backend;
}

/**
 * The compression in use: `"wasm"` when chosen and WebAssembly runs here,
 * `"typescript"` otherwise. Never throws.
 *
 * @returns The effective backend.
 */
export function sha256Backend(): Sha256Backend {
  return compressor() === compressTs ? "typescript" : "wasm";
}

function compressor(): Compress {
  if (preferred === "typescript") return compressTs;
  if (wasm === undefined) wasm = instantiate();
  return wasm ?? compressTs;
}

/**
 * Bytes copied into the module's memory per call: large enough that the call
 * and the copy cost nothing next to the rounds, small enough to stay a few
 * pages of memory whatever an update's size.
 */
const SLICE = 256 * 1024;

interface Exports {
  memory: WebAssembly.Memory;
  statePtr(): number;
  inputPtr(): number;
  compress(blocks: number): void;
}

function instantiate(): Compress | null {
  // The chaining words are exchanged through a Uint32Array view, which has
  // the host's byte order; wasm's is little-endian.
  const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
  if (!littleEndian || typeof WebAssembly !== "object") return null;
  let exports: Exports;
  try {
    // Synchronous: the module is under 1 KiB.
    const module = new WebAssembly.Module(decodeBase64(SHA256_WASM_BASE64));
    exports = new WebAssembly.Instance(module, {}).exports as unknown as Exports;
  } catch {
    return null; // CSP without wasm-unsafe-eval: the TypeScript compression.
  }
  const input = exports.inputPtr();
  const have = exports.memory.buffer.byteLength;
  if (input + SLICE > have) exports.memory.grow(Math.ceil((input + SLICE - have) / 65536));
  // The memory never grows after this, so the views stay valid.
  const words = new Uint32Array(exports.memory.buffer, exports.statePtr(), 8);
  const data = new Uint8Array(exports.memory.buffer, input, SLICE);
  return (h, bytes, at, blocks) => {
    words.set(h);
    for (let done = 0; done < blocks;) {
      const k = Math.min(SLICE / 64, blocks - done);
      data.set(bytes.subarray(at + 64 * done, at + 64 * (done + k)));
      exports.compress(k);
      done += k;
    }
    h.set(words);
  };
}

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
      compressor()(this.#h, this.#block, 0, 1);
      this.#filled = 0;
    }
    const blocks = Math.floor((bytes.length - at) / 64);
    if (blocks > 0) compressor()(this.#h, bytes, at, blocks);
    at += 64 * blocks;
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
}

/** The message schedule of {@linkcode compressTs} (one block at a time, one thread). */
const W = new Uint32Array(64);

/** FIPS 180-4 §6.2.2 in TypeScript: the fallback (and the reference the wasm is tested against). */
function compressTs(h: Uint32Array, bytes: Uint8Array, at: number, blocks: number): void {
  const w = W;
  const end = at + 64 * blocks;
  for (; at < end; at += 64) {
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
