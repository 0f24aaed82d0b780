// This module is browser compatible.

/**
 * GGUF v3 encoding: the header (metadata and tensor infos, with every tensor
 * offset aligned) and, for small models or tests, a whole file in memory. The
 * streaming file writer ({@linkcode GgufSink}) uses the same header encoder.
 *
 * @module
 */

import { utf8Length, writeUtf8 } from "./_short_utf8.ts";
import { type DType, DTYPES, tensorByteLength } from "../../dtype.ts";
import { UsageError } from "../../errors.ts";
import {
  GGUF_DEFAULT_ALIGNMENT,
  GGUF_MAGIC,
  GGUF_MAX_ARRAY_DEPTH,
  GGUF_MAX_ARRAY_ELEMENTS,
  GGUF_MAX_ARRAY_LENGTH,
  GGUF_MAX_DIMS,
  GGUF_MAX_KEY_LENGTH,
  GGUF_MAX_KV_PAIRS,
  GGUF_MAX_STRING_BYTES,
  GGUF_MAX_TENSORS,
  type GgufValue,
  GgufValueType,
  ggufValueTypeName,
} from "./header.ts";

/** A metadata value to write: its type, value and (for arrays) element types. */
export interface GgufKvInput {
  /** The value's type id. */
  readonly type: GgufValueType;
  /** The value; 64-bit integers may be `number` or `bigint`. */
  readonly value: GgufValue;
  /** For arrays: the element type, then the inner arrays' element types. */
  readonly arrayTypes?: readonly GgufValueType[];
}

/** A tensor info to write, in GGUF's own terms. */
export interface GgufTensorSpec {
  /** Tensor name (llama.cpp accepts at most 63 bytes). */
  readonly name: string;
  /** Element type; must have a ggml type id. */
  readonly dtype: DType;
  /** ggml dimensions, fastest-varying first (`ne[0]` = columns). */
  readonly ne: readonly number[];
}

/** A tensor to write with its payload, for {@linkcode encodeGguf}. */
export interface GgufTensorInput extends GgufTensorSpec {
  /** The payload, exactly the size the dtype and shape imply. */
  readonly data: Uint8Array;
}

/** The encoded header and the layout it fixes. */
export interface GgufLayout {
  /** Header bytes, zero-padded up to the data section. */
  readonly header: Uint8Array;
  /** File offset of the data section (= `header.length`). */
  readonly dataOffset: number;
  /** Per tensor, in input order: absolute file offset and payload size. */
  readonly tensors: readonly { readonly offset: number; readonly byteLength: number }[];
  /** Total file size. */
  readonly fileSize: number;
}

/** Options of {@linkcode encodeGgufHeader} and {@linkcode encodeGguf}. */
export interface EncodeGgufOptions {
  /**
   * Data alignment. When it differs from 32 a `general.alignment` KV is
   * written (unless the metadata already holds the same value).
   *
   * @default {32}
   */
  alignment?: number;
}

/** llama.cpp's `GGML_MAX_NAME` is 64 bytes including the terminator. */
export const GGUF_MAX_TENSOR_NAME_BYTES = 63;

const UTF8 = new TextEncoder();
const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;

/**
 * Encode a GGUF v3 header and compute the file layout: tensors are placed in
 * input order, each at an offset aligned to the alignment, so the data section
 * can be streamed to place afterwards.
 *
 * @example Usage
 * ```ts
 * import { encodeGgufHeader } from "./writer.ts";
 * const layout = encodeGgufHeader(
 *   [["general.architecture", { type: 8, value: "llama" }]],
 *   [{ name: "a", dtype: "F32", ne: [3] }],
 * );
 * console.assert(layout.dataOffset % 32 === 0 && layout.fileSize === layout.dataOffset + 12);
 * ```
 *
 * @param kv Metadata pairs in order (a Map or `[key, value]` pairs).
 * @param tensors Tensor infos in order.
 * @param options Alignment.
 * @returns The header bytes and the layout.
 * @throws {TypeError} For a value that does not match its type, an empty or
 * duplicate key, or a dtype ggml cannot hold (APR_Q8, APR_Q4: convert first).
 * @throws {RangeError} For an invalid alignment or shape.
 * @throws {UsageError} When aprkit's GGUF reader would refuse the header
 *   (too many tensors or pairs, too much text, arrays too long): a file that
 *   cannot be read back is never written.
 */
