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
import { aprQ8Kernels, halfEncoder } from "./kernels.ts";
import {
  type BlockEncoder,
  blockEncoder,
  type BlockTarget,
  isBlockTarget,
  usesImportance,
} from "./_block_encoders.ts";
import type { EncoderPool } from "./_encoder_pool.ts";
import { markReleasable, releaseChunk, takeBuffer } from "../io/byte_source.ts";

/** Receives encoded payload pieces, in order (promises when a worker pool encodes). */
export type EmitBytes = (bytes: Uint8Array | Promise<Uint8Array>) => void;

/** Dtypes {@linkcode TensorEncoder} can produce: the element types and every block encoder's. */
export type EncodeTarget = "F32" | "F16" | "BF16" | "APR_Q8" | BlockTarget;

/** True when `dtype` is an {@linkcode EncodeTarget}. */
export function isEncodeTarget(dtype: DType): dtype is EncodeTarget {
  return dtype === "F32" || dtype === "F16" || dtype === "BF16" || dtype === "APR_Q8" ||
    isBlockTarget(dtype);
}

/** Default upper bound on values encoded per emitted piece (4 MiB of f32). */
const MAX_BATCH_VALUES = 1 << 20;

/** Smallest batch sent to a worker: 16 Ki values, milliseconds of work against ~0.1 ms of messaging. */
const MIN_JOB_BLOCKS = 64;
/**
 * Largest batch sent to a worker: 256 Ki values (1 MiB of f32, ~50 ms of
 * Q4_K). Up to two per worker are in flight, so this bounds their memory.
 */
const MAX_JOB_BLOCKS = 1024;

/**
 * Blocks per worker job for a tensor of `tensorBlocks` blocks: enough jobs to
 * keep every worker busy on this tensor alone (the next tensor starts only
 * when this one is written), but not tiny ones. The bound on a job's size is
 * in bytes, so jobs of BF16 bytes (`valueBytes` 2) take twice the blocks of
 * f32 ones.
 *
 * @param workers The pool's workers.
 * @param valueBytes Bytes of one value in the job: 4 (f32) or 2 (BF16).
 */
export function jobBlocks(tensorBlocks: number, workers: number, valueBytes = 4): number {
  const perJob = Math.ceil(tensorBlocks / (2 * workers));
  const max = (MAX_JOB_BLOCKS * 4) / valueBytes;
  return Math.min(max, Math.max(MIN_JOB_BLOCKS, perJob));
}

/** Incremental f32 → payload encoder for one tensor. */
export class TensorEncoder {
  #target: EncodeTarget;
  #scale: number;
  #prefixDone: boolean;
  // Block targets.
  #blockFn: BlockEncoder | undefined;
  #blockElements = 1;
  #buf: Float32Array | undefined;
  #bufLen = 0;
  #cols = Infinity;
  #colPos = 0;
  #pool: EncoderPool | undefined;
  #batchValues: number;
  // Importance weights (one per column, per expert), when the encoder uses them.
  #importance: Float32Array | undefined;
  // Values per expert (a 3-D tensor's matrix): batches never cross one.
  #expertValues = Infinity;
  #weightCols = 0;
  // Values pushed so far, and where the staged batch starts.
  #pos = 0;
  #batchStart = 0;
  // What the values are, for the pool's sharing of identical jobs; values encoded so far.
  #share: string | undefined;
  #sent = 0;

