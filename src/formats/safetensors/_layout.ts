// This module is browser compatible.

/**
 * How aprkit lays out a SafeTensors file: shared by the in-memory encoder and
 * the streaming sink so both write byte-identical files.
 *
 * @module
 */

import { DTYPES, tensorByteLength } from "../../dtype.ts";
import { UsageError } from "../../errors.ts";
import type { TensorInfo } from "../../tensor.ts";
import { MAX_HEADER_BYTES, MAX_HEADER_JSON_VALUES, MAX_TENSORS } from "./header.ts";

/** Bytes of the length prefix. */
const PREFIX_BYTES = 8;

/**
 * The official writer pads the JSON with spaces so the data starts at a
 * multiple of 8; readers that map the file can then view it in place.
 */
const DATA_ALIGNMENT = 8;

/**
 * Check that tensors can be written as SafeTensors, before any I/O.
 *
 * @param tensors The tensors, in the order they will be written.
 * @throws {TypeError} For a dtype SafeTensors lacks, a reserved or repeated name.
 * @throws {RangeError} When a byteLength disagrees with dtype × shape.
 */
export function checkSafetensorsTensors(tensors: readonly TensorInfo[]): void {
  const seen = new Set<string>();
  for (const t of tensors) {
    if (t.name === "__metadata__") {
      throw new TypeError(
        `Cannot write tensor "__metadata__" as SafeTensors: the name is reserved for metadata`,
      );
    }
    if (seen.has(t.name)) {
      throw new TypeError(`Cannot write SafeTensors: tensor "${t.name}" appears twice`);
    }
    seen.add(t.name);
    if (DTYPES[t.dtype].safetensors === undefined) {
      throw new TypeError(
        `Cannot write tensor "${t.name}" as SafeTensors: it is ${t.dtype}, which SafeTensors cannot hold; export with float32: true`,
      );
    }
    const expected = tensorByteLength(t.dtype, t.shape);
    if (expected !== t.byteLength) {
      throw new RangeError(
        `Cannot write tensor "${t.name}" as SafeTensors: ${t.dtype} [${t.shape}] is ${expected} bytes, not ${t.byteLength}`,
      );
    }
  }
}

/** The header bytes of one file and where each tensor's data goes in it. */
export interface SafetensorsLayout {
  /** Length prefix, JSON and padding: the first `dataOffset` bytes of the file. */
  readonly headerBytes: Uint8Array;
  /** Absolute offset where data starts (a multiple of 8). */
  readonly dataOffset: number;
  /** Absolute file offset of each tensor's data, in input order. */
  readonly offsets: readonly number[];
  /** Total file size. */
  readonly fileSize: number;
}

/**
 * Lay out one SafeTensors file: tensors in the given order, contiguous.
 *
 * @param tensors The tensors, already checked with {@linkcode checkSafetensorsTensors}.
 * @param metadata `__metadata__`, written first when given.
 * @param path The file being written, for error messages.
 * @returns The header bytes and offsets.
 * @throws {UsageError} When readers would refuse the header: more than
 *   {@linkcode MAX_HEADER_BYTES} bytes (the official library's cap and ours),
 *   more than {@linkcode MAX_TENSORS} tensors or {@linkcode MAX_HEADER_JSON_VALUES}
 *   JSON values (our reader's caps). Thrown before any byte is written.
 */
export function layoutSafetensors(
  tensors: readonly TensorInfo[],
  metadata: Readonly<Record<string, string>> | undefined,
  path?: string,
): SafetensorsLayout {
  const parts: string[] = [];
  if (metadata !== undefined) parts.push(`"__metadata__":${JSON.stringify(metadata)}`);
  let position = 0;
  const relative: number[] = [];
  for (const t of tensors) {
    const name = DTYPES[t.dtype].safetensors!;
    parts.push(
      `${JSON.stringify(t.name)}:{"dtype":"${name}","shape":[${
        t.shape.join(",")
      }],"data_offsets":[${position},${position + t.byteLength}]}`,
    );
    relative.push(position);
    position += t.byteLength;
  }
  const json = new TextEncoder().encode(`{${parts.join(",")}}`);
  checkReadable(tensors, metadata, json.length, path);
  const padded = Math.ceil(json.length / DATA_ALIGNMENT) * DATA_ALIGNMENT;
  const headerBytes = new Uint8Array(PREFIX_BYTES + padded).fill(0x20, PREFIX_BYTES + json.length);
  new DataView(headerBytes.buffer).setBigUint64(0, BigInt(padded), true);
  headerBytes.set(json, PREFIX_BYTES);
  const dataOffset = PREFIX_BYTES + padded;
  return {
    headerBytes,
    dataOffset,
    offsets: relative.map((r) => dataOffset + r),
    fileSize: dataOffset + position,
  };
}

/**
 * Refuse a header that SafeTensors readers would refuse: writing it would
 * leave a file nobody can open (issue 9). Metadata is not trimmed: dropping
 * part of a model's metadata silently would change what the file says.
 */
function checkReadable(
  tensors: readonly TensorInfo[],
  metadata: Readonly<Record<string, string>> | undefined,
  jsonBytes: number,
  path: string | undefined,
): void {
  const file = path === undefined ? "SafeTensors" : `SafeTensors file "${path}"`;
  // Only worked out for the message: the check itself costs no copy.
  const what = () =>
    `${tensors.length} tensor${tensors.length === 1 ? "" : "s"} and ${
      metadata === undefined ? 0 : new TextEncoder().encode(JSON.stringify(metadata)).length
    } bytes of metadata`;
  // The padded length is what the prefix declares and readers check.
  const padded = Math.ceil(jsonBytes / DATA_ALIGNMENT) * DATA_ALIGNMENT;
  if (padded > MAX_HEADER_BYTES) {
    throw new UsageError(
      `Cannot write ${file}: the header (${what()}) would be ${padded} bytes, more than the ${MAX_HEADER_BYTES} SafeTensors readers accept; remove metadata from the source or export to GGUF or APR`,
    );
  }
  if (tensors.length > MAX_TENSORS) {
    throw new UsageError(
      `Cannot write ${file}: one file would hold ${tensors.length} tensors, more than the ${MAX_TENSORS} aprkit reads; split it into shards with maxShardSize`,
    );
  }
  // As the reader counts: the root object, each tensor's object, dtype, shape
  // array, its dimensions, offsets array and two offsets; the metadata object
  // and its keys' values.
  let values = 1 + (metadata === undefined ? 0 : 1 + Object.keys(metadata).length);
  for (const t of tensors) values += 6 + t.shape.length;
  if (values > MAX_HEADER_JSON_VALUES) {
    throw new UsageError(
      `Cannot write ${file}: the header (${what()}) would hold ${values} JSON values, more than the ${MAX_HEADER_JSON_VALUES} aprkit reads`,
    );
  }
}

/**
 * Keep only the string values of metadata: `__metadata__` is string → string.
 *
 * @param value Anything (typically `ModelMetadata.source_metadata`).
 * @returns The string entries, or `undefined` when `value` is not an object.
 */
export function stringEntries(value: unknown): Record<string, string> | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v === "string") {
      Object.defineProperty(out, k, {
        value: v,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return out;
}
