// This module is browser compatible.

/**
 * Strict GGUF (v2, v3) header parsing: magic, version, metadata KV pairs and
 * tensor infos, read progressively through a small buffered cursor, never the
 * tensor data. Every rule of FORMATS.md §3 (G1–G16) is checked, each failure a
 * {@linkcode ModelFormatError} naming the rule and the byte offset.
 *
 * @module
 */

import { readUtf8 } from "./_short_utf8.ts";
import type { ByteSource } from "../../io/byte_source.ts";
import { withSourceOf } from "../../io/source_of.ts";
import { type DType, dtypeFromGgufType, DTYPES, tensorByteLength } from "../../dtype.ts";
import { Cursor } from "./_cursor.ts";
import { hexBytes } from "../_hex.ts";
import { ggmlTypeName } from "./_ggml_types.ts";

/** GGUF metadata value type ids (FORMATS.md §3), spelled as llama.cpp's gguf-py spells them. */
export const GgufValueType = {
  /** 8-bit unsigned integer. */
  UINT8: 0,
  /** 8-bit signed integer. */
  INT8: 1,
  /** 16-bit unsigned integer. */
  UINT16: 2,
  /** 16-bit signed integer. */
  INT16: 3,
  /** 32-bit unsigned integer. */
  UINT32: 4,
  /** 32-bit signed integer. */
  INT32: 5,
  /** 32-bit float. */
  FLOAT32: 6,
  /** Boolean, one byte (0 or 1). */
  BOOL: 7,
  /** UTF-8 string: u64 length then bytes. */
  STRING: 8,
  /** Array: element type u32, count u64, elements. */
  ARRAY: 9,
  /** 64-bit unsigned integer. */
  UINT64: 10,
  /** 64-bit signed integer. */
  INT64: 11,
  /** 64-bit float. */
  FLOAT64: 12,
} as const;

/** One of the {@linkcode GgufValueType} ids (0–12). */
export type GgufValueType = typeof GgufValueType[keyof typeof GgufValueType];

/**
 * A decoded metadata value. Integers are numbers, except 64-bit integers whose
 * magnitude exceeds `Number.MAX_SAFE_INTEGER` (2^53 − 1), which stay `bigint`
 * so no value is silently rounded. Arrays are plain JavaScript arrays.
 */
export type GgufValue = number | bigint | boolean | string | GgufValue[];

/** One metadata key/value pair. */
export interface GgufKvEntry {
  /** The value's type id. */
  readonly type: GgufValueType;
  /** The decoded value. */
  readonly value: GgufValue;
  /**
   * For arrays: the element type, then (for arrays of arrays) the element
   * type of the first inner array, and so on — as gguf-py's dump spells
   * `array_types`. Absent for scalars.
   */
  readonly arrayTypes?: readonly GgufValueType[];
  /** File offset where the pair (its key) starts. */
  readonly offset: number;
}

/** One tensor info record, in GGUF's own terms. */
export interface GgufTensorInfo {
  /** Tensor name, e.g. `"blk.0.attn_q.weight"`. */
  readonly name: string;
  /** ggml type id. */
  readonly ggmlType: number;
  /** The ggml type as an aprkit dtype, e.g. `"Q4_K"`. */
  readonly dtype: DType;
  /** ggml dimensions, fastest-varying first (`ne[0]` = columns). */
  readonly ne: readonly number[];
  /** Data offset relative to the start of the data section. */
  readonly offset: number;
  /** Exact payload size in bytes. */
  readonly byteLength: number;
  /** File offset of this tensor info record. */
  readonly infoOffset: number;
}

/** A parsed GGUF header. */
export interface GgufHeader {
  /** Format version: 2 or 3. */
  readonly version: number;
  /** Metadata in file order. */
  readonly kv: ReadonlyMap<string, GgufKvEntry>;
  /** Tensor infos in file order. */
  readonly tensors: readonly GgufTensorInfo[];
  /** Data alignment (`general.alignment`, default 32). */
  readonly alignment: number;
  /** File offset where the tensor infos end. */
  readonly headerEnd: number;
  /** File offset of the data section (`headerEnd` rounded up to `alignment`). */
  readonly dataOffset: number;
}

