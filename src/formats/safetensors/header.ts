// This module is browser compatible.

/**
 * The SafeTensors header codec (FORMATS.md §1): an 8-byte little-endian u64
 * length `N`, then `N` bytes of UTF-8 JSON describing every tensor, then the
 * tensor bytes. Parsing reads only the header, never tensor data, and checks
 * every rule of FORMATS.md S1–S18 before anything is trusted.
 *
 * @module
 */

import { type DType, dtypeFromSafetensors, DTYPES, tensorByteLength } from "../../dtype.ts";
import { ModelFormatError } from "../../errors.ts";
import type { ByteSource } from "../../io/byte_source.ts";
import { withSourceOf } from "../../io/source_of.ts";
import type { TensorInfo } from "../../tensor.ts";
import {
  JsonNumber,
  JsonObject,
  JsonSyntaxError,
  type JsonValue,
  parseJsonStrict,
} from "./_json.ts";

/**
 * Largest header accepted, in bytes (FORMATS.md S2). The reference Rust loader
 * uses the same cap: a header that size describes millions of tensors, and the
 * check runs before the header buffer is allocated.
 */
export const MAX_HEADER_BYTES = 100_000_000;
/**
 * Most tensors in one file. The largest real checkpoints have fewer than
 * 10^5 tensors in all their shards; a header of millions of tiny entries is an
 * attempt to exhaust memory (docs/SECURITY.md).
 */
export const MAX_TENSORS = 262_144;
/**
 * Most JSON values in a header: a tensor entry is 6 plus its dimensions (its
 * object, dtype, shape, offsets), so this admits {@linkcode MAX_TENSORS}
 * tensors of 4 dimensions (real files have < 10^5 tensors: < 10^6 values),
 * and stops a header of millions of tiny values before they are allocated.
 * Parsed values cost ~250 bytes each: at 16 per tensor, a header of a million
 * tiny entries peaked at 1.09 GB; at 10, under 1 GiB whatever the header holds.
 */
export const MAX_HEADER_JSON_VALUES = MAX_TENSORS * 10;

/** Bytes of the length prefix. */
const PREFIX_BYTES = 8;

/** The key holding free-form string metadata instead of a tensor. */
const METADATA_KEY = "__metadata__";

/** One tensor of a SafeTensors header. */
export interface SafetensorsTensorInfo extends TensorInfo {
  /** `[BEGIN, END)` as written, relative to the start of the data (byte `8 + N`). */
  readonly dataOffsets: readonly [number, number];
}

/** A parsed and validated SafeTensors header. */
export interface SafetensorsHeader {
  /** `N`, the JSON length from the prefix (trailing padding included). */
  readonly headerByteLength: number;
  /** Absolute file offset where tensor data starts: `8 + N`. */
  readonly dataOffset: number;
  /** Total bytes of tensor data (the last END). */
  readonly dataByteLength: number;
  /** `__metadata__`, or `undefined` when the header has none. */
  readonly metadata: Readonly<Record<string, string>> | undefined;
  /** Every tensor, sorted by data offset (file order). */
  readonly tensors: readonly SafetensorsTensorInfo[];
}

/**
 * Read and validate the header of a SafeTensors file.
 *
 * @example Usage
 * ```ts
 * import { parseSafetensorsHeader } from "./header.ts";
 * import { BlobSource } from "../../io/blob_source.ts";
 * const json = new TextEncoder().encode('{"x":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}');
 * const prefix = new Uint8Array(8);
 * new DataView(prefix.buffer).setBigUint64(0, BigInt(json.length), true);
 * const file = new Blob([prefix, json, new Uint8Array(4)]);
 * const header = await parseSafetensorsHeader(new BlobSource(file, "x.safetensors"));
 * console.assert(header.tensors[0]?.name === "x");
 * ```
 *
 * @param source The file (local, remote or Blob), or its path (opened and closed here); only its
 *   header is read.
 * @returns The header, tensors sorted by data offset.
 * @throws {ModelFormatError} When the file breaks any rule of FORMATS.md §1.
 */
