// This module is browser compatible.

/**
 * Internal: APR_Q8's first pass (the tensor's absmax) on the raw bits of an
 * F32, F16 or BF16 payload, without decoding it. For IEEE floats of one
 * width, |x| orders like the integer `bits & ~sign` (NaN excepted, which
 * `f32::max` ignores as {@linkcode aprQ8Absmax} does), so the pass is one
 * integer max per value instead of a decode, an abs and a float compare; the
 * largest pattern is decoded once at the end. The result is the same number
 * {@linkcode aprQ8Absmax} gives on the decoded values.
 *
 * @module
 */

import type { DType } from "../dtype.ts";
import { LITTLE_ENDIAN } from "./_bytes.ts";
import { WholeUnits } from "../io/whole_units.ts";

interface Width {
  readonly bytes: 2 | 4;
  /** Bits of the magnitude (sign cleared). */
  readonly mask: number;
  /** Largest magnitude that is not NaN (infinity). */
  readonly inf: number;
  readonly decode: (bits: number) => number;
}

const F32_VIEW = new Float32Array(1);
const U32_VIEW = new Uint32Array(F32_VIEW.buffer);

function f32FromBits(bits: number): number {
  U32_VIEW[0] = bits;
  return F32_VIEW[0]!;
}

function f16FromBits(bits: number): number {
  const exp = (bits >> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return frac * 2 ** -24;
  if (exp === 0x1f) return frac === 0 ? Infinity : NaN;
  return (1 + frac / 1024) * 2 ** (exp - 15);
}

const WIDTHS: Partial<Record<DType, Width>> = {
  F32: { bytes: 4, mask: 0x7fffffff, inf: 0x7f800000, decode: f32FromBits },
  F16: { bytes: 2, mask: 0x7fff, inf: 0x7c00, decode: f16FromBits },
  BF16: { bytes: 2, mask: 0x7fff, inf: 0x7f80, decode: (b) => f32FromBits(b << 16) },
};

/** Folds the absmax of a float payload from its raw bytes, chunk by chunk. */
export class RawAbsmax {
  #w: Width;
  #max = 0;
  #units: WholeUnits<Uint8Array>;
  #scratch: Uint8Array | undefined;

  /**
   * A pass for `dtype`, or `undefined` when it is not F32/F16/BF16 (or the
   * machine is big-endian): decode the values then.
   */
  static for(dtype: DType): RawAbsmax | undefined {
    const w = WIDTHS[dtype];
    return w === undefined || !LITTLE_ENDIAN ? undefined : new RawAbsmax(w);
  }

  private constructor(w: Width) {
    this.#w = w;
    this.#units = new WholeUnits(new Uint8Array(w.bytes));
  }

  /** Fold one payload chunk (any length, any alignment). */
  push(chunk: Uint8Array): void {
    for (const body of this.#units.take(chunk)) {
      if (body.byteOffset % this.#w.bytes === 0) {
        this.#fold(body);
        continue;
      }
      // Typed views need aligned offsets: copy the rare misaligned chunk.
      if (this.#scratch === undefined || this.#scratch.length < body.length) {
        this.#scratch = new Uint8Array(body.length);
      }
      this.#scratch.set(body);
      this.#fold(this.#scratch.subarray(0, body.length));
    }
  }

  #fold(bytes: Uint8Array): void {
    const { mask, inf } = this.#w;
    const n = bytes.length / this.#w.bytes;
    const words = this.#w.bytes === 2
      ? new Uint16Array(bytes.buffer, bytes.byteOffset, n)
      : new Uint32Array(bytes.buffer, bytes.byteOffset, n);
    let m = this.#max;
    for (let i = 0; i < n; i++) {
      const a = (words[i]! & mask) >>> 0;
      if (a > m && a <= inf) m = a;
    }
    this.#max = m;
  }

  /**
   * The absmax of every value pushed.
   *
   * @throws {RangeError} When a value was cut short.
   */
  result(): number {
    if (this.#units.partial) throw new RangeError("payload ended inside a value");
    return this.#w.decode(this.#max);
  }
}
