// This module is browser compatible.

/**
 * The strict QNAT reader (docs/QNAT.md §5): reads the fixed header, metadata
 * and tensor headers only, checks every field and every data extent, and
 * hands out each tensor as F32 values decoded from NF4 block by block, in
 * bounded memory.
 *
 * @module
 */

import { elementCount } from "../../dtype.ts";
import { ModelFormatError } from "../../errors.ts";
import { type ByteSource, DEFAULT_CHUNK_SIZE } from "../../io/byte_source.ts";
import { nf4Decoder } from "../../quant/kernels.ts";
import type {
  ModelHeader,
  ModelMetadata,
  ModelReader,
  TensorEntry,
  TensorInfo,
} from "../../tensor.ts";
import {
  parseQnatHeader,
  parseQnatMetadata,
  parseQnatTensorHeaders,
  QNAT_ALIGNMENT,
  QNAT_FLAGS,
  QNAT_HEADER_SIZE,
  QNAT_KIND,
  type QnatFixedHeader,
  qnatMaxHeadersSize,
  type QnatMetadata,
  qnatSectionLayout,
  type QnatTensorHeader,
} from "./header.ts";

/** Options of {@linkcode openQnat}. */
export interface OpenQnatOptions {
  /** Largest chunk (bytes of F32 output) a tensor stream yields. @default {DEFAULT_CHUNK_SIZE} */
  chunkSize?: number;
}

/** A tensor of a QNAT file: decoded F32 info plus its stored header. */
export interface QnatTensorEntry extends TensorEntry {
  /** F32 info: name, shape, `4 × elements` bytes. */
  readonly info: TensorInfo;
  /** The stored tensor header (kind, block size, data offset…). */
  readonly stored: QnatTensorHeader;
}

/**
 * Open a QNAT file. Every tensor reads as F32 (NF4 tensors dequantized).
 *
 * @example Usage
 * ```ts ignore
 * import { openQnat } from "./reader.ts";
 * import { openFileSource } from "../../io/file_source.ts";
 * const reader = await openQnat(await openFileSource("model.qnat"));
 * console.log(reader.header.tensors.length, reader.metadata.compute_dtype);
 * await reader.close();
 * ```
 *
 * @param source The file's bytes; the reader owns it and closes it.
 * @param options Chunk size of tensor streams.
 * @returns The reader.
 * @throws {ModelFormatError} When the file is truncated or inconsistent.
 */
export async function openQnat(
  source: ByteSource,
  options: OpenQnatOptions = {},
): Promise<QnatReader> {
  const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
  if (!Number.isSafeInteger(chunkSize) || chunkSize < 4) {
    throw new RangeError(`Cannot open QNAT file: chunk size ${chunkSize} is below 4 bytes`);
  }
  const path = source.name;
  const size = source.size;
  const fail = (reason: string, offset: number): never => {
    throw new ModelFormatError("QNAT", path, reason, { offset });
  };
  const fixed = parseQnatHeader(
    await source.read(0, Math.min(QNAT_HEADER_SIZE, size)),
    size,
    path,
  );
  const metadata = parseQnatMetadata(
    await source.read(QNAT_HEADER_SIZE, fixed.metadataSize),
    fixed.flags,
    path,
  );
  const headersStart = QNAT_HEADER_SIZE + fixed.metadataSize;
  const headerBytes = await source.read(
    headersStart,
    Math.min(size - headersStart, qnatMaxHeadersSize(fixed.tensorCount)),
  );
  const { headers, end } = parseQnatTensorHeaders(
    headerBytes,
    fixed.tensorCount,
    fixed.flags,
    path,
    headersStart,
  );
  const dataStart = Math.ceil(end / QNAT_ALIGNMENT) * QNAT_ALIGNMENT;
  let fileEnd = dataStart;
  for (const h of headers) {
    if (h.dataOffset % QNAT_ALIGNMENT !== 0) {
      fail(
        `tensor "${h.name}" data_offset ${h.dataOffset} is not a multiple of ${QNAT_ALIGNMENT}`,
        h.dataOffset,
      );
    }
    if (h.dataOffset < dataStart) {
      fail(
        `tensor "${h.name}" data_offset ${h.dataOffset} is before the data region at ${dataStart}`,
        h.dataOffset,
      );
    }
    const sectionEnd = h.dataOffset + h.dataSize;
    if (sectionEnd > size) {
      fail(
        `tensor "${h.name}" data [${h.dataOffset}, ${sectionEnd}) extends past the end of the file (${size} bytes): truncated`,
        size,
      );
    }
    fileEnd = Math.max(fileEnd, sectionEnd);
  }
  const byOffset = headers.filter((h) => h.dataSize > 0).sort((a, b) =>
    a.dataOffset - b.dataOffset
  );
  for (let i = 1; i < byOffset.length; i++) {
    const a = byOffset[i - 1]!;
    const b = byOffset[i]!;
    if (a.dataOffset + a.dataSize > b.dataOffset) {
      fail(
        `tensors "${a.name}" [${a.dataOffset}, ${
          a.dataOffset + a.dataSize
        }) and "${b.name}" [${b.dataOffset}, ${b.dataOffset + b.dataSize}) overlap`,
        b.dataOffset,
      );
    }
  }
  if (fileEnd !== size) {
    fail(
      `${size - fileEnd} unexpected bytes after the last data section (ends at ${fileEnd})`,
      fileEnd,
    );
  }
  return new QnatReader(source, fixed, metadata, headers, chunkSize);
}

