// This module is browser compatible.

/**
 * The 64-byte APR v2 header (APR_V2.md §2): encode and strict parse.
 *
 * @module
 */

import { ModelFormatError } from "../../errors.ts";
import { hexBytes, hexWord } from "../_hex.ts";
import { crc32 } from "./crc32.ts";

/** Size of the fixed header. */
export const APR_HEADER_SIZE = 64;

/** `"APR\0"`, the magic of every APR v2 file. */
export const APR_MAGIC: Uint8Array = new Uint8Array([0x41, 0x50, 0x52, 0x00]);

/** Header flag bits (APR_V2.md §2). Writers set exactly `LAYOUT_ROW_MAJOR`. */
export const APR_FLAGS = {
  /** Everything after the header is one LZ4 block. */
  LZ4: 0x0001,
  /** Zstandard compression. */
  ZSTD: 0x0002,
  /** Encrypted payload. */
  ENCRYPTED: 0x0004,
  /** Signed file. */
  SIGNED: 0x0008,
  /** One shard of a sharded set. */
  SHARDED: 0x0010,
  /** Holds quantized tensors. */
  QUANTIZED: 0x0020,
  /** Holds a filterbank. */
  HAS_FILTERBANK: 0x0040,
  /** Holds a model card. */
  HAS_MODEL_CARD: 0x0080,
  /** Written for streaming. */
  STREAMING: 0x0100,
  /** Holds a vocabulary. */
  HAS_VOCAB: 0x0200,
  /** Row-major tensors (required). */
  LAYOUT_ROW_MAJOR: 0x0400,
  /** Column-major tensors: aprender rejects the file. */
  LAYOUT_COLUMN_MAJOR: 0x0800,
} as const;

/** The decoded fields of an APR v2 header. */
export interface AprHeader {
  /** Major version (2). */
  readonly versionMajor: number;
  /** Minor version (0). */
  readonly versionMinor: number;
  /** Flag bits, see {@linkcode APR_FLAGS}. */
  readonly flags: number;
  /** Number of tensor index entries. */
  readonly tensorCount: number;
  /** Byte offset of the metadata JSON (64). */
  readonly metadataOffset: number;
  /** Unpadded metadata JSON length. */
  readonly metadataSize: number;
  /** Byte offset of the tensor index. */
  readonly tensorIndexOffset: number;
  /** Byte offset of the tensor data; the index ends here. */
  readonly dataOffset: number;
  /** The stored header CRC32. */
  readonly headerCrc: number;
}

/** The fields a writer chooses; see {@linkcode encodeAprHeader}. */
export interface AprHeaderFields {
  /** Flag bits. @default {APR_FLAGS.LAYOUT_ROW_MAJOR} */
  flags?: number;
  /** Number of tensor index entries. */
  tensorCount: number;
  /** Unpadded metadata JSON length. */
  metadataSize: number;
  /** Byte offset of the tensor index. */
  tensorIndexOffset: number;
  /** Byte offset of the tensor data. */
  dataOffset: number;
}

/**
 * CRC32 of a header's bytes `[0,40) ++ [44,64)`, the value stored at byte 40.
 *
 * @param header At least the 64 header bytes.
 * @returns The CRC.
 */
export function aprHeaderCrc(header: Uint8Array): number {
  return crc32(header.subarray(44, 64), crc32(header.subarray(0, 40)));
}

/**
 * Encode a 64-byte header, CRC computed last.
 *
 * @example Usage
 * ```ts
 * import { encodeAprHeader } from "./header.ts";
 * const bytes = encodeAprHeader({ tensorCount: 0, metadataSize: 2, tensorIndexOffset: 128, dataOffset: 128 });
 * console.assert(bytes.length === 64);
 * ```
 *
 * @param fields Counts and offsets.
 * @returns The header bytes.
 * @throws {RangeError} When a field does not fit its slot.
 */
export function encodeAprHeader(fields: AprHeaderFields): Uint8Array {
  const flags = fields.flags ?? APR_FLAGS.LAYOUT_ROW_MAJOR;
  checkUint("flags", flags, 0xffff);
  checkUint("tensorCount", fields.tensorCount, 0xffffffff);
  checkUint("metadataSize", fields.metadataSize, 0xffffffff);
  checkUint("tensorIndexOffset", fields.tensorIndexOffset, Number.MAX_SAFE_INTEGER);
  checkUint("dataOffset", fields.dataOffset, Number.MAX_SAFE_INTEGER);
  const bytes = new Uint8Array(APR_HEADER_SIZE);
  const view = new DataView(bytes.buffer);
  bytes.set(APR_MAGIC, 0);
  bytes[4] = 2;
  bytes[5] = 0;
  view.setUint16(6, flags, true);
  view.setUint32(8, fields.tensorCount, true);
  view.setBigUint64(12, BigInt(APR_HEADER_SIZE), true);
  view.setUint32(20, fields.metadataSize, true);
  view.setBigUint64(24, BigInt(fields.tensorIndexOffset), true);
  view.setBigUint64(32, BigInt(fields.dataOffset), true);
  view.setUint32(40, aprHeaderCrc(bytes), true);
  return bytes;
}

