// This module is browser compatible.

/**
 * Internal: a BF16 payload straight to a 32-value block type (Q8_0, Q4_0,
 * Q4_1, Q5_0, Q5_1) or Q1_0 (128 values) in the WebAssembly module, which widens the values to
 * f32 itself. On this path TensorDecoder's f32 pass, TensorEncoder's copy of
 * it into the module and a fresh output per batch were most of the work
 * besides the encoding (docs/BENCHMARKS.md, issue 33's speed figures); the
 * bytes are the same.
 *
 * @module
 */

import { elementCount } from "../dtype.ts";
import type { TensorInfo } from "../tensor.ts";
import { kernelBackend } from "./kernels.ts";
import { type LegacyTarget, wasmKernels } from "./wasm/kernels.ts";
import { takeBuffer } from "../io/byte_source.ts";
import type { EmitBytes } from "./_tensor_encoder.ts";

const BLOCK_BYTES: Readonly<Record<LegacyTarget, number>> = {
  Q8_0: 34,
  Q4_0: 18,
  Q4_1: 20,
  Q5_0: 22,
  Q5_1: 24,
  Q1_0: 18,
};

/** Values of one block of `target`. */
const blockValues = (target: LegacyTarget): number => target === "Q1_0" ? 128 : 32;

/** Incremental BF16 payload → legacy block payload encoder for one tensor. */
export class Bf16BlockEncoder {
  #source: TensorInfo;
  #target: LegacyTarget;
  #encode: (target: LegacyTarget, bytes: Uint8Array, out: Uint8Array) => void;
  #blockBytes: number;
  #maxBlocks: number;
  // BF16 bytes of one block.
  #inBlock: number;
  #carry: Uint8Array;
  #carryLen = 0;
  #consumed = 0;

  /**
   * The encoder for `source` → `target`, or `undefined` when this path does
   * not apply: not BF16 to a legacy type, rows that are not whole blocks (the
   * generic path pads them), or no WebAssembly kernels in use.
   *
   * @param maxElements Largest batch of values encoded into one output piece.
   */
  static for(
    source: TensorInfo,
    target: string,
    maxElements: number,
  ): Bf16BlockEncoder | undefined {
    if (source.dtype !== "BF16" || !Object.hasOwn(BLOCK_BYTES, target)) return undefined;
    const shape = source.shape;
    const cols = shape.length === 0 ? 1 : shape[shape.length - 1]!;
    const values = blockValues(target as LegacyTarget);
    if (cols % values !== 0 || source.byteLength !== 2 * elementCount(shape)) return undefined;
    const wasm = kernelBackend() === "wasm" ? wasmKernels() : undefined;
    if (wasm === undefined) return undefined;
    return new Bf16BlockEncoder(source, target as LegacyTarget, wasm.encodeFromBf16, maxElements);
  }

  private constructor(
    source: TensorInfo,
    target: LegacyTarget,
    encode: (target: LegacyTarget, bytes: Uint8Array, out: Uint8Array) => void,
    maxElements: number,
  ) {
    this.#source = source;
    this.#target = target;
    this.#encode = encode;
    this.#blockBytes = BLOCK_BYTES[target];
    const values = blockValues(target);
    this.#inBlock = 2 * values;
    this.#carry = new Uint8Array(this.#inBlock);
    this.#maxBlocks = Math.max(1, Math.floor(maxElements / values));
  }

  /** Feed one payload chunk; `emit` receives encoded pieces (recycled memory, all written). */
  push(chunk: Uint8Array, emit: EmitBytes): void {
    this.#consumed += chunk.length;
    if (this.#consumed > this.#source.byteLength) {
      throw new RangeError(
        `Cannot decode tensor "${this.#source.name}": payload exceeds its ${this.#source.byteLength} bytes`,
      );
    }
    let off = 0;
    if (this.#carryLen > 0) {
      const inBlock = this.#inBlock;
      const take = Math.min(inBlock - this.#carryLen, chunk.length);
      this.#carry.set(chunk.subarray(0, take), this.#carryLen);
      this.#carryLen += take;
      off = take;
      if (this.#carryLen < inBlock) return;
      this.#blocks(this.#carry, emit);
      this.#carryLen = 0;
    }
    const inBlock = this.#inBlock;
    let whole = Math.floor((chunk.length - off) / inBlock);
    while (whole > 0) {
      const k = Math.min(whole, this.#maxBlocks);
      this.#blocks(chunk.subarray(off, off + k * inBlock), emit);
      off += k * inBlock;
      whole -= k;
    }
    if (off < chunk.length) {
      this.#carry.set(chunk.subarray(off), 0);
      this.#carryLen = chunk.length - off;
    }
  }

  /** Check that the payload was complete. */
  finish(): void {
    if (this.#consumed !== this.#source.byteLength || this.#carryLen !== 0) {
      throw new RangeError(
        `Cannot decode tensor "${this.#source.name}": payload ended after ${this.#consumed} of ${this.#source.byteLength} bytes`,
      );
    }
  }

  #blocks(bytes: Uint8Array, emit: EmitBytes): void {
    const out = new Uint8Array(takeBuffer((bytes.length / this.#inBlock) * this.#blockBytes));
    this.#encode(this.#target, bytes, out);
    emit(out);
  }
}