/** The magic, `"GGUF"` read as a little-endian u32. */
export const GGUF_MAGIC = 0x46554747;
/** Alignment when `general.alignment` is absent (FORMATS.md §3). */
export const GGUF_DEFAULT_ALIGNMENT = 32;
/** ggml tensors have at most 4 dimensions (`GGML_MAX_DIMS`); G11. */
export const GGUF_MAX_DIMS = 4;
/**
 * Deepest array-of-array nesting accepted (G7). llama.cpp itself reads no
 * nested arrays; a bound keeps a crafted file from recursing without end.
 */
export const GGUF_MAX_ARRAY_DEPTH = 3;
/**
 * Most tensors in one file: the largest real models have fewer than 10^5,
 * and each costs memory; more is refused before allocating (docs/SECURITY.md).
 */
export const GGUF_MAX_TENSORS = 262_144;
/** Most KV pairs: real files have under 100 (llama.cpp writes ~30). */
export const GGUF_MAX_KV_PAIRS = 65_536;
/**
 * Longest array: a tokenizer's token, score and merge arrays have fewer than
 * 10^6 entries. 2^24 leaves a wide margin and bounds one array's memory.
 */
export const GGUF_MAX_ARRAY_LENGTH = 1 << 24;
/** Most array elements in all of a file's metadata together (every array counted, nested ones too). */
export const GGUF_MAX_ARRAY_ELEMENTS = 1 << 24;
/**
 * Most bytes of strings (keys, values, array elements, tensor names) in one
 * file's header together. A chat template is kilobytes and a tokenizer's
 * tokens and merges a few megabytes; the metadata must also fit the APR
 * metadata block (128 MiB). Checked before each string is read, so a sparse
 * file declaring gigabytes of text is refused without allocating it.
 */
export const GGUF_MAX_STRING_BYTES = 128 * 1024 * 1024;
/** Longest key, per the GGUF specification (keys are at most 65535 bytes). */
export const GGUF_MAX_KEY_LENGTH = 65535;
/**
 * Fewest bytes one KV pair can occupy: key length (8) + a 1-byte key (empty
 * keys are invalid) + value type (4) + the smallest value (1). G4 checks the
 * counts against the file size with these minimums before allocating anything.
 */
export const GGUF_MIN_KV_BYTES: number = 8 + 1 + 4 + 1;
/**
 * Array elements parsed as one item from the buffer: a refill parses at most
 * this many again (_cursor.ts), and a slice of scalars needs at most 8 KiB.
 */
const ARRAY_SLICE = 1024;
/** Fewest bytes one tensor info can occupy: name length (8) + 1-byte name + n_dims (4) + type (4) + offset (8). */
export const GGUF_MIN_TENSOR_INFO_BYTES: number = 8 + 1 + 4 + 4 + 8;
/** Size of magic + version + tensor count + KV count. */
const FIXED_HEADER_BYTES = 24;

/** Smallest encoded size of one element of each value type, for G8's count check. */
const MIN_ELEMENT_BYTES: readonly number[] = [1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8];
const TYPE_NAMES: readonly string[] = [
  "UINT8",
  "INT8",
  "UINT16",
  "INT16",
  "UINT32",
  "INT32",
  "FLOAT32",
  "BOOL",
  "STRING",
  "ARRAY",
  "UINT64",
  "INT64",
  "FLOAT64",
];

/**
 * The gguf-py spelling of a value type id (`"UINT32"`, `"STRING"`…).
 *
 * @param type A value type id.
 * @returns Its name, or `"type N"` for an unknown id.
 */
export function ggufValueTypeName(type: number): string {
  return TYPE_NAMES[type] ?? `type ${type}`;
}

