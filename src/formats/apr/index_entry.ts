// This module is browser compatible.

/**
 * APR v2 tensor index entries (APR_V2.md §4): packed, sorted by the UTF-8
 * bytes of the name.
 *
 * @module
 */

import { type DType, dtypeFromAprCode, DTYPES, elementCount } from "../../dtype.ts";
import { ModelFormatError } from "../../errors.ts";
import { readAprU64 } from "./header.ts";

/** Longest tensor name in UTF-8 bytes (APR_V2.md §4: reject, never truncate). */
export const APR_MAX_NAME_BYTES = 256;

/** Most dimensions a tensor may have (APR_V2.md §4). */
export const APR_MAX_DIMS = 8;

/** Legacy dtype code for BF16, valid on read only when the payload is 2 bytes per element (APR_V2.md §5). */
export const APR_LEGACY_BF16_CODE = 2;

/** One decoded tensor index entry. */
export interface AprIndexEntry {
  /** Tensor name. */
  readonly name: string;
  /** Element type. */
  readonly dtype: DType;
  /** The dtype code as stored (may be a read-only code such as 128 or 2). */
  readonly dtypeCode: number;
  /** Dimensions, outermost first. */
  readonly shape: readonly number[];
  /** Payload offset relative to the header's data_offset. */
  readonly offset: number;
  /** Exact payload size in bytes. */
  readonly size: number;
  /** Absolute byte offset of this index entry in the file (for messages). */
  readonly entryOffset: number;
}

/** What {@linkcode encodeAprIndex} needs per tensor. */
export interface AprIndexEntryInit {
  /** Tensor name. */
  readonly name: string;
  /** Element type (must have an APR code). */
  readonly dtype: DType;
  /** Dimensions, outermost first. */
  readonly shape: readonly number[];
  /** Payload offset relative to data_offset. */
  readonly offset: number;
  /** Exact payload size in bytes. */
  readonly size: number;
}

/**
 * Compare two strings by their UTF-8 bytes (the order of APR's index), which
 * is code point order. JavaScript's `<` compares UTF-16 units and disagrees
 * when one side is a surrogate and the other is in U+E000–U+FFFF (e.g. U+FB00
 * sorts after U+1D538 in JS, before it in UTF-8).
 *
 * @example Usage
 * ```ts
 * import { compareUtf8Bytes } from "./index_entry.ts";
 * console.assert(compareUtf8Bytes("\uFB00", "\u{1D538}") < 0);
 * ```
 *
 * @param a First string.
 * @param b Second string.
 * @returns Negative, zero or positive, as for `Array.prototype.sort`.
 */
export function compareUtf8Bytes(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Move surrogates above U+E000–U+FFFF so unit order becomes code point order.
    if (x >= 0xd800) x += x < 0xe000 ? 0x2000 : -0x800;
    if (y >= 0xd800) y += y < 0xe000 ? 0x2000 : -0x800;
    return x - y;
  }
  return a.length - b.length;
}

/** One encoder for every name (a new one per name cost more than the name). */
const UTF8 = new TextEncoder();

/**
 * UTF-8 length of a tensor name, without encoding it; lone surrogates
 * cannot be encoded faithfully, so reject them.
 */
function nameByteLength(name: string): number {
  if (!name.isWellFormed()) {
    throw new TypeError(`Cannot use tensor name ${JSON.stringify(name)}: it is not valid Unicode`);
  }
  let bytes = name.length;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    // A surrogate pair is 2 units and 4 bytes; U+0080–U+07FF 2 bytes, the rest of the BMP 3.
    if (c >= 0x80) bytes += c < 0x800 || (c >= 0xd800 && c < 0xe000) ? 1 : 2;
  }
  if (bytes > APR_MAX_NAME_BYTES) {
    throw new RangeError(
      `Cannot use tensor name "${
        name.slice(0, 40)
      }…": ${bytes} UTF-8 bytes exceeds the ${APR_MAX_NAME_BYTES}-byte limit of APR v2`,
    );
  }
  return bytes;
}

/**
 * Check that a tensor can be named and shaped in an APR index entry.
 *
 * @param name Tensor name.
 * @param dtype Element type.
 * @param shape Dimensions.
 * @throws {RangeError} When the name exceeds 256 UTF-8 bytes, the tensor has more than 8 dims, or a dim is invalid.
 * @throws {TypeError} When the dtype has no APR code or the name is not valid Unicode.
 */
export function checkAprTensor(name: string, dtype: DType, shape: readonly number[]): void {
  nameByteLength(name);
  const spec = DTYPES[dtype];
  if (spec === undefined || spec.aprCode === undefined) {
    throw new TypeError(
      `Cannot store tensor "${name}" in APR: dtype ${dtype} has no APR v2 code (convert or quantize it first)`,
    );
  }
  if (shape.length > APR_MAX_DIMS) {
    throw new RangeError(
      `Cannot store tensor "${name}" in APR: ${shape.length} dimensions exceed the limit of ${APR_MAX_DIMS}`,
    );
  }
  elementCount(shape);
}

