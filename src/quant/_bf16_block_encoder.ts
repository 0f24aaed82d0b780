// This module is browser compatible.

/**
 * Internal: a BF16 payload straight to a block type in the WebAssembly
 * module, which widens the values to f32 itself: the 32-value types (Q8_0,
 * Q4_0, Q4_1, Q5_0, Q5_1), Q1_0 (128 values), the K-quants without
 * importance weights, whose jobs go to the encoder workers as BF16 bytes, and
 * F16 (`bf16_to_f16.ts`, llama-quantize's conversion: a whole F16 run in
 * half the CPU-seconds; docs/BENCHMARKS.md, "F16 and BF16 from BF16"). On
 * this path TensorDecoder's f32 pass, TensorEncoder's copy of the f32 values
 * into a job and the module's copy of them in (twice the bytes of BF16) were
 * most of the work besides the encoding (docs/BENCHMARKS.md, issue 33's speed
 * figures); the bytes are the same.
 *
 * @module
 */

import { DTYPES, elementCount } from "../dtype.ts";
import type { TensorInfo } from "../tensor.ts";
import { kernelBackend } from "./kernels.ts";
import { wasmKernels } from "./wasm/kernels.ts";
import { encodeBlocks, isBf16Target } from "./_block_encoders.ts";
import { encodeBf16InWasm } from "./_wasm_block_encoders.ts";
import type { EncoderPool } from "./_encoder_pool.ts";
import { markReleasable, takeBuffer, takeChunk } from "../io/byte_source.ts";
import { type EmitBytes, jobBlocks } from "./_tensor_encoder.ts";

/** Incremental BF16 payload → block payload encoder for one tensor. */
export class Bf16BlockEncoder {
  #source: TensorInfo;
  #target: string;
  #maxBlocks: number;
  // BF16 bytes of one block.
  #inBlock: number;
  #carry: Uint8Array;
  #carryLen = 0;
  #consumed = 0;
  // With a pool: the job being filled (BF16 bytes), and values sent so far.
  #pool: EncoderPool | undefined;
  #share: string | undefined;
  #job: Uint8Array | undefined;
  #jobLen = 0;
  #jobBytes = 0;
  #sent = 0;

  /**
   * The encoder for `source` → `target`, or `undefined` when this path does
   * not apply: not BF16 to a type encoded from BF16 (`isBf16Target`), rows
   * that are not whole blocks (the generic path pads them), or no WebAssembly
   * kernels in use.
   *
   * @param maxElements Largest batch of values encoded into one output piece in this thread.
   * @param pool Workers for the jobs (K-quants: `worthAWorker`); in-thread when absent.
   * @param share Names the tensor's values from their start, as for TensorEncoder.
   */
  static for(
    source: TensorInfo,
    target: string,
    maxElements: number,
    pool?: EncoderPool,
    share?: string,
  ): Bf16BlockEncoder | undefined {
    if (source.dtype !== "BF16" || !isBf16Target(target)) return undefined;
    const shape = source.shape;
    const n = elementCount(shape);
    const cols = shape.length === 0 ? 1 : shape[shape.length - 1]!;
    const values = DTYPES[target].blockElements;
    if (cols % values !== 0 || source.byteLength !== 2 * n) return undefined;
    if (kernelBackend() !== "wasm" || wasmKernels() === undefined) return undefined;
    return new Bf16BlockEncoder(source, target, maxElements, pool, share);
  }

  private constructor(
    source: TensorInfo,
    target: string,
    maxElements: number,
    pool: EncoderPool | undefined,
    share: string | undefined,
  ) {
    this.#source = source;
    this.#target = target;
    const values = DTYPES[target as keyof typeof DTYPES].blockElements;
    this.#inBlock = 2 * values;
    this.#carry = new Uint8Array(this.#inBlock);
    this.#maxBlocks = Math.max(1, Math.floor(maxElements / values));
    this.#pool = pool;
    this.#share = share;
    if (pool !== undefined) {
      // Jobs of as many bytes as TensorEncoder's f32 ones: twice the values.
      const blocks = elementCount(source.shape) / values;
      this.#jobBytes = jobBlocks(blocks, pool.size, 2) * this.#inBlock;
    }
  }