// A GGUF string is UTF-8 by definition (FORMATS.md §3): invalid bytes are an
// error, not silently replaced (a round trip must give back the same bytes).
// `ignoreBOM` keeps a leading U+FEFF, so a round trip writes the same bytes.
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Parse the header of a GGUF file (v2 or v3): metadata and tensor infos,
 * validated against FORMATS.md §3 G1–G16. Reads only the header bytes, in
 * small windows; never tensor data.
 *
 * @example Usage
 * ```ts ignore
 * import { parseGgufHeader } from "./header.ts";
 * import { openFileSource } from "../../io/file_source.ts";
 * const source = await openFileSource("model.gguf");
 * const header = await parseGgufHeader(source);
 * console.log(header.kv.get("general.architecture")?.value, header.tensors.length);
 * await source.close();
 * ```
 *
 * @param source The file's bytes, or its path (opened and closed here; a given source stays open).
 * @returns The parsed header.
 * @throws {ModelFormatError} When the file breaks a rule of FORMATS.md §3.
 */
export function parseGgufHeader(source: ByteSource | string): Promise<GgufHeader> {
  return withSourceOf(source, "GGUF file", parseGgufSource);
}

async function parseGgufSource(source: ByteSource): Promise<GgufHeader> {
  const c = new Cursor(source);
  const size = source.size;
  const { version, tensorCount, kvCount } = await c.one(() => readCounts(c, size));

  const kv = new Map<string, GgufKvEntry>();
  for (let i = 0; i < kvCount; i++) {
    const offset = c.position;
    const { key, type, value } = await c.one(() => readPairStart(c, i, kv));
    const arrayTypes: GgufValueType[] = [];
    let entry: GgufKvEntry;
    if (type === GgufValueType.ARRAY) {
      const { type: elementType, values } = await c.one(() => readArrayHead(c, key, 1, arrayTypes));
      // A vocabulary is MBs: its elements are parsed in slices, each from the
      // buffer, so a refill repeats at most one slice (_cursor.ts).
      await c.each(Math.ceil(values.length / ARRAY_SLICE), (k) => {
        const from = k * ARRAY_SLICE;
        const to = Math.min(values.length, from + ARRAY_SLICE);
        readElements(c, elementType, key, 1, arrayTypes, values, from, to);
      });
      entry = { type, value: values, arrayTypes, offset };
    } else {
      entry = { type, value: value!, offset };
    }
    kv.set(key, entry);
  }

  // G9: the alignment must be a u32 power of two.
  let alignment = GGUF_DEFAULT_ALIGNMENT;
  const alignEntry = kv.get("general.alignment");
  if (alignEntry !== undefined) {
    if (alignEntry.type !== GgufValueType.UINT32) {
      throw c.fail(
        `invalid alignment: general.alignment has type ${
          ggufValueTypeName(alignEntry.type)
        }, expected UINT32`,
        alignEntry.offset,
      );
    }
    const a = alignEntry.value as number;
    if (a === 0 || (a & (a - 1)) !== 0) {
      throw c.fail(
        `invalid alignment: general.alignment is ${a}, not a power of two`,
        alignEntry.offset,
      );
    }
    alignment = a;
  }

  const tensors: GgufTensorInfo[] = [];
  const names = new Map<string, number>();
  // As the KV pairs: a tensor's name is recorded only after its last read.
  await c.each(tensorCount, (i) => {
    const infoOffset = c.position;
    const name = readString(c, `name of tensor info ${i}`, true);
    if (name.length === 0) {
      throw c.fail(`invalid tensor name: tensor info ${i} has an empty name`, infoOffset);
    }
    // G10: names identify tensors.
    const firstAt = names.get(name);
    if (firstAt !== undefined) {
      throw c.fail(`duplicate tensor "${name}" (first at byte ${firstAt})`, infoOffset);
    }
    c.need(4, `n_dims of tensor "${name}"`);
    const dimsOffset = c.position;
    const nDims = c.u32();
    // G11: ggml has at most 4 dimensions.
    if (nDims > GGUF_MAX_DIMS) {
      throw c.fail(
        `invalid shape for tensor "${name}": ${nDims} dimensions exceed ggml's maximum of ${GGUF_MAX_DIMS}`,
        dimsOffset,
      );
    }
    c.need(8 * nDims + 12, `dimensions, type and offset of tensor "${name}"`);
    const ne: number[] = [];
    let nonZeroProduct = 1;
    for (let d = 0; d < nDims; d++) {
      const dim = c.u64();
      // G11: every dimension, and the product of the non-zero ones (a zero
      // dimension must not hide an overflow), stays a safe integer.
      if (dim > MAX_SAFE) {
        throw c.fail(
          `invalid shape for tensor "${name}": ne[${d}] = ${dim} exceeds 2^53`,
          dimsOffset,
        );
      }
      const n = Number(dim);
      if (n !== 0) nonZeroProduct *= n;
      if (!Number.isSafeInteger(nonZeroProduct)) {
        throw c.fail(
          `invalid shape for tensor "${name}": element count of [${[...ne, n]}…] overflows 2^53`,
          dimsOffset,
        );
      }
      ne.push(n);
    }
    const typeOffset = c.position;
    const ggmlType = c.u32();
    const dtype = dtypeFromGgufType(ggmlType);
    // G12: name the type so the user knows what would be needed.
    if (dtype === undefined) {
      throw c.fail(
        `unsupported ggml type ${ggmlType} (${ggmlTypeName(ggmlType)}) of tensor "${name}"`,
        typeOffset,
      );
    }
    const spec = DTYPES[dtype];
    const cols = ne[0] ?? 1;
    // G13: ggml rows are whole blocks.
    if (cols % spec.blockElements !== 0) {
      throw c.fail(
        `invalid shape for type ${dtype}: tensor "${name}" has ne[0] = ${cols}, not a multiple ` +
          `of the ${spec.blockElements}-element block`,
        dimsOffset,
      );
    }
    const offsetAt = c.position;
    const rawOffset = c.u64();
    if (rawOffset > MAX_SAFE) {
      throw c.fail(
        `invalid offset: tensor "${name}" has offset ${rawOffset} beyond 2^53`,
        offsetAt,
      );
    }
    const offset = Number(rawOffset);
    // G14: every tensor starts on the alignment.
    if (offset % alignment !== 0) {
      throw c.fail(
        `invalid offset: tensor "${name}" at data offset ${offset} is not a multiple of ` +
          `the ${alignment}-byte alignment`,
        offsetAt,
      );
    }
    let byteLength: number;
    try {
      byteLength = tensorByteLength(dtype, [...ne].reverse());
    } catch (cause) {
      throw c.fail(`invalid shape for tensor "${name}": ${(cause as Error).message}`, dimsOffset);
    }
    names.set(name, infoOffset);
    tensors.push({ name, ggmlType, dtype, ne, offset, byteLength, infoOffset });
  });

  const headerEnd = c.position;
  const dataOffset = Math.ceil(headerEnd / alignment) * alignment;
  if (tensors.length > 0) {
    // G15: a vocabulary-only file may end before the padding; a file with tensors may not.
    if (dataOffset > size) {
      throw c.fail(
        `truncated: the data section starts at byte ${dataOffset}, past the end of the ${size}-byte file`,
        headerEnd,
      );
    }
    // G14: no two tensors share bytes.
    const byOffset = [...tensors].sort((a, b) => a.offset - b.offset);
    for (let i = 1; i < byOffset.length; i++) {
      const prev = byOffset[i - 1]!;
      const cur = byOffset[i]!;
      if (prev.offset + prev.byteLength > cur.offset) {
        throw c.fail(
          `invalid offset: tensor "${cur.name}" at data bytes [${cur.offset}, ${
            cur.offset + cur.byteLength
          }) overlaps tensor "${prev.name}" at [${prev.offset}, ${prev.offset + prev.byteLength})`,
          cur.infoOffset,
        );
      }
    }
    // G16: every payload lies inside the file.
    for (const t of tensors) {
      const end = dataOffset + t.offset + t.byteLength;
      if (end > size) {
        throw c.fail(
          `truncated: data of tensor "${t.name}" spans bytes [${dataOffset + t.offset}, ${end}), ` +
            `past the end of the ${size}-byte file`,
          dataOffset + t.offset,
        );
      }
    }
  }
  return { version, kv, tensors, alignment, headerEnd, dataOffset };
}