  /**
   * @param target The payload dtype.
   * @param shape The tensor's shape (K-quant rows are its last dimension).
   * @param scale APR_Q8's tensor scale (required for APR_Q8).
   * @param pool Workers for the block encoders; in-thread when absent.
   * @param batchValues Values encoded per emitted piece (rounded to whole blocks).
   * @param importance Importance weights, one per column for each matrix of
   * the tensor (`cols * experts`), as llama-quantize's `--imatrix` uses them;
   * ignored by the encoders that take none (`usesImportance`), and for rows that need padding.
   * @param prefix Emit APR_Q8's scale prefix (not when restarting after it).
   * @param share Names the tensor's values from their start (a tensor's name,
   *   not given when restarting inside it), so the pool may share a job with
   *   another stream of the same read encoding the same values (EncoderPool.encode).
   */
  constructor(
    target: EncodeTarget,
    shape: readonly number[],
    scale = 1,
    pool?: EncoderPool,
    batchValues = MAX_BATCH_VALUES,
    importance?: Float32Array,
    prefix = true,
    share?: string,
  ) {
    this.#share = share;
    this.#target = target;
    this.#batchValues = batchValues;
    this.#pool = pool;
    this.#scale = scale;
    const n = elementCount(shape);
    this.#prefixDone = !prefix || target !== "APR_Q8" || n === 0;
    if (isBlockTarget(target)) {
      // WebAssembly where there is a kernel (same bytes as the TypeScript ones).
      this.#blockFn = blockEncoder(target);
      const be = DTYPES[target].blockElements;
      this.#blockElements = be;
      const cols = shape.length === 0 ? 1 : shape[shape.length - 1]!;
      // The staging batch: a whole number of blocks, no more than the tensor needs.
      const tensorBlocks = target === "APR_Q4"
        ? Math.ceil(n / be)
        : n === 0
        ? 0
        : (n / cols) * Math.ceil(cols / be);
      let stageBlocks = Math.max(1, Math.min(Math.floor(batchValues / be), tensorBlocks));
      if (pool !== undefined) {
        stageBlocks = Math.max(1, Math.min(stageBlocks, jobBlocks(tensorBlocks, pool.size)));
      }
      let stageValues = stageBlocks * be;
      if (importance !== undefined && usesImportance(target) && n > 0 && cols % be === 0) {
        // Weighted encoders see whole rows of one matrix (Q5_0/Q5_1 take σ² over the row).
        const rows = n / cols;
        const matrixRows = shape.length >= 3 ? shape[shape.length - 2]! : rows;
        if (importance.length !== cols * (rows / matrixRows)) {
          throw new RangeError(
            `Cannot encode with importance weights: ${importance.length} weights for ` +
              `${rows / matrixRows} matrices of ${cols} columns`,
          );
        }
        this.#importance = importance;
        this.#weightCols = cols;
        this.#expertValues = matrixRows * cols;
        stageValues = Math.max(1, Math.min(Math.floor(stageValues / cols), rows)) * cols;
      }
      // Freed in finish(): it is ours alone (workers get copies).
      // Values are always staged before they are encoded, so recycled memory is fine.
      this.#buf = markReleasable(new Float32Array(takeBuffer(4 * stageValues)));
      // Rows matter only when they need padding (K-quants, cols not a multiple of 256).
      if (target !== "APR_Q4" && n > 0 && cols % be !== 0) this.#cols = cols;
    }
  }