export function parseSafetensorsHeader(source: ByteSource | string): Promise<SafetensorsHeader> {
  return withSourceOf(source, "SafeTensors file", parseSafetensorsSource);
}

async function parseSafetensorsSource(source: ByteSource): Promise<SafetensorsHeader> {
  const fail = (reason: string, offset?: number, cause?: unknown): ModelFormatError =>
    new ModelFormatError("SafeTensors", source.name, reason, {
      ...(offset === undefined ? {} : { offset }),
      ...(cause === undefined ? {} : { cause }),
    });

  // S1: the length prefix itself must be there.
  if (source.size < PREFIX_BYTES) {
    throw fail(
      `header too small: the file has ${source.size} bytes, fewer than the ${PREFIX_BYTES}-byte length prefix`,
      0,
    );
  }
  const prefix = await source.read(0, PREFIX_BYTES);
  // S2/S4: compare as BigInt so 2^64 − 1 cannot wrap or lose precision, and
  // before allocating anything of that size.
  const declared = new DataView(prefix.buffer, prefix.byteOffset, PREFIX_BYTES).getBigUint64(
    0,
    true,
  );
  if (declared > BigInt(MAX_HEADER_BYTES)) {
    throw fail(
      `header too large: ${declared} bytes exceeds the ${MAX_HEADER_BYTES}-byte limit`,
      0,
    );
  }
  const headerByteLength = Number(declared);
  const dataOffset = PREFIX_BYTES + headerByteLength;
  // S3/S18: the declared header must fit in the file.
  if (dataOffset > source.size) {
    throw fail(
      `truncated header: it declares ${headerByteLength} bytes but only ${
        source.size - PREFIX_BYTES
      } follow the length prefix`,
      0,
    );
  }
  const bytes = await source.read(PREFIX_BYTES, headerByteLength);

  // S5: fatal decoding, so a stray byte is an error rather than U+FFFD.
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch (cause) {
    throw fail("invalid header: the JSON is not valid UTF-8", PREFIX_BYTES, cause);
  }
  const at = (position: number): number =>
    PREFIX_BYTES + new TextEncoder().encode(text.slice(0, position)).length;

  // S6, S11: strict parse, duplicate keys reported. Entries are read as the
  // parse reaches them, so only their compact records are kept, never the
  // JSON tree of the whole header (issue 34 §1: 261,000 entries held as a
  // tree peaked near 600 MB). The reported error is still the one a parse of
  // the whole text first would give: malformed JSON anywhere, then too many
  // tensors, then the first bad entry in key order.
  let metadata: Record<string, string> | undefined;
  const tensors: SafetensorsTensorInfo[] = [];
  let entries = 0;
  let entryError: (() => ModelFormatError) | undefined;
  const onEntry = (name: string, value: JsonValue, position: number): void => {
    if (++entries > MAX_TENSORS + 1 || entryError !== undefined) return;
    // Offsets are computed only for an error: doing it per entry would be
    // quadratic in the header size.
    const entryFail: EntryFail = (reason) => new EntryRefusal(() => fail(reason, at(position)));
    try {
      if (name === METADATA_KEY) metadata = readMetadata(value, entryFail);
      else tensors.push(readTensor(name, value, entryFail));
    } catch (error) {
      if (!(error instanceof EntryRefusal)) throw error;
      entryError = error.error;
    }
  };
  let root: JsonValue;
  try {
    root = parseJsonStrict(text, MAX_HEADER_JSON_VALUES, onEntry);
  } catch (error) {
    if (!(error instanceof JsonSyntaxError)) throw error;
    if (error.duplicate?.depth === 1) {
      throw fail(
        `duplicate tensor name ${
          JSON.stringify(error.duplicate.key)
        }: it appears twice in the header`,
        at(error.position),
        error,
      );
    }
    throw fail(`invalid header: ${error.message}`, at(error.position), error);
  }
  if (!(root instanceof JsonObject)) {
    throw fail("invalid header: the JSON is not an object", PREFIX_BYTES);
  }
  if (entries > MAX_TENSORS + 1) {
    throw fail(
      `too many tensors: ${entries} entries, more than the ${MAX_TENSORS} supported`,
      PREFIX_BYTES,
    );
  }
  if (entryError !== undefined) throw entryError();

  // S10/S12: the reference loader's rule — sorted by offsets, the ranges tile
  // [0, last END) exactly. A stable sort keeps zero-size tensors in key order.
  const order = tensors.map((t, i) => ({ t, i }));
  order.sort((a, b) =>
    a.t.dataOffsets[0] - b.t.dataOffsets[0] || a.t.dataOffsets[1] - b.t.dataOffsets[1] ||
    a.i - b.i
  );
  const sorted = order.map((o) => o.t);
  let end = 0;
  let previous: SafetensorsTensorInfo | undefined;
  for (const tensor of sorted) {
    const [begin, stop] = tensor.dataOffsets;
    if (begin !== end) {
      const where = previous === undefined
        ? `the first tensor "${tensor.name}" starts at data byte ${begin}, not 0`
        : begin > end
        ? `tensor "${tensor.name}" starts at data byte ${begin}, leaving a hole after "${previous.name}" which ends at ${end}`
        : `tensor "${tensor.name}" starts at data byte ${begin}, overlapping "${previous.name}" which ends at ${end}`;
      throw fail(`invalid offsets: ${where}`, dataOffset + begin);
    }
    end = stop;
    previous = tensor;
  }

  // S15/S16: the data must end exactly at the end of the file.
  const expected = dataOffset + end;
  if (source.size > expected) {
    throw fail(
      `trailing data: ${
        source.size - expected
      } bytes after the last tensor, which ends at byte ${expected}`,
      expected,
    );
  }
  if (source.size < expected) {
    throw fail(
      `truncated: the tensors need ${expected} bytes but the file has ${source.size}`,
      source.size,
    );
  }

  return { headerByteLength, dataOffset, dataByteLength: end, metadata, tensors: sorted };
}