/**
 * A KV pair's key (G6: not empty, not repeated) and value type, and its value
 * unless it is an array (read by the caller in slices).
 */
function readPairStart(
  c: Cursor,
  i: number,
  kv: ReadonlyMap<string, GgufKvEntry>,
): { key: string; type: GgufValueType; value?: GgufValue } {
  const offset = c.position;
  const key = readString(c, `key of KV pair ${i}`, true);
  // G6: keys identify values; an empty or repeated key is ambiguous.
  if (key.length === 0) throw c.fail(`invalid key: KV pair ${i} has an empty key`, offset);
  const first = kv.get(key);
  if (first !== undefined) {
    throw c.fail(
      `invalid key: duplicate key "${key}" (first at byte ${first.offset})`,
      offset,
    );
  }
  c.need(4, `value type of "${key}"`);
  const typeOffset = c.position;
  const type = c.u32();
  if (type > 12) {
    throw c.fail(
      `invalid type: value type ${type} of key "${key}" (valid types are 0–12)`,
      typeOffset,
    );
  }
  if (type === GgufValueType.ARRAY) return { key, type };
  return {
    key,
    type: type as GgufValueType,
    value: readValue(c, type as GgufValueType, key, 0, []),
  };
}

/** Magic, version and counts (G1–G4): the fixed 24 bytes, checked before anything is allocated. */
function readCounts(
  c: Cursor,
  size: number,
): { version: number; tensorCount: number; kvCount: number } {
  // G1: magic. A file shorter than the magic is not a GGUF file either.
  if (size < 4) {
    throw c.fail(`not a GGUF file: ${size} bytes is too short for the magic "GGUF"`, 0);
  }
  c.need(4, "magic");
  const magicBytes = c.bytes(4);
  if (
    magicBytes[0] !== 0x47 || magicBytes[1] !== 0x47 || magicBytes[2] !== 0x55 ||
    magicBytes[3] !== 0x46
  ) {
    throw c.fail(`not a GGUF file: magic is ${describeMagic(magicBytes)}, expected "GGUF"`, 0);
  }

  // G3 before G2: a big-endian file has its version in the high bytes.
  c.need(4, "version");
  const version = c.u32();
  const swapped = byteSwap32(version);
  if (version > 0xffff && swapped >= 1 && swapped <= 3) {
    throw c.fail(
      `endianness mismatch: version reads as ${version}, which is ${swapped} byte-swapped ` +
        `(a big-endian GGUF file); only little-endian files are supported`,
      4,
    );
  }
  if (version !== 2 && version !== 3) {
    throw c.fail(
      `unsupported version ${version}: only GGUF versions 2 and 3 are supported` +
        (version === 1 ? " (version 1 is obsolete)" : ""),
      4,
    );
  }

  c.need(16, "tensor and KV counts");
  const rawTensorCount = c.u64();
  const rawKvCount = c.u64();
  // G4: counts checked against the file size before anything is allocated.
  const available = size - FIXED_HEADER_BYTES;
  if (rawTensorCount > BigInt(Math.floor(available / GGUF_MIN_TENSOR_INFO_BYTES))) {
    throw c.fail(
      `invalid tensor count ${rawTensorCount}: each tensor info needs at least ` +
        `${GGUF_MIN_TENSOR_INFO_BYTES} bytes, and only ${available} bytes follow the counts`,
      8,
    );
  }
  if (rawKvCount > BigInt(Math.floor(available / GGUF_MIN_KV_BYTES))) {
    throw c.fail(
      `invalid KV count ${rawKvCount}: each KV pair needs at least ${GGUF_MIN_KV_BYTES} ` +
        `bytes, and only ${available} bytes follow the counts`,
      16,
    );
  }
  if (rawTensorCount > BigInt(GGUF_MAX_TENSORS)) {
    throw c.fail(
      `too many tensors: ${rawTensorCount}, more than the ${GGUF_MAX_TENSORS} supported`,
      8,
    );
  }
  if (rawKvCount > BigInt(GGUF_MAX_KV_PAIRS)) {
    throw c.fail(
      `too many KV pairs: ${rawKvCount}, more than the ${GGUF_MAX_KV_PAIRS} supported`,
      16,
    );
  }
  const tensorCount = Number(rawTensorCount);
  const kvCount = Number(rawKvCount);
  const needed = tensorCount * GGUF_MIN_TENSOR_INFO_BYTES + kvCount * GGUF_MIN_KV_BYTES;
  if (needed > available) {
    throw c.fail(
      `invalid counts: ${kvCount} KV pairs and ${tensorCount} tensor infos need at least ` +
        `${needed} bytes, and only ${available} bytes follow the counts`,
      8,
    );
  }
  return { version, tensorCount, kvCount };
}

