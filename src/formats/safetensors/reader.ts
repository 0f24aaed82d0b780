// This module is browser compatible.

/**
 * A {@linkcode ModelReader} over one SafeTensors file: the validated header,
 * and per tensor a re-openable stream of its byte range.
 *
 * @module
 */

import { type ByteSource, DEFAULT_CHUNK_SIZE } from "../../io/byte_source.ts";
import type { ModelHeader, ModelMetadata, ModelReader, TensorEntry } from "../../tensor.ts";
import { parseSafetensorsHeader, type SafetensorsHeader } from "./header.ts";

/** Options of {@linkcode openSafetensors}. */
export interface OpenSafetensorsOptions {
  /**
   * Largest chunk a tensor payload stream yields, in bytes.
   *
   * @default {DEFAULT_CHUNK_SIZE}
   */
  chunkSize?: number;
}

/** One SafeTensors file opened for reading. Owns its ByteSource: closing the reader closes it. */
export class SafetensorsReader implements ModelReader {
  /** Format `"safetensors"`, metadata `{original_format, source_metadata?}`, tensors in file order. */
  readonly header: ModelHeader;
  /** The entries, made on first use ({@linkcode SafetensorsReader.tensors}). */
  #tensors: readonly TensorEntry[] | undefined;
  #chunkSize: number;
  /** The raw parsed header: data offset, `__metadata__`, `data_offsets`. */
  readonly safetensorsHeader: SafetensorsHeader;
  #source: ByteSource;
  #closed = false;

  /**
   * Wrap a parsed header; prefer {@linkcode openSafetensors}.
   * Never throws.
   *
   * @param source The file, now owned by the reader.
   * @param header Its parsed header.
   * @param chunkSize Largest payload chunk.
   */
  constructor(
    source: ByteSource,
    header: SafetensorsHeader,
    chunkSize: number = DEFAULT_CHUNK_SIZE,
  ) {
    if (!Number.isSafeInteger(chunkSize) || chunkSize <= 0) {
      throw new RangeError(`Cannot open "${source.name}": chunk size ${chunkSize} is not positive`);
    }
    this.#source = source;
    this.safetensorsHeader = header;
    const metadata: ModelMetadata = { original_format: "safetensors" };
    if (header.metadata !== undefined) metadata["source_metadata"] = { ...header.metadata };
    this.header = {
      format: "safetensors",
      metadata,
      tensors: header.tensors.map(({ name, dtype, shape, byteLength }) => ({
        name,
        dtype,
        shape,
        byteLength,
      })),
    };
    this.#chunkSize = chunkSize;
  }

  /**
   * One entry per tensor, in file (data offset) order. Made on first use:
   * reading only the header (`apr inspect` of 261,000 tensors) does not
   * need a pair of closures per tensor (issue 34 §1).
   */
  get tensors(): readonly TensorEntry[] {
    this.#tensors ??= this.#entries();
    return this.#tensors;
  }

  #entries(): TensorEntry[] {
    return this.header.tensors.map((_, i) => this.entry(i));
  }

  /**
   * Entry `index` of {@linkcode SafetensorsReader.tensors}, made afresh
   * (streaming the model makes one at a time, see `modelChunks`).
   *
   * @param index Position in `header.tensors`.
   * @returns The entry.
   * @throws {TypeError} (from its `open()`) When the reader is closed.
   */
  entry(index: number): TensorEntry {
    const header = this.safetensorsHeader;
    const chunkSize = this.#chunkSize;
    const tensor = header.tensors[index]!;
    const start = header.dataOffset + tensor.dataOffsets[0];
    const end = header.dataOffset + tensor.dataOffsets[1];
    return {
      info: this.header.tensors[index]!,
      open: (): ReadableStream<Uint8Array> => {
        if (this.#closed) {
          throw new TypeError(`Cannot read tensor "${tensor.name}": the reader is closed`);
        }
        return this.#source.stream(start, end, chunkSize);
      },
      slice: (from: number, to: number): ReadableStream<Uint8Array> =>
        this.#source.stream(start + from, start + to, chunkSize),
    };
  }

  /**
   * Close the file. Safe to call twice.
   * Never throws. Closing twice is harmless.
   *
   * @returns When the file is closed.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#source.close();
  }
}

/**
 * Open a SafeTensors file: read and validate its header (FORMATS.md §1) and
 * give random access to every tensor. Only the header is read now.
 *
 * @example Usage
 * ```ts
 * import { openSafetensors } from "./reader.ts";
 * import { encodeSafetensors } from "./encode.ts";
 * import { BlobSource } from "../../io/blob_source.ts";
 * const bytes = encodeSafetensors({
 *   tensors: [{ name: "w", dtype: "U8", shape: [2], data: new Uint8Array([1, 2]) }],
 * });
 * const reader = await openSafetensors(new BlobSource(new Blob([bytes])));
 * console.assert(reader.header.tensors[0]?.name === "w");
 * await reader.close();
 * ```
 *
 * @param source The file; the reader owns it from now on (closed with the
 * reader, or here if the header is invalid).
 * @param options Payload chunk size.
 * @returns The reader.
 * @throws {ModelFormatError} When the file is not valid SafeTensors.
 */
export async function openSafetensors(
  source: ByteSource,
  options: OpenSafetensorsOptions = {},
): Promise<SafetensorsReader> {
  const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
  if (!Number.isSafeInteger(chunkSize) || chunkSize <= 0) {
    throw new RangeError(`Cannot open "${source.name}": chunk size ${chunkSize} is not positive`);
  }
  let header: SafetensorsHeader;
  try {
    header = await parseSafetensorsHeader(source);
  } catch (error) {
    await source.close();
    throw error;
  }
  return new SafetensorsReader(source, header, chunkSize);
}