export function encodeGgufHeader(
  kv: Iterable<readonly [string, GgufKvInput]>,
  tensors: readonly GgufTensorSpec[],
  options: EncodeGgufOptions = {},
): GgufLayout {
  const pairs = [...kv];
  if (tensors.length > GGUF_MAX_TENSORS || pairs.length > GGUF_MAX_KV_PAIRS) {
    throw new UsageError(
      `Cannot encode GGUF: ${tensors.length} tensors and ${pairs.length} metadata pairs, ` +
        `more than the ${GGUF_MAX_TENSORS} and ${GGUF_MAX_KV_PAIRS} GGUF readers accept`,
    );
  }
  const keys = new Set<string>();
  for (const [key] of pairs) {
    if (key.length === 0) throw new TypeError("Cannot encode GGUF: a metadata key is empty");
    if (keys.has(key)) throw new TypeError(`Cannot encode GGUF: duplicate metadata key "${key}"`);
    keys.add(key);
  }
  const given = pairs.find(([key]) => key === "general.alignment")?.[1];
  let alignment = options.alignment ?? GGUF_DEFAULT_ALIGNMENT;
  if (given !== undefined) {
    if (given.type !== GgufValueType.UINT32 || typeof given.value !== "number") {
      throw new TypeError("Cannot encode GGUF: general.alignment must be a UINT32");
    }
    if (options.alignment !== undefined && options.alignment !== given.value) {
      throw new RangeError(
        `Cannot encode GGUF: alignment ${options.alignment} contradicts general.alignment ${given.value}`,
      );
    }
    alignment = given.value;
  }
  if (!Number.isSafeInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
    throw new RangeError(`Cannot encode GGUF: alignment ${alignment} is not a power of two`);
  }
  if (given === undefined && alignment !== GGUF_DEFAULT_ALIGNMENT) {
    pairs.push(["general.alignment", { type: GgufValueType.UINT32, value: alignment }]);
  }

  const out = new ByteWriter();
  out.u32(GGUF_MAGIC);
  out.u32(3);
  out.u64(BigInt(tensors.length));
  out.u64(BigInt(pairs.length));
  for (const [key, entry] of pairs) {
    const keyBytes = UTF8.encode(key);
    if (keyBytes.length > GGUF_MAX_KEY_LENGTH) {
      throw new RangeError(`Cannot encode GGUF: key "${key.slice(0, 40)}…" is too long`);
    }
    out.string(keyBytes);
    out.u32(entry.type);
    writeValue(out, key, entry.type, entry.value, entry.arrayTypes ?? [], 0);
  }
  const placed: { offset: number; byteLength: number }[] = [];
  let relative = 0;
  const names = new Set<string>();
  for (const t of tensors) {
    const spec = DTYPES[t.dtype];
    if (spec.ggufType === undefined) {
      throw new TypeError(
        `Cannot encode GGUF: tensor "${t.name}" has dtype ${t.dtype}, which ggml cannot hold; ` +
          `convert it first (e.g. to F16, Q8_0 or Q4_K)`,
      );
    }
    const nameBytes = UTF8.encode(t.name);
    if (nameBytes.length === 0 || nameBytes.length > GGUF_MAX_TENSOR_NAME_BYTES) {
      throw new RangeError(
        `Cannot encode GGUF: tensor name "${t.name}" must be 1–${GGUF_MAX_TENSOR_NAME_BYTES} bytes`,
      );
    }
    if (names.has(t.name)) throw new TypeError(`Cannot encode GGUF: duplicate tensor "${t.name}"`);
    names.add(t.name);
    if (t.ne.length === 0 || t.ne.length > GGUF_MAX_DIMS) {
      throw new RangeError(
        `Cannot encode GGUF: tensor "${t.name}" has ${t.ne.length} dimensions (1–${GGUF_MAX_DIMS})`,
      );
    }
    if (t.ne[0]! % spec.blockElements !== 0) {
      throw new RangeError(
        `Cannot encode GGUF: tensor "${t.name}" has ne[0] = ${t.ne[0]}, not a multiple of ` +
          `${t.dtype}'s ${spec.blockElements}-element block`,
      );
    }
    const byteLength = tensorByteLength(t.dtype, [...t.ne].reverse());
    relative = alignUp(relative, alignment);
    out.string(nameBytes);
    out.u32(t.ne.length);
    for (const d of t.ne) out.u64(BigInt(d));
    out.u32(spec.ggufType);
    out.u64(BigInt(relative));
    placed.push({ offset: relative, byteLength });
    relative += byteLength;
  }
  // The reader's limits on text and arrays, checked before any byte reaches a file.
  if (out.stringBytes > GGUF_MAX_STRING_BYTES) {
    throw new UsageError(
      `Cannot encode GGUF: the header holds ${out.stringBytes} bytes of text (keys, values, ` +
        `tensor names), more than the ${GGUF_MAX_STRING_BYTES} GGUF readers accept; remove metadata from the source`,
    );
  }
  if (out.arrayElements > GGUF_MAX_ARRAY_ELEMENTS) {
    throw new UsageError(
      `Cannot encode GGUF: the metadata's arrays hold ${out.arrayElements} elements, ` +
        `more than the ${GGUF_MAX_ARRAY_ELEMENTS} GGUF readers accept`,
    );
  }
  const headerEnd = out.length;
  const dataOffset = alignUp(headerEnd, alignment);
  const header = out.finish(dataOffset);
  return {
    header,
    dataOffset,
    tensors: placed.map((p) => ({ offset: dataOffset + p.offset, byteLength: p.byteLength })),
    // gguf-py and ggml pad every tensor's data to the alignment, the last
    // one's too; a file without tensors ends with its header padding.
    fileSize: dataOffset + alignUp(relative, alignment),
  };
}

