// This module is browser compatible.

/**
 * Reading the parts of a companion tensor a dequantizer needs: a byte range,
 * a column window of every row (GPTQ/AWQ store output features as columns),
 * a small tensor decoded whole. Everything read is bounded by its caller's
 * tile budget, never by the tensor's size.
 *
 * @module
 */

import { type DType, DTYPES } from "../../dtype.ts";
import { releaseChunk } from "../../io/byte_source.ts";
import { decodeToFloat32 } from "../decode.ts";
import { blockDecoder } from "../_block_decoders.ts";
import type { TensorEntry } from "../../tensor.ts";

/** Largest contiguous read issued at once. */
const MAX_READ = 8 * 1024 * 1024;

/**
 * Rows up to this long are read whole, many to a request, even for a narrow
 * window: one request costs about as much as copying this many bytes, and a
 * request per row made a tile of 10^5 short rows (GPTQ's scales) take seconds.
 */
const SHORT_ROW_BYTES = 16 * 1024;

/**
 * Bytes `[start, end)` of a tensor's payload.
 *
 * @param entry The tensor (needs random access).
 * @param start First byte.
 * @param end One past the last byte.
 * @param into Where to put them (`end - start` bytes); a new array by default.
 * @returns The bytes.
 * @throws {RangeError} When the payload ends early or runs long.
 */
export async function readRange(
  entry: TensorEntry,
  start: number,
  end: number,
  into?: Uint8Array,
): Promise<Uint8Array> {
  const out = into ?? new Uint8Array(end - start);
  if (out.length === 0) return out;
  const stream = entry.slice !== undefined ? entry.slice(start, end) : (() => {
    throw new TypeError(`Cannot read tensor "${entry.info.name}": its source is not random access`);
  })();
  let at = 0;
  for await (const chunk of stream) {
    if (at + chunk.length > out.length) {
      throw new RangeError(`Cannot read tensor "${entry.info.name}": payload longer than asked`);
    }
    out.set(chunk, at);
    at += chunk.length;
    releaseChunk(chunk);
  }
  if (at !== out.length) {
    throw new RangeError(
      `Cannot read tensor "${entry.info.name}": payload ended after ${at} of ${out.length} bytes`,
    );
  }
  return out;
}

/**
 * Bytes `[from, to)` of each row `[rowStart, rowEnd)` of a tensor stored as
 * rows of `rowBytes`, packed one row after another. Reads whole rows in
 * large requests when the window is most of a row, one request per row
 * otherwise.
 *
 * @param entry The tensor.
 * @param rowBytes Bytes per row.
 * @param rowStart First row.
 * @param rowEnd One past the last row.
 * @param from First byte inside a row.
 * @param to One past the last byte inside a row.
 * @param scratch Reused memory for the result, when large enough (tiles of one tensor).
 * @returns `(rowEnd - rowStart) * (to - from)` bytes, in `scratch` when it fits.
 */
export async function readColumns(
  entry: TensorEntry,
  rowBytes: number,
  rowStart: number,
  rowEnd: number,
  from: number,
  to: number,
  scratch?: Uint8Array,
): Promise<Uint8Array> {
  const width = to - from;
  const rows = rowEnd - rowStart;
  const out = scratch !== undefined && scratch.length >= rows * width
    ? scratch.subarray(0, rows * width)
    : new Uint8Array(rows * width);
  if (width === rowBytes) {
    return await readRange(entry, rowStart * rowBytes, rowEnd * rowBytes, out);
  }
  if (width * 2 >= rowBytes || rowBytes <= SHORT_ROW_BYTES) {
    const step = Math.max(1, Math.floor(MAX_READ / rowBytes));
    let rowsRead: Uint8Array | undefined;
    for (let r = rowStart; r < rowEnd; r += step) {
      const last = Math.min(rowEnd, r + step);
      rowsRead = rowsRead?.length === (last - r) * rowBytes ? rowsRead : undefined;
      const bytes = await readRange(entry, r * rowBytes, last * rowBytes, rowsRead);
      rowsRead = bytes;
      for (let k = r; k < last; k++) {
        const at = (k - r) * rowBytes;
        out.set(bytes.subarray(at + from, at + to), (k - rowStart) * width);
      }
    }
    return out;
  }
  for (let r = rowStart; r < rowEnd; r++) {
    const at = r * rowBytes;
    const row = (r - rowStart) * width;
    await readRange(entry, at + from, at + to, out.subarray(row, row + width));
  }
  return out;
}

/**
 * A small tensor decoded to f32 whole (a scale tensor, an index).
 *
 * @param entry The tensor.
 * @returns Its values.
 */
export async function readFloat32(entry: TensorEntry): Promise<Float32Array> {
  const { dtype, shape, byteLength } = entry.info;
  return decodeToFloat32(dtype, await readRange(entry, 0, byteLength), shape);
}

/**
 * Decode `bytes` of a scale-like dtype to f32.
 *
 * @param dtype F32, F16, BF16 (or any dtype `decodeToFloat32` decodes).
 * @param bytes Whole elements.
 * @returns The values.
 */
export function floats(dtype: DType, bytes: Uint8Array): Float32Array {
  return decodeToFloat32(dtype, bytes, [bytes.length / DTYPES[dtype].blockBytes]);
}

/**
 * Decode `bytes` of an element dtype into `out` (one value per element).
 *
 * @param dtype F8_E4M3, I8, F16, BF16, F32…
 * @param bytes Whole elements.
 * @param out Destination, one f32 per element.
 */
export function decodeInto(dtype: DType, bytes: Uint8Array, out: Float32Array): void {
  const decode = blockDecoder(dtype);
  if (decode !== undefined) decode(bytes, out);
  else out.set(decodeToFloat32(dtype, bytes, [out.length]));
}

/**
 * Little-endian 32-bit words of `bytes` (copied when unaligned).
 *
 * @param bytes Whole words.
 * @returns The words, signed.
 */
export function int32s(bytes: Uint8Array): Int32Array {
  const aligned = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
  return new Int32Array(aligned.buffer, aligned.byteOffset, aligned.length / 4);
}