/** Refuses one header entry; its byte offset is computed only when the error is reported. */
type EntryFail = (reason: string) => EntryRefusal;

/**
 * Carries a bad entry's error out of the streamed parse, which must reach the
 * end of the text first: malformed JSON later in the header is reported first.
 */
class EntryRefusal {
  /** Builds the error. */
  readonly error: () => ModelFormatError;
  /** @param error Builds the error. */
  constructor(error: () => ModelFormatError) {
    this.error = error;
  }
}

function isTensorLike(value: JsonObject): boolean {
  return ["dtype", "shape", "data_offsets"].some((key) => {
    const v = value.get(key);
    return v !== undefined && typeof v !== "string";
  });
}

/** S8, S17: `__metadata__` maps strings to strings and is not a tensor. */
function readMetadata(value: JsonValue, fail: EntryFail): Record<string, string> {
  if (!(value instanceof JsonObject)) {
    throw fail(`invalid header: "${METADATA_KEY}" must be an object of strings`);
  }
  if (isTensorLike(value)) {
    throw fail(
      `invalid header: a tensor may not be named "${METADATA_KEY}" (the name is reserved for metadata)`,
    );
  }
  const metadata: Record<string, string> = {};
  for (const [i, key] of value.keys.entries()) {
    const v = value.values[i]!;
    if (typeof v !== "string") {
      throw fail(
        `invalid header: "${METADATA_KEY}" value of ${JSON.stringify(key)} is ${
          describeJson(v)
        }, not a string`,
      );
    }
    Object.defineProperty(metadata, key, {
      value: v,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return metadata;
}

function describeJson(value: JsonValue): string {
  if (value === null) return "null";
  if (value instanceof JsonNumber) return `the number ${value.raw}`;
  if (value instanceof JsonObject) return "an object";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

/** S7, S9, S13, S14: one tensor entry. */
function readTensor(
  name: string,
  value: JsonValue,
  fail: EntryFail,
): SafetensorsTensorInfo {
  const tensor = JSON.stringify(name);
  if (!(value instanceof JsonObject)) {
    throw fail(`invalid header: tensor ${tensor} is ${describeJson(value)}, not an object`);
  }

  const rawDtype = value.get("dtype");
  if (typeof rawDtype !== "string") {
    throw fail(`invalid header: tensor ${tensor} has no "dtype" string`);
  }
  const dtype: DType | undefined = dtypeFromSafetensors(rawDtype);
  if (dtype === undefined) {
    // The format is case-sensitive: "f32" is not "F32".
    const hint = dtypeFromSafetensors(rawDtype.toUpperCase()) === undefined
      ? ""
      : ` (dtypes are upper case: "${rawDtype.toUpperCase()}")`;
    throw fail(
      `invalid header: tensor ${tensor} has unknown dtype ${JSON.stringify(rawDtype)}${hint}`,
    );
  }

  const integers = (key: string, what: string): number[] => {
    const list = value.get(key);
    if (!Array.isArray(list)) {
      throw fail(`invalid header: tensor ${tensor} has no "${key}" array`);
    }
    return list.map((item) => {
      const n = item instanceof JsonNumber ? item.safeInteger() : undefined;
      if (n === "unsafe") {
        // S13: above 2^53 a JavaScript number cannot hold it exactly.
        throw fail(
          `unsafe integer: tensor ${tensor} has ${what} ${
            (item as JsonNumber).raw
          }, above 2^53 − 1 (overflow)`,
        );
      }
      if (n === undefined) {
        throw fail(
          `invalid header: tensor ${tensor} has ${what} ${
            item instanceof JsonNumber ? item.raw : describeJson(item)
          }, not a non-negative integer`,
        );
      }
      return n;
    });
  };

  const shape = integers("shape", "dimension");
  const offsets = integers("data_offsets", "data offset");
  if (offsets.length !== 2) {
    throw fail(
      `invalid header: tensor ${tensor} has ${offsets.length} data_offsets, expected [BEGIN, END]`,
    );
  }
  const [begin, end] = offsets as [number, number];

  // S13: BigInt arithmetic, so `[2, 2^53 − 1]` is caught rather than rounded.
  const spec = DTYPES[dtype];
  let elements = 1n;
  for (const d of shape) elements *= BigInt(d);
  if (elements > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw fail(
      `overflow: tensor ${tensor} has shape [${shape}], whose ${elements} elements exceed 2^53 − 1`,
    );
  }
  // S14: sub-byte types (F4, F6_*) must fill whole bytes.
  const bits = elements * BigInt(spec.blockBytes * 8) / BigInt(spec.blockElements);
  if (elements % BigInt(spec.blockElements) !== 0n) {
    const bitsPerElement = spec.blockBytes * 8 / spec.blockElements;
    throw fail(
      `misaligned: tensor ${tensor} (${dtype}, shape [${shape}]) is ${
        elements * BigInt(bitsPerElement)
      } bits, not a whole number of bytes`,
    );
  }
  if (bits / 8n > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw fail(`overflow: tensor ${tensor} is larger than 2^53 − 1 bytes`);
  }
  const byteLength = tensorByteLength(dtype, shape);

  // S10: END before BEGIN is a broken range whatever else holds.
  if (end < begin) {
    throw fail(
      `invalid offsets: tensor ${tensor} ends at data byte ${end}, before it begins at ${begin}`,
    );
  }
  // S9.
  if (end - begin !== byteLength) {
    throw fail(
      `tensor size mismatch: tensor ${tensor} (${dtype}, shape [${shape}]) needs ${byteLength} bytes but its data_offsets [${begin}, ${end}] hold ${
        end - begin
      }`,
    );
  }
  return { name, dtype, shape, byteLength, dataOffsets: [begin, end] };
}
