// This module is browser compatible.

/**
 * The layout of an APR v2 file, decided from the tensor plan before any data
 * (DESIGN.md §1 principle 1): header, metadata and sorted index bytes with
 * final offsets, and where each payload goes. Shared by the streaming sink
 * and the in-memory encoder, so both write the same bytes.
 *
 * @module
 */

import { elementCount, tensorByteLength } from "../../dtype.ts";
import type { ModelMetadata, TensorInfo } from "../../tensor.ts";
import { APR_FLAGS, APR_HEADER_SIZE, encodeAprHeader } from "./header.ts";
import { checkAprTensor, compareUtf8Bytes, encodeAprIndex } from "./index_entry.ts";
import { encodeAprMetadata } from "./metadata.ts";

/** APR v2 aligns every region and tensor to 64 bytes (APR_V2.md §1). */
export const APR_ALIGNMENT = 64;

/** Size of the footer CRC. */
export const APR_FOOTER_SIZE = 4;

/** Round `n` up to a multiple of 64. */
export function pad64(n: number): number {
  return Math.ceil(n / APR_ALIGNMENT) * APR_ALIGNMENT;
}

/** Where the data of the tensors goes in the file. */
export type AprDataOrder =
  /** Data in index order (sorted by UTF-8 name bytes), as aprender writes it. */
  | "index"
  /** Data in the order the tensors arrive. */
  | "arrival";

/** Options of {@linkcode planAprLayout}. */
export interface AprLayoutOptions {
  /**
   * Data order. `"index"` makes the bytes independent of arrival order and
   * identical to aprender's writer (APR_V2.md §7).
   * @default {"index"}
   */
  dataOrder?: AprDataOrder;
  /** Header flags. @default {APR_FLAGS.LAYOUT_ROW_MAJOR} */
  flags?: number;
}

/** One tensor's place in the file. */
export interface AprPlannedTensor {
  /** The tensor. */
  readonly info: TensorInfo;
  /** Position in the input (arrival) list. */
  readonly inputIndex: number;
  /** Position in the sorted index. */
  readonly indexPosition: number;
  /** Payload offset relative to data_offset, as written in the index. */
  readonly offset: number;
  /** Absolute byte offset of the payload in the file. */
  readonly fileOffset: number;
  /** Payload plus zero padding to 64 bytes. */
  readonly paddedSize: number;
}

/** The whole layout of an APR v2 file. */
export interface AprLayout {
  /** Bytes `[0, dataOffset)`: header, padded metadata, padded index. */
  readonly prefix: Uint8Array;
  /** Byte offset of the tensor data. */
  readonly dataOffset: number;
  /** Total file size, footer included. */
  readonly fileSize: number;
  /** The metadata as written (totals filled in, aliases folded). */
  readonly metadata: ModelMetadata;
  /** Tensors in input order. */
  readonly tensors: readonly AprPlannedTensor[];
  /** Tensors in file (data) order. */
  readonly fileOrder: readonly AprPlannedTensor[];
  /** Sum of payload bytes (unpadded). */
  readonly payloadBytes: number;
}

/**
 * Lay out an APR v2 file: validate names (unique, ≤256 UTF-8 bytes), dims
 * (≤8), dtypes (must have an APR code) and sizes (must match dtype × shape);
 * sort the index by UTF-8 name bytes; fill `total_size` and `param_count`
 * from the tensors when the metadata lacks them.
 *
 * @example Usage
 * ```ts
 * import { planAprLayout } from "./layout.ts";
 * const layout = planAprLayout({}, [{ name: "w", dtype: "F32", shape: [2], byteLength: 8 }]);
 * console.assert(layout.fileSize === layout.dataOffset + 64 + 4);
 * ```
 *
 * @param metadata APR metadata.
 * @param tensors Tensor plan, in arrival order.
 * @param options Data order and flags.
 * @returns The layout.
 * @throws {TypeError} On duplicate names, dtypes APR cannot store, or a byteLength that does not match.
 * @throws {RangeError} On names over 256 bytes, more than 8 dims, or bad shapes.
 */