/**
 * Encode index entries, in the order given (callers sort them with
 * {@linkcode compareUtf8Bytes}).
 *
 * @param entries The entries.
 * @returns The packed, unpadded index bytes.
 * @throws {RangeError|TypeError} When an entry breaks a limit (see {@linkcode checkAprTensor}).
 */
export function encodeAprIndex(entries: readonly AprIndexEntryInit[]): Uint8Array {
  // Sized first and each name encoded in place: a buffer per name was
  // ~200 bytes a tensor of garbage (issue 34 §1, 261,000 tensors).
  let total = 0;
  for (const e of entries) {
    checkAprTensor(e.name, e.dtype, e.shape);
    total += 2 + nameByteLength(e.name) + 2 + 8 * e.shape.length + 16;
  }
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let p = 0;
  for (const e of entries) {
    const { written } = UTF8.encodeInto(e.name, out.subarray(p + 2));
    view.setUint16(p, written, true);
    p += 2 + written;
    out[p++] = DTYPES[e.dtype].aprCode!;
    out[p++] = e.shape.length;
    for (const d of e.shape) {
      view.setBigUint64(p, BigInt(d), true);
      p += 8;
    }
    view.setBigUint64(p, BigInt(e.offset), true);
    view.setBigUint64(p + 8, BigInt(e.size), true);
    p += 16;
  }
  return out;
}

/**
 * Decode `count` packed index entries. Checks each entry's own rules:
 * truncation, name length and UTF-8, ndim, dtype code (legacy code 2 as BF16
 * only at 2 bytes per element). Sorting and extents are the reader's checks.
 *
 * @param bytes The index region.
 * @param count Number of entries (the header's tensor_count).
 * @param path File name, for messages.
 * @param baseOffset Absolute offset of `bytes` in the file, for messages.
 * @returns The entries, in stored order.
 * @throws {ModelFormatError} When an entry is malformed.
 */
export function parseAprIndex(
  bytes: Uint8Array,
  count: number,
  path = "<memory>",
  baseOffset = 0,
): AprIndexEntry[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const entries: AprIndexEntry[] = [];
  let p = 0;
  const fail = (reason: string, at: number): never => {
    throw new ModelFormatError("APR", path, reason, { offset: baseOffset + at });
  };
  const need = (n: number, i: number, start: number): void => {
    if (p + n > bytes.length) {
      fail(
        `tensor index truncated: entry ${i} needs bytes past the end of the index region (${bytes.length} bytes)`,
        start,
      );
    }
  };
  for (let i = 0; i < count; i++) {
    const start = p;
    need(2, i, start);
    const nameLength = view.getUint16(p, true);
    if (nameLength > APR_MAX_NAME_BYTES) {
      fail(
        `tensor ${i} name is ${nameLength} bytes, over the ${APR_MAX_NAME_BYTES}-byte limit`,
        p,
      );
    }
    p += 2;
    need(nameLength + 2, i, start);
    let name: string;
    try {
      name = decoder.decode(bytes.subarray(p, p + nameLength));
    } catch (cause) {
      throw new ModelFormatError("APR", path, `tensor ${i} name is not valid UTF-8`, {
        offset: baseOffset + p,
        cause,
      });
    }
    p += nameLength;
    const dtypeCode = bytes[p]!;
    const codeAt = p;
    const ndim = bytes[p + 1]!;
    if (ndim > APR_MAX_DIMS) {
      fail(`tensor "${name}" has ${ndim} dimensions, over the limit of ${APR_MAX_DIMS}`, p + 1);
    }
    p += 2;
    need(8 * ndim + 16, i, start);
    const shape: number[] = [];
    for (let d = 0; d < ndim; d++) {
      shape.push(readAprU64(view, p, `tensor "${name}" dimension ${d}`, path, baseOffset + p));
      p += 8;
    }
    const offset = readAprU64(view, p, `tensor "${name}" offset`, path, baseOffset + p);
    const size = readAprU64(view, p + 8, `tensor "${name}" size`, path, baseOffset + p + 8);
    p += 16;
    let dtype = dtypeFromAprCode(dtypeCode);
    if (dtype === undefined && dtypeCode === APR_LEGACY_BF16_CODE) {
      let elements: number | undefined;
      try {
        elements = elementCount(shape);
      } catch {
        elements = undefined;
      }
      if (elements !== undefined && size === elements * 2) dtype = "BF16";
    }
    if (dtype === undefined) {
      fail(
        dtypeCode === APR_LEGACY_BF16_CODE
          ? `tensor "${name}" has dtype code 2 (legacy BF16) but its size ${size} is not 2 bytes per element`
          : `tensor "${name}" has unknown dtype code ${dtypeCode}`,
        codeAt,
      );
    }
    entries.push({
      name,
      dtype: dtype!,
      dtypeCode,
      shape,
      offset,
      size,
      entryOffset: baseOffset + start,
    });
  }
  return entries;
}