/** A QNAT file opened for reading; see {@linkcode openQnat}. */
export class QnatReader implements ModelReader {
  /** Format `"qnat"`, the model metadata, F32 tensor infos. */
  readonly header: ModelHeader;
  /** One entry per tensor, in file order. */
  readonly tensors: readonly QnatTensorEntry[];
  /** The QNAT metadata JSON. */
  readonly metadata: QnatMetadata;
  /** The fixed header (version, flags…). */
  readonly fixedHeader: QnatFixedHeader;
  /** File size in bytes. */
  readonly fileSize: number;
  #source: ByteSource;

  /**
   * Use {@linkcode openQnat}; this takes already-checked parts.
   * Never throws.
   *
   * @param source The file's bytes.
   * @param fixed The fixed header.
   * @param metadata The metadata JSON.
   * @param headers The tensor headers.
   * @param chunkSize Largest output chunk.
   */
  constructor(
    source: ByteSource,
    fixed: QnatFixedHeader,
    metadata: QnatMetadata,
    headers: readonly QnatTensorHeader[],
    chunkSize: number,
  ) {
    this.#source = source;
    this.fixedHeader = fixed;
    this.metadata = metadata;
    this.fileSize = source.size;
    const infos: TensorInfo[] = headers.map((h) => ({
      name: h.name,
      dtype: "F32",
      shape: h.shape,
      byteLength: 4 * elementCount(h.shape),
    }));
    const model: ModelMetadata = metadata.model_metadata
      ? { ...metadata.model_metadata as ModelMetadata }
      : { model_type: metadata.model_type, name: metadata.model_name };
    model.original_format ??= "qnat";
    this.header = { format: "qnat", metadata: model, tensors: infos };
    this.tensors = headers.map((h, i) => ({
      info: infos[i]!,
      stored: h,
      open: (): ReadableStream<Uint8Array> =>
        h.kind === QNAT_KIND.F32
          ? this.#source.stream(h.dataOffset, h.dataOffset + h.dataSize, chunkSize)
          : nf4Stream(this.#source, h, fixed.flags, chunkSize),
    }));
  }

  /**
   * Close the underlying source. Safe to call twice.
   * Never throws.
   *
   * @returns When the source is closed.
   */
  close(): Promise<void> {
    return this.#source.close();
  }
}

/** Decode an NF4 section to F32 bytes, a batch of whole blocks at a time. */
function nf4Stream(
  source: ByteSource,
  h: QnatTensorHeader,
  flags: number,
  chunkSize: number,
): ReadableStream<Uint8Array> {
  const elements = h.blockCount * h.blockSize;
  const layout = qnatSectionLayout(QNAT_KIND.NF4, elements, h.blockCount, flags);
  const dq = (flags & QNAT_FLAGS.DOUBLE_QUANT) !== 0;
  const perBatch = Math.max(1, Math.floor(chunkSize / 4 / h.blockSize));
  const base = h.dataOffset;
  let next = 0;
  let factor = -1;
  const bad = (reason: string, offset: number): ModelFormatError =>
    new ModelFormatError("QNAT", source.name, `tensor "${h.name}": ${reason}`, { offset });
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (next >= h.blockCount) {
        controller.close();
        return;
      }
      const n = Math.min(perBatch, h.blockCount - next);
      const half = h.blockSize / 2;
      const codes = await source.read(base + next * half, n * half);
      const scales = new Float32Array(n);
      if (dq) {
        const at = base + layout.scalesOffset;
        if (factor < 0) {
          const f = await source.read(at, 4);
          factor = new DataView(f.buffer, f.byteOffset, 4).getFloat32(0, true);
          if (!Number.isFinite(factor) || factor < 0) {
            throw bad(`double-quantization factor ${factor} is not a finite number ≥ 0`, at);
          }
        }
        const q = await source.read(at + 4 + next, n);
        for (let b = 0; b < n; b++) scales[b] = Math.fround(q[b]! * factor);
      } else {
        const at = base + layout.scalesOffset + 4 * next;
        const raw = await source.read(at, 4 * n);
        const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
        for (let b = 0; b < n; b++) {
          const s = view.getFloat32(4 * b, true);
          if (!Number.isFinite(s) || s < 0) {
            throw bad(`block ${next + b} scale ${s} is not a finite number ≥ 0`, at + 4 * b);
          }
          scales[b] = s;
        }
      }
      let zeros: Float32Array | undefined;
      if (layout.zerosOffset >= 0) {
        const at = base + layout.zerosOffset + 4 * next;
        const raw = await source.read(at, 4 * n);
        const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
        zeros = new Float32Array(n);
        for (let b = 0; b < n; b++) {
          const z = view.getFloat32(4 * b, true);
          if (!Number.isFinite(z)) {
            throw bad(`block ${next + b} zero point ${z} is not finite`, at + 4 * b);
          }
          zeros[b] = z;
        }
      }
      const out = new Float32Array(n * h.blockSize);
      // WebAssembly where it runs (same values as decodeNf4Block).
      nf4Decoder()(codes.subarray(0, n * half), scales, zeros, h.blockSize, out);
      next += n;
      controller.enqueue(new Uint8Array(out.buffer));
    },
  }, { highWaterMark: 0 });
}
