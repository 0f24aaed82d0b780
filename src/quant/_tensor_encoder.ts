// This module is browser compatible.

/**
 * Internal: an incremental encoder of f32 values into one target dtype's
 * payload. Accepts batches of any length, carries partial blocks between them,
 * pads K-quant rows to whole super-blocks (APR_V2.md §5) and zero-fills
 * APR_Q4's last block.
 *
 * @module
 */

import { DTYPES, elementCount } from "../dtype.ts";
import type { DType } from "../dtype.ts";
import { LITTLE_ENDIAN } from "./_bytes.ts";
import { encodeF16 } from "./f16.ts";
import { encodeBf16 } from "./bf16.ts";
import { encodeAprQ8 } from "./apr_q8.ts";
import { encodeAprQ4 } from "./apr_q4.ts";
import { encodeQ4K } from "./q4_k.ts";
import { encodeQ6K } from "./q6_k.ts";

/** Dtypes {@linkcode TensorEncoder} can produce. */
export type EncodeTarget = "F32" | "F16" | "BF16" | "APR_Q8" | "APR_Q4" | "Q4_K" | "Q6_K";

/** True when `dtype` is an {@linkcode EncodeTarget}. */
export function isEncodeTarget(dtype: DType): dtype is EncodeTarget {
  return dtype === "F32" || dtype === "F16" || dtype === "BF16" || dtype === "APR_Q8" ||
    dtype === "APR_Q4" || dtype === "Q4_K" || dtype === "Q6_K";
}

/** Default upper bound on values encoded per emitted chunk. */
const MAX_BATCH_VALUES = 1 << 20;

type BlockFn = (values: Float32Array, out?: Uint8Array) => Uint8Array;

/** Incremental f32 → payload encoder for one tensor. */
export class TensorEncoder {
  #target: EncodeTarget;
  #scale: number;
  #prefixDone: boolean;
  // Block targets.
  #blockFn: BlockFn | undefined;
  #blockElements = 1;
  #buf: Float32Array | undefined;
  #bufLen = 0;
  #cols = Infinity;
  #colPos = 0;

  /**
   * @param target The payload dtype.
   * @param shape The tensor's shape (K-quant rows are its last dimension).
   * @param scale APR_Q8's tensor scale (required for APR_Q8).
   */
  constructor(target: EncodeTarget, shape: readonly number[], scale = 1) {
    this.#target = target;
    this.#scale = scale;
    const n = elementCount(shape);
    this.#prefixDone = target !== "APR_Q8" || n === 0;
    if (target === "APR_Q4" || target === "Q4_K" || target === "Q6_K") {
      this.#blockFn = target === "APR_Q4" ? encodeAprQ4 : target === "Q4_K" ? encodeQ4K : encodeQ6K;
      this.#blockElements = DTYPES[target].blockElements;
      this.#buf = new Float32Array(this.#blockElements);
      if (target !== "APR_Q4" && n > 0) {
        this.#cols = shape.length === 0 ? 1 : shape[shape.length - 1]!;
      }
    }
  }

  /** Encode a batch of values; `emit` receives payload chunks. */
  push(values: Float32Array, emit: (bytes: Uint8Array) => void): void {
    if (!this.#prefixDone) {
      const p = new Uint8Array(4);
      new DataView(p.buffer).setFloat32(0, this.#scale, true);
      emit(p);
      this.#prefixDone = true;
    }
    if (this.#blockFn === undefined) {
      for (let off = 0; off < values.length; off += MAX_BATCH_VALUES) {
        const part = values.subarray(off, Math.min(values.length, off + MAX_BATCH_VALUES));
        emit(this.#elementwise(part));
      }
      return;
    }
    this.#pushBlocks(values, emit);
  }

  /** Flush the last partial block (zero-filled). */
  finish(emit: (bytes: Uint8Array) => void): void {
    if (!this.#prefixDone) this.push(new Float32Array(0), emit);
    if (this.#blockFn !== undefined && this.#bufLen > 0) {
      this.#buf!.fill(0, this.#bufLen);
      emit(this.#blockFn(this.#buf!));
      this.#bufLen = 0;
    }
  }

  #elementwise(v: Float32Array): Uint8Array {
    switch (this.#target) {
      case "F16":
        return encodeF16(v);
      case "BF16":
        return encodeBf16(v);
      case "APR_Q8":
        return encodeAprQ8(v, this.#scale);
      default: {
        const out = new Uint8Array(v.length * 4);
        if (LITTLE_ENDIAN) {
          out.set(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
        } else {
          const dv = new DataView(out.buffer);
          for (let i = 0; i < v.length; i++) dv.setFloat32(4 * i, v[i]!, true);
        }
        return out;
      }
    }
  }

  #pushBlocks(values: Float32Array, emit: (bytes: Uint8Array) => void): void {
    const be = this.#blockElements;
    const fn = this.#blockFn!;
    const buf = this.#buf!;
    const len = values.length;
    let off = 0;
    while (off < len) {
      const rowLeft = this.#cols - this.#colPos;
      if (this.#bufLen === 0) {
        // Whole blocks straight from the batch, never crossing a row end.
        let k = Math.floor(Math.min(len - off, rowLeft) / be);
        if (k > 0) {
          k = Math.min(k, Math.floor(MAX_BATCH_VALUES / be));
          emit(fn(values.subarray(off, off + k * be)));
          off += k * be;
          this.#advance(k * be);
          continue;
        }
      }
      const take = Math.min(be - this.#bufLen, len - off, rowLeft);
      buf.set(values.subarray(off, off + take), this.#bufLen);
      this.#bufLen += take;
      off += take;
      if (this.#advance(take)) {
        // Row end: pad the row's last block with zeros (APR_V2.md §5).
        buf.fill(0, this.#bufLen);
        this.#bufLen = be;
      }
      if (this.#bufLen === be) {
        emit(fn(buf));
        this.#bufLen = 0;
      }
    }
  }

  /** Move along the row; true when the row just ended. */
  #advance(n: number): boolean {
    this.#colPos += n;
    if (this.#colPos === this.#cols) {
      this.#colPos = 0;
      return true;
    }
    return false;
  }
}