function readLength(c: Cursor, what: string): number {
  if (!c.has(8)) c.need(8, `length of ${what}`);
  const at = c.position;
  // Two u32 halves, not a bigint: one length per vocabulary token.
  const low = c.u32();
  const high = c.u32();
  if (high === 0 && low <= c.remaining) return low;
  const n = (BigInt(high) << 32n) | BigInt(low);
  // G8: a length beyond the remaining bytes is a truncated (or corrupt) file.
  if (n > BigInt(c.remaining)) {
    throw c.fail(
      `truncated: ${what} has length ${n}, but only ${c.remaining} bytes remain in the file`,
      at,
    );
  }
  return Number(n);
}

function readString(c: Cursor, what: string, isKey = false): string {
  const at = c.position;
  const n = readLength(c, what);
  if (isKey && n > GGUF_MAX_KEY_LENGTH) {
    throw c.fail(`invalid key: ${what} is ${n} bytes, more than ${GGUF_MAX_KEY_LENGTH}`, at);
  }
  c.stringBytes += n;
  if (c.stringBytes > GGUF_MAX_STRING_BYTES) {
    throw c.fail(
      `too much text: ${what} (${n} bytes) brings the header's strings past the ` +
        `${GGUF_MAX_STRING_BYTES}-byte limit`,
      at,
    );
  }
  if (!c.has(n)) c.need(n, what);
  const bytes = c.bytes(n);
  // Short strings (vocabulary tokens) in JavaScript: TextDecoder.decode costs
  // a runtime call per string (_short_utf8.ts).
  if (n <= 64) {
    const s = readUtf8(bytes);
    if (s !== undefined) return s;
  }
  try {
    return UTF8.decode(bytes);
  } catch (cause) {
    throw c.fail(`invalid string: ${what} is not valid UTF-8`, at + 8, cause);
  }
}