export function planAprLayout(
  metadata: Readonly<ModelMetadata>,
  tensors: readonly TensorInfo[],
  options: AprLayoutOptions = {},
): AprLayout {
  const dataOrder = options.dataOrder ?? "index";
  if (dataOrder !== "index" && dataOrder !== "arrival") {
    throw new TypeError(`Cannot lay out APR file: unknown data order "${dataOrder}"`);
  }
  const seen = new Set<string>();
  let payloadBytes = 0;
  let params = 0;
  for (const t of tensors) {
    checkAprTensor(t.name, t.dtype, t.shape);
    if (seen.has(t.name)) {
      throw new TypeError(`Cannot write APR file: tensor name "${t.name}" appears twice`);
    }
    seen.add(t.name);
    const expected = tensorByteLength(t.dtype, t.shape);
    if (t.byteLength !== expected) {
      throw new TypeError(
        `Cannot write APR file: tensor "${t.name}" (${t.dtype} [${t.shape}]) has byteLength ${t.byteLength}, expected ${expected}`,
      );
    }
    payloadBytes += t.byteLength;
    params += elementCount(t.shape);
  }
  // Positions as typed arrays, not an object and two map entries a tensor:
  // 261,000 tensors made ~100 MB of garbage here (issue 34 §1).
  const sorted = new Uint32Array(tensors.length);
  for (let i = 0; i < sorted.length; i++) sorted[i] = i;
  // Typed arrays sort stably too: equal names cannot happen (checked above).
  sorted.sort((a, b) => compareUtf8Bytes(tensors[a]!.name, tensors[b]!.name));
  const positionOf = new Uint32Array(tensors.length);
  sorted.forEach((inputIndex, position) => (positionOf[inputIndex] = position));
  const relative = new Float64Array(tensors.length);
  let cursor = 0;
  for (let k = 0; k < tensors.length; k++) {
    const inputIndex = dataOrder === "index" ? sorted[k]! : k;
    relative[inputIndex] = cursor;
    cursor += pad64(tensors[inputIndex]!.byteLength);
  }
  const written: ModelMetadata = { ...metadata };
  if (written.total_size === undefined || written.total_size === null) {
    written.total_size = payloadBytes;
  }
  if (written.param_count === undefined || written.param_count === null) {
    written.param_count = params;
  }
  const metadataBytes = encodeAprMetadata(written);
  const indexBytes = encodeAprIndex(Array.from(sorted, (inputIndex) => {
    const info = tensors[inputIndex]!;
    const { name, dtype, shape } = info;
    return { name, dtype, shape, offset: relative[inputIndex]!, size: info.byteLength };
  }));
  const tensorIndexOffset = APR_HEADER_SIZE + pad64(metadataBytes.length);
  const dataOffset = tensorIndexOffset + pad64(indexBytes.length);
  const prefix = new Uint8Array(dataOffset);
  prefix.set(
    encodeAprHeader({
      flags: options.flags ?? APR_FLAGS.LAYOUT_ROW_MAJOR,
      tensorCount: tensors.length,
      metadataSize: metadataBytes.length,
      tensorIndexOffset,
      dataOffset,
    }),
  );
  prefix.set(metadataBytes, APR_HEADER_SIZE);
  prefix.set(indexBytes, tensorIndexOffset);
  const planned: AprPlannedTensor[] = tensors.map((info, inputIndex) => {
    const offset = relative[inputIndex]!;
    return {
      info,
      inputIndex,
      indexPosition: positionOf[inputIndex]!,
      offset,
      fileOffset: dataOffset + offset,
      paddedSize: pad64(info.byteLength),
    };
  });
  const fileOrder = [...planned].sort((a, b) => a.offset - b.offset || a.inputIndex - b.inputIndex);
  const fileSize = dataOffset + cursor + APR_FOOTER_SIZE;
  if (!Number.isSafeInteger(fileSize)) {
    throw new RangeError(`Cannot write APR file: ${fileSize} bytes exceeds 2^53`);
  }
  return {
    prefix,
    dataOffset,
    fileSize,
    metadata: written,
    tensors: planned,
    fileOrder,
    payloadBytes,
  };
}