/**
 * Encode a whole GGUF v3 file in memory (browser compatible). For models
 * larger than memory use {@linkcode GgufSink}, which streams to a file.
 *
 * @example Usage
 * ```ts
 * import { encodeGguf } from "./writer.ts";
 * const bytes = encodeGguf({
 *   kv: [["general.architecture", { type: 8, value: "llama" }]],
 *   tensors: [{ name: "a", dtype: "F32", ne: [2], data: new Uint8Array(8) }],
 * });
 * console.assert(new TextDecoder().decode(bytes.subarray(0, 4)) === "GGUF");
 * ```
 *
 * @param input Metadata pairs and tensors, in order.
 * @param options Alignment.
 * @returns The file's bytes.
 * @throws {TypeError} For invalid metadata.
 * @throws {RangeError} For a payload whose size does not match its dtype and shape.
 */
export function encodeGguf(
  input: {
    readonly kv: Iterable<readonly [string, GgufKvInput]>;
    readonly tensors: readonly GgufTensorInput[];
  },
  options: EncodeGgufOptions = {},
): Uint8Array {
  const layout = encodeGgufHeader(input.kv, input.tensors, options);
  const bytes = new Uint8Array(layout.fileSize);
  bytes.set(layout.header, 0);
  input.tensors.forEach((t, i) => {
    const place = layout.tensors[i]!;
    if (t.data.length !== place.byteLength) {
      throw new RangeError(
        `Cannot encode GGUF: tensor "${t.name}" has ${t.data.length} bytes of data, ` +
          `expected ${place.byteLength} for ${t.dtype} [${t.ne}]`,
      );
    }
    bytes.set(t.data, place.offset);
  });
  return bytes;
}

function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}