function readValue(
  c: Cursor,
  type: GgufValueType,
  key: string,
  depth: number,
  arrayTypes: GgufValueType[],
): GgufValue {
  switch (type) {
    case GgufValueType.STRING:
      return readString(c, `string value of "${key}"`);
    case GgufValueType.ARRAY:
      return readArray(c, key, depth + 1, arrayTypes);
    default: {
      const n = MIN_ELEMENT_BYTES[type]!;
      if (!c.has(n)) c.need(n, `${ggufValueTypeName(type)} value of "${key}"`);
      return readScalar(c, type, key);
    }
  }
}

function readScalar(c: Cursor, type: GgufValueType, key: string): GgufValue {
  switch (type) {
    case GgufValueType.UINT8:
      return c.u8();
    case GgufValueType.INT8:
      return c.i8();
    case GgufValueType.UINT16:
      return c.u16();
    case GgufValueType.INT16:
      return c.i16();
    case GgufValueType.UINT32:
      return c.u32();
    case GgufValueType.INT32:
      return c.i32();
    case GgufValueType.FLOAT32:
      return c.f32();
    case GgufValueType.FLOAT64:
      return c.f64();
    case GgufValueType.BOOL: {
      const at = c.position;
      const b = c.u8();
      if (b > 1) throw c.fail(`invalid type: BOOL value of "${key}" is ${b}, not 0 or 1`, at);
      return b === 1;
    }
    case GgufValueType.UINT64:
    case GgufValueType.INT64: {
      const v = type === GgufValueType.UINT64 ? c.u64() : c.i64();
      // Documented on GgufValue: bigint only where a number would round.
      return v <= MAX_SAFE && v >= -MAX_SAFE ? Number(v) : v;
    }
    default:
      throw new TypeError(`readScalar: not a scalar type ${type}`);
  }
}

function readArray(
  c: Cursor,
  key: string,
  depth: number,
  arrayTypes: GgufValueType[],
): GgufValue[] {
  const { type, values } = readArrayHead(c, key, depth, arrayTypes);
  readElements(c, type, key, depth, arrayTypes, values, 0, values.length);
  return values;
}

