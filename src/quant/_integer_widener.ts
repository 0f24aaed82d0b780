// This module is browser compatible.

/**
 * Internal: byte-level conversion of integer payloads APR cannot hold into
 * the type that holds every value (BOOL → U8 as 0/1, I16/U16 → I32,
 * U32/U64 → I64), carrying partial elements between chunks of any size.
 *
 * @module
 */

import type { DType } from "../dtype.ts";
import { DTYPES } from "../dtype.ts";
import type { TensorInfo } from "../tensor.ts";
import { WholeUnits } from "../io/whole_units.ts";

type Convert = (src: DataView, i: number, dst: DataView, j: number) => void;

const I64_MAX = (1n << 63n) - 1n;

/** Incremental integer widener for one tensor. */
export class IntegerWidener {
  #name: string;
  #win: number;
  #wout: number;
  #convert: Convert;
  #units: WholeUnits<Uint8Array>;
  #element = 0;

  constructor(source: TensorInfo, target: DType) {
    this.#name = source.name;
    this.#win = DTYPES[source.dtype].blockBytes;
    this.#wout = DTYPES[target].blockBytes;
    this.#units = new WholeUnits(new Uint8Array(this.#win));
    const key = `${source.dtype}>${target}`;
    const table: Record<string, Convert> = {
      "BOOL>U8": (s, i, d, j) => d.setUint8(j, s.getUint8(i) === 0 ? 0 : 1),
      "I16>I32": (s, i, d, j) => d.setInt32(j, s.getInt16(i, true), true),
      "U16>I32": (s, i, d, j) => d.setInt32(j, s.getUint16(i, true), true),
      "U32>I64": (s, i, d, j) => d.setBigInt64(j, BigInt(s.getUint32(i, true)), true),
      "U64>I64": (s, i, d, j) => {
        const v = s.getBigUint64(i, true);
        if (v > I64_MAX) {
          throw new RangeError(
            `Cannot store tensor "${this.#name}" as I64: value ${v} at element ${
              this.#element + (i / 8)
            } exceeds 2^63 - 1`,
          );
        }
        d.setBigInt64(j, v, true);
      },
    };
    const fn = table[key];
    if (fn === undefined) {
      throw new TypeError(
        `Cannot convert tensor "${source.name}" from ${source.dtype} to ${target}`,
      );
    }
    this.#convert = fn;
  }

  /** Convert one chunk; `emit` receives the converted bytes. */
  push(chunk: Uint8Array, emit: (bytes: Uint8Array) => void): void {
    for (const run of this.#units.take(chunk)) emit(this.#run(run, run.length / this.#win));
  }

  /** Check no partial element is left. */
  finish(): void {
    if (this.#units.partial) {
      throw new RangeError(`Cannot convert tensor "${this.#name}": payload ends inside an element`);
    }
  }

  #run(bytes: Uint8Array, n: number): Uint8Array {
    const out = new Uint8Array(n * this.#wout);
    const s = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const d = new DataView(out.buffer);
    for (let k = 0; k < n; k++) this.#convert(s, k * this.#win, d, k * this.#wout);
    this.#element += n;
    return out;
  }
}
