/**
 * A permissive GGUF byte builder for tests: writes whatever it is told, so
 * malformed files (FORMATS.md §3 G1–G16) can be built in memory.
 *
 * @module
 */

import { BlobSource } from "../../../src/io/blob_source.ts";

/** Little-endian byte builder with no validation. */
export class RawGguf {
  #bytes: number[] = [];

  /** Current length. */
  get length(): number {
    return this.#bytes.length;
  }
  /** Append one byte. */
  u8(v: number): this {
    this.#bytes.push(v & 0xff);
    return this;
  }
  /** Append a u32. */
  u32(v: number): this {
    for (let i = 0; i < 4; i++) this.#bytes.push((v >>> (8 * i)) & 0xff);
    return this;
  }
  /** Append a u64. */
  u64(v: number | bigint): this {
    let b = BigInt.asUintN(64, BigInt(v));
    for (let i = 0; i < 8; i++) {
      this.#bytes.push(Number(b & 0xffn));
      b >>= 8n;
    }
    return this;
  }
  /** Append a f32. */
  f32(v: number): this {
    const a = new Uint8Array(new Float32Array([v]).buffer);
    this.#bytes.push(...a);
    return this;
  }
  /** Append raw bytes. */
  raw(bytes: ArrayLike<number>): this {
    for (let i = 0; i < bytes.length; i++) this.#bytes.push(bytes[i]!);
    return this;
  }
  /** Append a GGUF string (u64 length + UTF-8). */
  str(s: string): this {
    const b = new TextEncoder().encode(s);
    return this.u64(b.length).raw(b);
  }
  /** Append a KV pair holding a u32. */
  kvU32(key: string, v: number): this {
    return this.str(key).u32(4).u32(v);
  }
  /** Append a KV pair holding a string. */
  kvStr(key: string, v: string): this {
    return this.str(key).u32(8).str(v);
  }
  /** Append a tensor info. */
  tensor(name: string, ne: (number | bigint)[], type: number, offset: number | bigint): this {
    this.str(name).u32(ne.length);
    for (const d of ne) this.u64(d);
    return this.u32(type).u64(offset);
  }
  /** Zero-pad to a multiple of `alignment`. */
  pad(alignment = 32): this {
    while (this.#bytes.length % alignment !== 0) this.#bytes.push(0);
    return this;
  }
  /** Append `n` zero bytes. */
  zeros(n: number): this {
    for (let i = 0; i < n; i++) this.#bytes.push(0);
    return this;
  }
  /** The bytes so far. */
  bytes(): Uint8Array {
    return new Uint8Array(this.#bytes);
  }
}

/** Start a v3 file: magic, version, counts. */
export function rawHeader(
  tensorCount: number | bigint,
  kvCount: number | bigint,
  version = 3,
): RawGguf {
  return new RawGguf().raw([0x47, 0x47, 0x55, 0x46]).u32(version).u64(tensorCount).u64(kvCount);
}

/** Wrap bytes as a ByteSource named `name`. */
export function sourceOf(bytes: Uint8Array, name = "bad.gguf"): BlobSource {
  return new BlobSource(new Blob([bytes as Uint8Array<ArrayBuffer>]), name);
}