  /** Encode a batch of values; `emit` receives payload chunks. */
  push(values: Float32Array, emit: EmitBytes): void {
    if (!this.#prefixDone) {
      const p = new Uint8Array(4);
      new DataView(p.buffer).setFloat32(0, this.#scale, true);
      emit(p);
      this.#prefixDone = true;
    }
    if (this.#blockFn === undefined) {
      for (let off = 0; off < values.length; off += this.#batchValues) {
        const part = values.subarray(off, Math.min(values.length, off + this.#batchValues));
        emit(this.#elementwise(part));
      }
      return;
    }
    if (this.#importance !== undefined) this.#pushRows(values, emit);
    else this.#pushBlocks(values, emit);
  }

  /** Flush the last partial block (zero-filled). */
  finish(emit: EmitBytes): void {
    if (!this.#prefixDone) this.push(new Float32Array(0), emit);
    if (this.#importance !== undefined && this.#bufLen > 0) {
      this.#flushRows(emit);
    } else if (this.#blockFn !== undefined && this.#bufLen > 0) {
      // APR_Q4's last block is zero-filled; K-quant rows were padded already.
      const end = Math.ceil(this.#bufLen / this.#blockElements) * this.#blockElements;
      this.#buf!.fill(0, this.#bufLen, end);
      this.#encode(this.#buf!.subarray(0, end), emit);
      this.#bufLen = 0;
    }
    // One encoder per tensor: free the staging batch now, not when the GC runs.
    if (this.#buf !== undefined) releaseChunk(this.#buf);
  }

  #elementwise(v: Float32Array): Uint8Array {
    switch (this.#target) {
      // Outputs in recycled memory (every byte is written), released by the sink.
      case "F16":
      case "BF16":
        return halfEncoder(this.#target)(v, new Uint8Array(takeBuffer(2 * v.length)));
      case "APR_Q8":
        return aprQ8Kernels().encode(v, this.#scale, new Uint8Array(takeBuffer(v.length)));
      default: {
        const out = new Uint8Array(takeBuffer(v.length * 4));
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

  #pushBlocks(values: Float32Array, emit: EmitBytes): void {
    const be = this.#blockElements;
    const stage = this.#buf!;
    const cap = stage.length;
    const len = values.length;
    let off = 0;
    while (off < len) {
      if (this.#bufLen === 0 && this.#cols === Infinity) {
        // Unpadded layout: whole blocks straight from the batch, no copy.
        const k = Math.min(Math.floor((len - off) / be), cap / be);
        if (k > 0) {
          this.#encode(values.subarray(off, off + k * be), emit);
          off += k * be;
          continue;
        }
      }
      // Stage values (and each row's zero padding) until a batch is full, so
      // batches stay large even when rows are short.
      const take = Math.min(cap - this.#bufLen, len - off, this.#cols - this.#colPos);
      stage.set(values.subarray(off, off + take), this.#bufLen);
      this.#bufLen += take;
      off += take;
      if (this.#advance(take)) {
        // Row end: pad the row's last block with zeros (APR_V2.md §5).
        const pad = (be - (this.#bufLen % be)) % be;
        stage.fill(0, this.#bufLen, this.#bufLen + pad);
        this.#bufLen += pad;
      }
      if (this.#bufLen === cap) {
        this.#encode(stage, emit);
        this.#bufLen = 0;
      }
    }
  }

  /**
   * Stage whole rows for the weighted encoders; a batch ends when the stage is
   * full or a matrix ends (its weights differ from the next one's).
   */
  #pushRows(values: Float32Array, emit: EmitBytes): void {
    const stage = this.#buf!;
    const cap = stage.length;
    let off = 0;
    while (off < values.length) {
      const toMatrixEnd = this.#expertValues - (this.#pos % this.#expertValues);
      const take = Math.min(cap - this.#bufLen, values.length - off, toMatrixEnd);
      stage.set(values.subarray(off, off + take), this.#bufLen);
      this.#bufLen += take;
      this.#pos += take;
      off += take;
      if (this.#bufLen === cap || take === toMatrixEnd) this.#flushRows(emit);
    }
  }

  /** Encode the staged rows with their matrix's weights. */
  #flushRows(emit: EmitBytes): void {
    const cols = this.#weightCols;
    const matrix = Math.floor(this.#batchStart / this.#expertValues);
    const weights = this.#importance!.subarray(matrix * cols, (matrix + 1) * cols);
    this.#encode(this.#buf!.subarray(0, this.#bufLen), emit, weights);
    this.#batchStart += this.#bufLen;
    this.#bufLen = 0;
  }

  /** Encode whole blocks, in a worker when there is a pool. */
  #encode(values: Float32Array, emit: EmitBytes, importance?: Float32Array): void {
    if (this.#pool === undefined) {
      emit(this.#blockFn!(values, undefined, importance));
    } else {
      // A copy (the stage is refilled meanwhile) that the pool transfers to a
      // worker, or encodes here and gives back if workers cannot start.
      const job = markReleasable(new Float32Array(takeBuffer(4 * values.length)));
      job.set(values);
      // The range of the encoded values (rows padded as encoded): the same
      // whatever the chunks they arrived in.
      const share = this.#share === undefined
        ? undefined
        : `${this.#share}@${this.#sent}+${values.length}`;
      this.#sent += values.length;
      emit(this.#pool.encode(this.#target, job, importance, share));
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