function writeValue(
  out: ByteWriter,
  key: string,
  type: number,
  value: GgufValue,
  arrayTypes: readonly GgufValueType[],
  depth: number,
): void {
  switch (type) {
    case GgufValueType.STRING:
      if (typeof value !== "string") throw misfit(key, type);
      out.text(value);
      return;
    case GgufValueType.BOOL:
      if (typeof value !== "boolean") throw misfit(key, type);
      out.u8(value ? 1 : 0);
      return;
    case GgufValueType.FLOAT32:
    case GgufValueType.FLOAT64:
      if (typeof value !== "number") throw misfit(key, type);
      if (type === GgufValueType.FLOAT32) out.f32(value);
      else out.f64(value);
      return;
    case GgufValueType.ARRAY: {
      if (!Array.isArray(value)) throw misfit(key, type);
      const elementType = arrayTypes[depth];
      if (elementType === undefined) {
        throw new TypeError(`Cannot encode GGUF: array "${key}" needs its element type`);
      }
      if (depth + 1 > GGUF_MAX_ARRAY_DEPTH) {
        throw new RangeError(`Cannot encode GGUF: arrays in "${key}" are nested too deep`);
      }
      if (value.length > GGUF_MAX_ARRAY_LENGTH) {
        throw new UsageError(
          `Cannot encode GGUF: array "${key}" has ${value.length} elements, more than the ` +
            `${GGUF_MAX_ARRAY_LENGTH} GGUF readers accept`,
        );
      }
      out.arrayElements += value.length;
      out.u32(elementType);
      out.u64(BigInt(value.length));
      // A vocabulary's scores and token types (32,000+ numbers): in number
      // arithmetic, not one BigInt conversion and range test per element
      // (~0.1 CPU-s per header); same bytes, same refusals.
      if (value.every((v) => typeof v === "number")) {
        if (writeNumbers(out, elementType, value as number[])) return;
      }
      for (const v of value) writeValue(out, key, elementType, v, arrayTypes, depth + 1);
      return;
    }
    default: {
      const small = typeof value === "number" ? SMALL_INT_RANGES[type] : undefined;
      if (small !== undefined) {
        // The integer types up to 32 bits from a number (a vocabulary's token
        // types: one per token) without a bigint per value; the same checks.
        const v = value as number;
        if (!Number.isInteger(v) || v < small[0] || v > small[1]) throw misfit(key, type);
        if (type <= GgufValueType.INT8) out.u8(v & 0xff);
        else if (type <= GgufValueType.INT16) out.u16(v & 0xffff);
        else out.u32(v >>> 0);
        return;
      }
      if (typeof value !== "number" && typeof value !== "bigint") throw misfit(key, type);
      const int = typeof value === "bigint"
        ? value
        : Number.isInteger(value)
        ? BigInt(value)
        : null;
      if (int === null) throw misfit(key, type);
      const [lo, hi] = INT_RANGES[type] ?? [0n, -1n];
      if (int < lo || int > hi) throw misfit(key, type);
      switch (type) {
        case GgufValueType.UINT8:
        case GgufValueType.INT8:
          out.u8(Number(int) & 0xff);
          return;
        case GgufValueType.UINT16:
        case GgufValueType.INT16:
          out.u16(Number(int) & 0xffff);
          return;
        case GgufValueType.UINT32:
        case GgufValueType.INT32:
          out.u32(Number(int) >>> 0);
          return;
        case GgufValueType.UINT64:
        case GgufValueType.INT64:
          out.u64(BigInt.asUintN(64, int));
          return;
      }
      throw new TypeError(`Cannot encode GGUF: value type ${type} of "${key}" is invalid`);
    }
  }
}

function misfit(key: string, type: number): TypeError {
  return new TypeError(
    `Cannot encode GGUF: value of "${key}" does not fit type ${ggufValueTypeName(type)}`,
  );
}

/** {@linkcode INT_RANGES} of the types up to 32 bits, as numbers (writeValue, writeNumbers). */
const SMALL_INT_RANGES: Readonly<Record<number, readonly [number, number]>> = {
  [GgufValueType.UINT8]: [0, 255],
  [GgufValueType.INT8]: [-128, 127],
  [GgufValueType.UINT16]: [0, 65535],
  [GgufValueType.INT16]: [-32768, 32767],
  [GgufValueType.UINT32]: [0, 0xffffffff],
  [GgufValueType.INT32]: [-0x80000000, 0x7fffffff],
};

