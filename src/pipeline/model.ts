// This module is browser compatible.

/**
 * A model opened for reading, whatever its format: its header, its stream of
 * chunks for the pipeline, and random access to each tensor's bytes or
 * decoded values.
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import { decodeToFloat32 } from "../quant/decode.ts";
import { wholePayload } from "./whole_payload.ts";
import {
  type ModelChunk,
  modelChunks,
  type ModelHeader,
  type ModelReader,
  type TensorEntry,
  type TensorInfo,
} from "../tensor.ts";

/** One tensor of an opened {@linkcode Model}. */
export class ModelTensor {
  /** Name, dtype, shape and payload size. */
  readonly info: TensorInfo;
  #entry: TensorEntry;

  /**
   * Wrap a tensor entry.
   * Never throws.
   *
   * @param entry The entry from a format reader.
   */
  constructor(entry: TensorEntry) {
    this.#entry = entry;
    this.info = entry.info;
  }

  /**
   * The raw payload as a stream of bounded chunks.
   *
   * @returns The payload chunks.
   * @throws {ModelFormatError} Through the stream, when the source is truncated or its bytes fail a check (e.g. an LZ4 block).
   */
  stream(): ReadableStream<Uint8Array> {
    return this.#entry.open();
  }

  /**
   * The raw payload in one array, in its native dtype (f16/bf16 bits, Q4_K
   * blocks…). Holds the whole tensor in memory: for big tensors prefer
   * {@linkcode ModelTensor.stream}.
   *
   * @returns The payload.
   * @throws {RangeError} When the payload is longer or shorter than the tensor's size.
   * @throws {ModelFormatError} When the source is truncated or its bytes fail a check.
   */
  bytes(): Promise<Uint8Array> {
    return wholePayload(this.#entry.open(), this.info.byteLength, this.info.name);
  }

  /**
   * The values decoded to float32, for any dtype.
   *
   * @returns The decoded values.
   * @throws {RangeError} When the payload is longer or shorter than the tensor's size.
   * @throws {ModelFormatError} When the source is truncated or its bytes fail a check.
   */
  async toFloat32(): Promise<Float32Array> {
    return decodeToFloat32(this.info.dtype, await this.bytes(), this.info.shape);
  }
}

/** A model opened by {@linkcode openModel}: any format, local or remote. */
export class Model {
  /** Format, APR-vocabulary metadata and tensor infos. */
  readonly header: ModelHeader;
  /** Where the model came from (path, URL or `hf://` name), for messages. */
  readonly location: string;
  /** The format reader underneath (an `AprReader`, `GgufReader`…), for format-specific detail. */
  readonly reader: ModelReader;
  /** Built on the first lookup: `inspect` of 261,000 tensors never needs it (issue 34 §1). */
  #byName: Map<string, TensorEntry> | undefined;
  #verify: () => Promise<void>;
  #onClose: (() => Promise<void>) | undefined;

  /**
   * Wrap a format reader.
   * Never throws.
   *
   * @param reader The reader; closed by {@linkcode Model.close}.
   * @param location Where the model came from.
   * @param verify Checks the source's bytes against what its server announced
   *   (see {@linkcode Model.verify}), besides the reader's own check.
   * @param onClose Run before the reader closes (saves what a later run continues); must not throw.
   */
  constructor(
    reader: ModelReader,
    location: string,
    verify?: () => Promise<void>,
    onClose?: () => Promise<void>,
  ) {
    this.#onClose = onClose;
    this.reader = reader;
    this.header = reader.header;
    this.location = location;
    this.#verify = async () => {
      await reader.verify?.();
      await verify?.();
    };
  }

  /**
   * Check the bytes read against the checksums the source announced, reading
   * what was not read yet: an APR file against its footer CRC, a Hub model
   * streamed without the cache against its LFS sha256s. Call it before keeping anything made from
   * the model; `convertModel` does so before it renames its output.
   *
   * @throws {ModelFormatError} When an APR file's data does not match its footer CRC.
   * @throws {HubAnswerError} When a downloaded file differs from its sha256.
   */
  verify(): Promise<void> {
    return this.#verify();
  }

  /**
   * Tensor names in stream order.
   * Never throws.
   *
   * @returns The names.
   */
  names(): string[] {
    return this.reader.tensors.map((t) => t.info.name);
  }

  /**
   * The model as a stream: the header chunk, then one chunk per tensor.
   * Never throws. Reading a tensor's payload can fail as {@linkcode ModelTensor.stream} does.
   *
   * @returns The stream.
   */
  chunks(): ReadableStream<ModelChunk> {
    return modelChunks(this.reader);
  }

  /**
   * One tensor by name.
   *
   * @param name The tensor's name.
   * @returns The tensor.
   * @throws {UsageError} When the model has no tensor of that name.
   */
  tensor(name: string): ModelTensor {
    this.#byName ??= new Map(this.reader.tensors.map((t) => [t.info.name, t]));
    const entry = this.#byName.get(name);
    if (!entry) throw new UsageError(`Cannot find tensor "${name}" in "${this.location}"`);
    return new ModelTensor(entry);
  }

  /**
   * Release files and connections.
   * Never throws. Closing twice is harmless.
   *
   * @returns When everything is released.
   */
  async close(): Promise<void> {
    await this.#onClose?.();
    await this.reader.close();
  }
}