/**
 * An array's element type and count, checked (G7, G8, the element budgets)
 * before its values are allocated, empty; its element type recorded in `arrayTypes`.
 */
function readArrayHead(
  c: Cursor,
  key: string,
  depth: number,
  arrayTypes: GgufValueType[],
): { type: GgufValueType; values: GgufValue[] } {
  const at = c.position;
  // G7: bounded nesting.
  if (depth > GGUF_MAX_ARRAY_DEPTH) {
    throw c.fail(
      `invalid type: arrays in "${key}" are nested more than ${GGUF_MAX_ARRAY_DEPTH} deep`,
      at,
    );
  }
  c.need(12, `array header of "${key}"`);
  const elementType = c.u32();
  if (elementType > 12) {
    throw c.fail(
      `invalid type: array element type ${elementType} of key "${key}" (valid types are 0–12)`,
      at,
    );
  }
  const rawCount = c.u64();
  const minBytes = MIN_ELEMENT_BYTES[elementType]!;
  // Bounded memory: no array, and not all arrays together, beyond what real files hold.
  if (rawCount > BigInt(GGUF_MAX_ARRAY_LENGTH)) {
    throw c.fail(
      `array "${key}" has ${rawCount} elements, more than the ${GGUF_MAX_ARRAY_LENGTH} supported`,
      at,
    );
  }
  c.arrayElements += Number(rawCount);
  if (c.arrayElements > GGUF_MAX_ARRAY_ELEMENTS) {
    throw c.fail(
      `the metadata's arrays hold more than ${GGUF_MAX_ARRAY_ELEMENTS} elements in all`,
      at,
    );
  }
  // G8: checked before the array is allocated.
  if (rawCount * BigInt(minBytes) > BigInt(c.remaining)) {
    throw c.fail(
      `truncated: array "${key}" of ${rawCount} ${ggufValueTypeName(elementType)} needs at least ` +
        `${rawCount * BigInt(minBytes)} bytes, but only ${c.remaining} bytes remain in the file`,
      at,
    );
  }
  // Every level's element type, for the writer; a nested array records the
  // type of the first inner array, as gguf-py's dump spells array_types.
  if (arrayTypes.length < depth) arrayTypes.push(elementType as GgufValueType);
  return { type: elementType as GgufValueType, values: new Array(Number(rawCount)) };
}

/** Elements `[from, to)` of an array of `type` whose head {@linkcode readArrayHead} read. */
function readElements(
  c: Cursor,
  type: GgufValueType,
  key: string,
  depth: number,
  arrayTypes: GgufValueType[],
  values: GgufValue[],
  from: number,
  to: number,
): void {
  if (type === GgufValueType.STRING) {
    const what = `string value of "${key}"`;
    for (let i = from; i < to; i++) values[i] = readString(c, what);
  } else if (type === GgufValueType.ARRAY) {
    for (let i = from; i < to; i++) values[i] = readArray(c, key, depth + 1, arrayTypes);
  } else if (type === GgufValueType.FLOAT32) {
    // Scalars have a fixed size, which G8 found in the file: one check for all.
    c.need((to - from) * 4, `elements of array "${key}"`);
    for (let i = from; i < to; i++) values[i] = c.f32();
  } else if (type === GgufValueType.INT32) {
    c.need((to - from) * 4, `elements of array "${key}"`);
    for (let i = from; i < to; i++) values[i] = c.i32();
  } else {
    c.need((to - from) * MIN_ELEMENT_BYTES[type]!, `elements of array "${key}"`);
    for (let i = from; i < to; i++) values[i] = readScalar(c, type, key);
  }
}

function byteSwap32(v: number): number {
  return (((v & 0xff) << 24) | ((v & 0xff00) << 8) | ((v >>> 8) & 0xff00) | (v >>> 24)) >>> 0;
}

function describeMagic(bytes: Uint8Array): string {
  const hex = hexBytes(bytes);
  const printable = [...bytes].every((b) => b >= 0x20 && b < 0x7f);
  return printable ? `"${String.fromCharCode(...bytes)}" (${hex})` : hex;
}