  /** Feed one payload chunk; `emit` receives encoded pieces (recycled memory, all written). */
  push(chunk: Uint8Array, emit: EmitBytes): void {
    this.#consumed += chunk.length;
    if (this.#consumed > this.#source.byteLength) {
      throw new RangeError(
        `Cannot decode tensor "${this.#source.name}": payload exceeds its ${this.#source.byteLength} bytes`,
      );
    }
    if (this.#pool !== undefined) {
      this.#fillJobs(chunk, emit);
      return;
    }
    let off = 0;
    if (this.#carryLen > 0) {
      const inBlock = this.#inBlock;
      const take = Math.min(inBlock - this.#carryLen, chunk.length);
      this.#carry.set(chunk.subarray(0, take), this.#carryLen);
      this.#carryLen += take;
      off = take;
      if (this.#carryLen < inBlock) return;
      emit(this.#encode(this.#carry));
      this.#carryLen = 0;
    }
    const inBlock = this.#inBlock;
    let whole = Math.floor((chunk.length - off) / inBlock);
    while (whole > 0) {
      const k = Math.min(whole, this.#maxBlocks);
      emit(this.#encode(chunk.subarray(off, off + k * inBlock)));
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
    if (this.#consumed !== this.#source.byteLength || this.#carryLen !== 0 || this.#jobLen !== 0) {
      throw new RangeError(
        `Cannot decode tensor "${this.#source.name}": payload ended after ${this.#consumed} of ${this.#source.byteLength} bytes`,
      );
    }
  }

  #encode(bytes: Uint8Array): Uint8Array {
    // F16 is no block type of encodeBlocks' table; only the module converts it from BF16.
    if (this.#target === "F16") return encodeBf16InWasm(wasmKernels()!, "F16", bytes);
    return encodeBlocks(this.#target, bytes, undefined, "wasm");
  }

  /**
   * Copy the chunk into jobs (a copy the pool transfers to a worker: the
   * chunk is the source's), each sent when full; the tensor's last one is as
   * long as what is left, so every job is whole blocks. A chunk that is
   * exactly the next job and that the source lets go of (`takeChunk`: a
   * file's read, not shared with another output) is the job itself, no copy:
   * a tensor's reads and jobs are both 1 MiB from its start.
   */
  #fillJobs(chunk: Uint8Array, emit: EmitBytes): void {
    let off = 0;
    while (off < chunk.length) {
      if (this.#job === undefined) {
        const left = this.#source.byteLength - 2 * this.#sent;
        const size = Math.min(this.#jobBytes, left);
        const taken = off === 0 && chunk.length === size ? takeChunk(chunk) : undefined;
        if (taken !== undefined) {
          this.#job = taken;
          this.#jobLen = size;
          this.#send(emit);
          return;
        }
        this.#job = markReleasable(new Uint8Array(takeBuffer(size)));
        this.#jobLen = 0;
      }
      const job = this.#job;
      const take = Math.min(job.length - this.#jobLen, chunk.length - off);
      job.set(chunk.subarray(off, off + take), this.#jobLen);
      this.#jobLen += take;
      off += take;
      if (this.#jobLen === job.length) this.#send(emit);
    }
  }

  /** Hand the full job to the pool. */
  #send(emit: EmitBytes): void {
    const job = this.#job!;
    const values = job.length / 2;
    const share = this.#share === undefined ? undefined : `${this.#share}@${this.#sent}+${values}`;
    this.#sent += values;
    this.#job = undefined;
    this.#jobLen = 0;
    emit(this.#pool!.encode(this.#target, job, undefined, share));
  }
}
