// This module is browser compatible.

/**
 * Internal: an incremental decoder of one tensor's payload into f32 values.
 * It accepts chunks of any size, carries partial blocks (and APR_Q8's 4-byte
 * scale prefix) between them, drops the row padding of ggml block types and
 * APR_Q4's zero-filled tail, and emits batches of bounded size.
 *
 * @module
 */

import { DTYPES, elementCount } from "../dtype.ts";
import type { DTypeSpec } from "../dtype.ts";
import type { TensorInfo } from "../tensor.ts";
import { type BlockDecodeFn, blockDecoder, noFloatForm } from "./_block_decoders.ts";
import { decodeAprQ8 } from "./apr_q8.ts";
import { markReleasable, releaseChunk, takeBuffer } from "../io/byte_source.ts";
import { WholeUnits } from "../io/whole_units.ts";

/** Default upper bound on the values of one emitted batch (4 MiB of f32). */
export const DEFAULT_MAX_CHUNK_ELEMENTS = 1 << 20;

/** Incremental payload → f32 decoder for one tensor. */
export class TensorDecoder {
  #info: TensorInfo;
  #spec: DTypeSpec;
  #fn: BlockDecodeFn;
  #blockBytes: number;
  #blockElements: number;
  #total: number;
  #expectBytes: number;
  #consumed = 0;
  #emitted = 0;
  #units: WholeUnits<Uint8Array>;
  #maxBlocks: number;
  // APR_Q8: the scale prefix still to read, then the scale.
  #prefixLeft = 0;
  #prefix = new Uint8Array(4);
  #scale = 1;
  // Row padding of ggml block types.
  #cols = 0;
  #rowBlocks = 0;
  #blockInRow = 0;
  #padded = false;
  // With `reuse`: the batch buffers, allocated once (bounded by maxChunkElements).
  #reuse: boolean;
  #dec: Float32Array | undefined;
  #rows: Float32Array | undefined;

  /**
   * @param info The tensor (dtype, shape, payload size).
   * @param maxChunkElements Largest batch emitted.
   * @param reuse Emit views of internal buffers that are overwritten by the
   *   next batch (for consumers that finish with each batch inside `emit`):
   *   no allocation per batch, so no garbage waiting for the GC.
   */
  constructor(info: TensorInfo, maxChunkElements = DEFAULT_MAX_CHUNK_ELEMENTS, reuse = false) {
    this.#reuse = reuse;
    this.#info = info;
    this.#spec = DTYPES[info.dtype];
    this.#total = elementCount(info.shape);
    this.#expectBytes = info.byteLength;
    const spec = this.#spec;
    if (spec.layout === "scale_prefix") {
      this.#prefixLeft = this.#total === 0 ? 0 : 4;
      this.#fn = (b, o) => void decodeAprQ8(b, this.#scale, o);
    } else {
      this.#fn = blockDecoder(info.dtype) ?? noFloatForm(info.dtype, info.name);
    }
    this.#blockBytes = spec.blockBytes;
    this.#blockElements = spec.blockElements;
    this.#units = new WholeUnits(new Uint8Array(spec.blockBytes));
    this.#maxBlocks = Math.max(1, Math.floor(maxChunkElements / spec.blockElements));
    if (spec.layout === "row_blocks" && this.#total > 0) {
      const cols = info.shape.length === 0 ? 1 : info.shape[info.shape.length - 1]!;
      this.#cols = cols;
      this.#rowBlocks = Math.ceil(cols / spec.blockElements);
      this.#padded = cols % spec.blockElements !== 0;
    }
  }

  /** Values emitted so far. */
  get emitted(): number {
    return this.#emitted;
  }

  /**
   * Feed one payload chunk; `emit` receives decoded batches (fresh arrays,
   * or views valid only during the call with `reuse`).
   */
  push(chunk: Uint8Array, emit: (values: Float32Array) => void): void {
    this.#consumed += chunk.length;
    if (this.#consumed > this.#expectBytes) {
      throw new RangeError(
        `Cannot decode tensor "${this.#info.name}": payload exceeds its ${this.#expectBytes} bytes`,
      );
    }
    let off = 0;
    if (this.#prefixLeft > 0) {
      const take = Math.min(this.#prefixLeft, chunk.length);
      this.#prefix.set(chunk.subarray(0, take), 4 - this.#prefixLeft);
      this.#prefixLeft -= take;
      off = take;
      if (this.#prefixLeft > 0) return;
      this.#scale = new DataView(this.#prefix.buffer, 0, 4).getFloat32(0, true);
    }
    const bb = this.#blockBytes;
    for (const run of this.#units.take(chunk, off)) {
      const blocks = run.length / bb;
      for (let at = 0; at < blocks;) {
        const k = Math.min(blocks - at, this.#maxBlocks);
        this.#blocks(run.subarray(at * bb, (at + k) * bb), k, emit);
        at += k;
      }
    }
  }

  /** Check that the payload was complete (and free the reused buffers). */
  finish(): void {
    // One decoder per tensor: free its batch buffers now rather than leaving
    // megabytes per tensor to the GC (nothing else holds views of them).
    if (this.#dec !== undefined) releaseChunk(this.#dec);
    if (this.#rows !== undefined) releaseChunk(this.#rows);
    this.#dec = this.#rows = undefined;
    if (this.#consumed !== this.#expectBytes || this.#units.partial || this.#prefixLeft > 0) {
      throw new RangeError(
        `Cannot decode tensor "${this.#info.name}": payload ended after ${this.#consumed} of ${this.#expectBytes} bytes`,
      );
    }
  }

  #blocks(bytes: Uint8Array, k: number, emit: (values: Float32Array) => void): void {
    const be = this.#blockElements;
    const dec = this.#reuse ? this.#scratch(k * be, false) : new Float32Array(k * be);
    this.#fn(bytes, dec);
    let out = dec;
    if (this.#padded) {
      // Drop each row's padding (APR_V2.md §5: rows padded to whole blocks).
      let real = 0;
      const cols = this.#cols;
      let bir = this.#blockInRow;
      for (let b = 0; b < k; b++) {
        real += Math.min(be, cols - bir * be);
        if (++bir === this.#rowBlocks) bir = 0;
      }
      out = this.#reuse ? this.#scratch(real, true) : new Float32Array(real);
      let pos = 0;
      for (let b = 0; b < k; b++) {
        const r = Math.min(be, cols - this.#blockInRow * be);
        out.set(dec.subarray(b * be, b * be + r), pos);
        pos += r;
        if (++this.#blockInRow === this.#rowBlocks) this.#blockInRow = 0;
      }
    } else if (this.#emitted + out.length > this.#total) {
      // APR_Q4's zero-filled last block.
      const n = this.#total - this.#emitted;
      out = this.#reuse ? dec.subarray(0, n) : dec.slice(0, n);
    }
    this.#emitted += out.length;
    if (out.length > 0) emit(out);
  }

  /** A reused buffer of at least `n` values (a view of exactly `n`). */
  #scratch(n: number, rows: boolean): Float32Array {
    let b = rows ? this.#rows : this.#dec;
    if (b === undefined || b.length < n) {
      // Batches never exceed maxBlocks blocks, so this grows at most to that bound.
      if (b !== undefined) releaseChunk(b);
      // Fully overwritten by each batch before it is read.
      b = markReleasable(new Float32Array(takeBuffer(4 * n)));
      if (rows) this.#rows = b;
      else this.#dec = b;
    }
    return b.length === n ? b : b.subarray(0, n);
  }
}