/**
 * An array of numbers of a 32-bit float or an 8- to 32-bit integer type, as
 * writeValue writes them one by one; false (nothing written) for other types,
 * or when an element does not fit (writeValue then names it).
 */
function writeNumbers(out: ByteWriter, type: number, values: readonly number[]): boolean {
  if (type === GgufValueType.FLOAT32) {
    for (const v of values) out.f32(v);
    return true;
  }
  const range = SMALL_INT_RANGES[type];
  if (range === undefined) return false;
  const [lo, hi] = range;
  for (const v of values) if (!Number.isInteger(v) || v < lo || v > hi) return false;
  if (type === GgufValueType.UINT8 || type === GgufValueType.INT8) {
    for (const v of values) out.u8(v & 0xff);
  } else if (type === GgufValueType.UINT16 || type === GgufValueType.INT16) {
    for (const v of values) out.u16(v & 0xffff);
  } else {
    for (const v of values) out.u32(v >>> 0);
  }
  return true;
}

const INT_RANGES: Readonly<Record<number, readonly [bigint, bigint]>> = {
  [GgufValueType.UINT8]: [0n, 255n],
  [GgufValueType.INT8]: [-128n, 127n],
  [GgufValueType.UINT16]: [0n, 65535n],
  [GgufValueType.INT16]: [-32768n, 32767n],
  [GgufValueType.UINT32]: [0n, 0xffffffffn],
  [GgufValueType.INT32]: [-0x80000000n, 0x7fffffffn],
  [GgufValueType.UINT64]: [0n, U64_MAX],
  [GgufValueType.INT64]: [I64_MIN, I64_MAX],
};

/** A growable little-endian byte buffer for headers. */
class ByteWriter {
  #buffer = new Uint8Array(4096);
  #view = new DataView(this.#buffer.buffer);
  #length = 0;
  /** Bytes of every string written (keys, values, names), as the reader counts them. */
  stringBytes = 0;
  /** Elements of every array written, nested ones included. */
  arrayElements = 0;

  get length(): number {
    return this.#length;
  }

  // Callers must call this before touching #buffer/#view: it may replace them.
  #reserve(n: number): number {
    const at = this.#length;
    if (at + n > this.#buffer.length) {
      let size = this.#buffer.length * 2;
      while (size < at + n) size *= 2;
      const next = new Uint8Array(size);
      next.set(this.#buffer.subarray(0, at));
      this.#buffer = next;
      this.#view = new DataView(next.buffer);
    }
    this.#length += n;
    return at;
  }
  u8(v: number): void {
    const at = this.#reserve(1);
    this.#view.setUint8(at, v);
  }
  u16(v: number): void {
    const at = this.#reserve(2);
    this.#view.setUint16(at, v, true);
  }
  u32(v: number): void {
    const at = this.#reserve(4);
    this.#view.setUint32(at, v, true);
  }
  u64(v: bigint): void {
    const at = this.#reserve(8);
    this.#view.setBigUint64(at, v, true);
  }
  f32(v: number): void {
    const at = this.#reserve(4);
    this.#view.setFloat32(at, v, true);
  }
  f64(v: number): void {
    const at = this.#reserve(8);
    this.#view.setFloat64(at, v, true);
  }
  string(bytes: Uint8Array): void {
    this.stringBytes += bytes.length;
    this.u64(BigInt(bytes.length));
    const at = this.#reserve(bytes.length);
    this.#buffer.set(bytes, at);
  }
  /** A string value as UTF-8 (short_utf8.ts: no runtime call per string). */
  text(value: string): void {
    const n = utf8Length(value);
    if (n < 0) return this.string(UTF8.encode(value));
    this.stringBytes += n;
    const at = this.#reserve(8 + n);
    this.#view.setUint32(at, n, true);
    this.#view.setUint32(at + 4, 0, true);
    writeUtf8(value, this.#buffer, at + 8);
  }
  /** The bytes written, zero-padded to `size`. */
  finish(size: number): Uint8Array {
    const out = new Uint8Array(size);
    out.set(this.#buffer.subarray(0, this.#length));
    return out;
  }
}