function checkUint(field: string, value: number, max: number): void {
  if (!Number.isSafeInteger(value) || value < 0 || value > max) {
    throw new RangeError(
      `Cannot encode APR header: ${field} ${value} is not an integer in [0, ${max}]`,
    );
  }
}

/**
 * Read a u64 as a Number, rejecting values beyond 2^53 (no file is that large).
 *
 * @param view The bytes.
 * @param at Offset of the u64 in `view`.
 * @param what Field name, for the message.
 * @param path File name, for the message.
 * @param fileOffset Absolute offset of the field, for the message.
 * @returns The value.
 */
export function readAprU64(
  view: DataView,
  at: number,
  what: string,
  path: string,
  fileOffset: number,
): number {
  const value = view.getBigUint64(at, true);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new ModelFormatError("APR", path, `${what} ${value} exceeds 2^53`, {
      offset: fileOffset,
    });
  }
  return Number(value);
}

/**
 * Parse and check the 64-byte header: size, magic (naming the older v1 format
 * `APR\0` + u32 1), version 2.0, header CRC, and no column-major flag
 * (APR_V2.md §6). Offsets are checked against the file by the reader.
 *
 * @example Usage
 * ```ts
 * import { encodeAprHeader, parseAprHeader } from "./header.ts";
 * const h = parseAprHeader(encodeAprHeader({ tensorCount: 0, metadataSize: 2, tensorIndexOffset: 128, dataOffset: 128 }));
 * console.assert(h.dataOffset === 128);
 * ```
 *
 * @param bytes The first bytes of the file (64, or all of a shorter file).
 * @param path File name, for messages.
 * @param options `lz4: true` accepts flag LZ4 (the caller decompresses, APR_V2.md §8).
 * @returns The decoded header.
 * @throws {ModelFormatError} When the header breaks a rule.
 */
export function parseAprHeader(
  bytes: Uint8Array,
  path = "<memory>",
  options: { lz4?: boolean } = {},
): AprHeader {
  const fail = (reason: string, offset: number): never => {
    throw new ModelFormatError("APR", path, reason, { offset });
  };
  if (bytes.length >= 4 && !APR_MAGIC.every((b, i) => bytes[i] === b)) {
    const seen = hexBytes(bytes.subarray(0, 4));
    fail(`wrong magic: expected 41 50 52 00 ("APR\\0"), found ${seen}`, 0);
  }
  // aprender's older single-model format (e.g. tsp-*-aco.apr) starts "APR\0"
  // then a u32 version 1; APR v2 has bytes 2, 0 there.
  if (bytes.length >= 8 && bytes[4] === 1 && bytes[5] === 0 && bytes[6] === 0 && bytes[7] === 0) {
    fail(
      "this is an APR v1 file (magic APR\\0 then u32 version 1, the older aprender model format), not APR v2",
      4,
    );
  }
  if (bytes.length < APR_HEADER_SIZE) {
    fail(`file too short: ${bytes.length} bytes, an APR v2 header needs ${APR_HEADER_SIZE}`, 0);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, APR_HEADER_SIZE);
  const versionMajor = bytes[4]!;
  const versionMinor = bytes[5]!;
  if (versionMajor !== 2 || versionMinor !== 0) {
    fail(`unsupported version ${versionMajor}.${versionMinor}: only 2.0 is APR v2`, 4);
  }
  const headerCrc = view.getUint32(40, true);
  const actual = aprHeaderCrc(bytes);
  if (headerCrc !== actual) {
    fail(
      `header CRC mismatch: stored 0x${hexWord(headerCrc)}, computed 0x${hexWord(actual)}`,
      40,
    );
  }
  const flags = view.getUint16(6, true);
  if ((flags & APR_FLAGS.LAYOUT_COLUMN_MAJOR) !== 0) {
    fail("column-major layout (flag 0x0800) is not supported: tensors must be row-major", 6);
  }
  const unsupported = flags &
    ((options.lz4 ? 0 : APR_FLAGS.LZ4) | APR_FLAGS.ZSTD | APR_FLAGS.ENCRYPTED);
  if (unsupported !== 0) {
    const names = Object.entries(APR_FLAGS).filter(([, bit]) => (unsupported & bit) !== 0)
      .map(([n]) => n);
    fail(
      `unsupported flags 0x${unsupported.toString(16).padStart(4, "0")} (${names.join(", ")})`,
      6,
    );
  }
  return {
    versionMajor,
    versionMinor,
    flags,
    tensorCount: view.getUint32(8, true),
    metadataOffset: readAprU64(view, 12, "metadata_offset", path, 12),
    metadataSize: view.getUint32(20, true),
    tensorIndexOffset: readAprU64(view, 24, "tensor_index_offset", path, 24),
    dataOffset: readAprU64(view, 32, "data_offset", path, 32),
    headerCrc,
  };
}
