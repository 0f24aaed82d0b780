// This module is browser compatible.

/**
 * The QNAT container (docs/QNAT.md): fixed header, metadata JSON, packed
 * per-tensor headers, then 64-byte-aligned data sections. Encoding the
 * prefix from a plan, and strict parsing of every field.
 *
 * @module
 */

import { elementCount } from "../../dtype.ts";
import { ModelFormatError, UsageError } from "../../errors.ts";
import { hexBytes } from "../_hex.ts";
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from "../../io/json_depth.ts";
import { checkNf4BlockSize } from "../../quant/nf4.ts";

/** `"QNAT"`, the first four bytes of every QNAT file. */
export const QNAT_MAGIC: Uint8Array = new Uint8Array([0x51, 0x4e, 0x41, 0x54]);

/** The one version this code writes and reads (docs/QNAT.md §2). */
export const QNAT_VERSION = 1;

/** Size of the fixed header: magic, version, flags, metadata size (u64), tensor count. */
export const QNAT_HEADER_SIZE = 24;

/** Data sections start at multiples of this (docs/QNAT.md §1). */
export const QNAT_ALIGNMENT = 64;

/** Flag bits of the fixed header: which optional sections every NF4 tensor has. */
export const QNAT_FLAGS = {
  /** Block scales stored as u8 codes plus one f32 factor per tensor. */
  DOUBLE_QUANT: 0x1,
  /** A f32 zero point per block follows the scales. */
  ZERO_POINTS: 0x2,
} as const;

const KNOWN_FLAGS = QNAT_FLAGS.DOUBLE_QUANT | QNAT_FLAGS.ZERO_POINTS;

/** Tensor kinds (docs/QNAT.md §3). */
export const QNAT_KIND = {
  /** NF4 codes plus block scales. */
  NF4: 0,
  /** Plain little-endian f32 values. */
  F32: 1,
} as const;

/** Longest tensor name in UTF-8 bytes. */
export const QNAT_MAX_NAME_BYTES = 256;

/** Most dimensions a tensor may have. */
export const QNAT_MAX_DIMS = 8;

/**
 * Largest metadata JSON: a tokenizer is tens of MB; more is refused before
 * allocating. As APR's limit: parsing costs several times the size, and a
 * 600 MB block failed inside V8 ("Cannot allocate String") at 1.8 GB RSS.
 */
export const QNAT_MAX_METADATA_SIZE = 128 * 1024 * 1024;

/**
 * Most tensors a file may hold: real models have < 10^5, and each costs
 * memory (3 million took 1.3 GB); refused before allocating. As APR and GGUF.
 */
export const QNAT_MAX_TENSORS = 262_144;

/** Smallest packed tensor header: name length, 1-byte name, kind, ndim, block size, block count, offset, size. */
const MIN_ENTRY_SIZE = 2 + 1 + 1 + 1 + 4 + 8 + 8 + 8;
/** Largest packed tensor header: a 256-byte name and 8 dims. */
const MAX_ENTRY_SIZE = 2 + QNAT_MAX_NAME_BYTES + 1 + 1 + 8 * QNAT_MAX_DIMS + 4 + 8 + 8 + 8;

/** The compute dtypes a QNAT file may name. */
export type QnatComputeDtype = "float32" | "float16" | "bfloat16";

const COMPUTE_DTYPES: readonly QnatComputeDtype[] = ["float32", "float16", "bfloat16"];

/** The metadata JSON of a QNAT file (docs/QNAT.md §2.2). */
export interface QnatMetadata {
  /** Model name, or null. */
  model_name: string | null;
  /** Model type (e.g. `"llama"`), `""` when unknown. */
  model_type: string;
  /** The dtype a consumer should dequantize to for compute. */
  compute_dtype: QnatComputeDtype;
  /** Always `"nf4"`. */
  quant_type: "nf4";
  /** The block size of the NF4 tensors (informational; each tensor header has its own). */
  block_size: number;
  /** Mirrors flag DOUBLE_QUANT. */
  double_quant: boolean;
  /** Mirrors flag ZERO_POINTS. */
  zero_points: boolean;
  /** The full APR-vocabulary metadata of the source, for round trips. */
  model_metadata?: Record<string, unknown>;
}

/** One tensor header, as planned or parsed. */
export interface QnatTensorHeader {
  /** Tensor name. */
  readonly name: string;
  /** `QNAT_KIND.NF4` or `QNAT_KIND.F32`. */
  readonly kind: number;
  /** Dimensions, outermost first. */
  readonly shape: readonly number[];
  /** Elements per block (NF4), 0 for F32. */
  readonly blockSize: number;
  /** Number of blocks (NF4), 0 for F32. */
  readonly blockCount: number;
  /** Absolute offset of the data section. */
  readonly dataOffset: number;
  /** Exact size of the data section. */
  readonly dataSize: number;
}

/** Where the parts of one NF4 data section lie, relative to its start. */
export interface QnatSectionLayout {
  /** Codes: `elements / 2` bytes at offset 0. */
  readonly codesSize: number;
  /** Offset of the scales part (f32 × blocks, or f32 factor + u8 × blocks). */
  readonly scalesOffset: number;
  /** Size of the scales part. */
  readonly scalesSize: number;
  /** Offset of the zero points (f32 × blocks), or -1. */
  readonly zerosOffset: number;
  /** Total section size. */
  readonly size: number;
}

/**
 * The layout of a tensor's data section.
 *
 * @param kind Tensor kind.
 * @param elements Element count.
 * @param blockCount Block count (NF4).
 * @param flags File flags.
 * @returns The parts and their offsets.
 */
export function qnatSectionLayout(
  kind: number,
  elements: number,
  blockCount: number,
  flags: number,
): QnatSectionLayout {
  if (kind === QNAT_KIND.F32) {
    return { codesSize: 0, scalesOffset: 0, scalesSize: 0, zerosOffset: -1, size: 4 * elements };
  }
  const codesSize = elements / 2;
  const scalesSize = (flags & QNAT_FLAGS.DOUBLE_QUANT) ? 4 + blockCount : 4 * blockCount;
  const zeros = (flags & QNAT_FLAGS.ZERO_POINTS) !== 0;
  return {
    codesSize,
    scalesOffset: codesSize,
    scalesSize,
    zerosOffset: zeros ? codesSize + scalesSize : -1,
    size: codesSize + scalesSize + (zeros ? 4 * blockCount : 0),
  };
}

/** Round up to a multiple of {@linkcode QNAT_ALIGNMENT}. */
function align(n: number): number {
  return Math.ceil(n / QNAT_ALIGNMENT) * QNAT_ALIGNMENT;
}

/** What {@linkcode planQnatLayout} needs per tensor. */
export interface QnatTensorPlan {
  /** Tensor name. */
  readonly name: string;
  /** Kind. */
  readonly kind: number;
  /** Dimensions. */
  readonly shape: readonly number[];
  /** Elements per block (NF4), ignored for F32. */
  readonly blockSize: number;
}

/** A whole QNAT file laid out before any data is written. */
export interface QnatLayout {
  /** Bytes `[0, dataStart)`: fixed header, metadata, tensor headers, zero padding. */
  readonly prefix: Uint8Array;
  /** Tensor headers with final offsets, in plan order. */
  readonly tensors: readonly QnatTensorHeader[];
  /** Total file size. */
  readonly fileSize: number;
}

/**
 * Lay out a QNAT file: header, metadata, tensor headers with final offsets
 * (sections in plan order, each at a multiple of 64, zero padding between).
 *
 * @param metadata The metadata JSON object.
 * @param flags File flags ({@linkcode QNAT_FLAGS}).
 * @param plan The tensors, in data order.
 * @returns The layout.
 * @throws {RangeError|TypeError} When a name, shape or block size breaks a rule.
 * @throws {UsageError} When the metadata or tensor count is over what readers accept.
 */
export function planQnatLayout(
  metadata: QnatMetadata,
  flags: number,
  plan: readonly QnatTensorPlan[],
): QnatLayout {
  if ((flags & ~KNOWN_FLAGS) !== 0) {
    throw new RangeError(`Cannot write QNAT file: unknown flags 0x${flags.toString(16)}`);
  }
  const encoder = new TextEncoder();
  const text = JSON.stringify(metadata);
  const meta = encoder.encode(text);
  // What parseQnatMetadata refuses is never written: the model's metadata sits
  // one level down and gains a few fields, so a model at APR's limits can cross QNAT's.
  if (meta.length > QNAT_MAX_METADATA_SIZE) {
    throw new UsageError(
      `Cannot write QNAT file: its metadata would be ${meta.length} bytes, more than the ${QNAT_MAX_METADATA_SIZE} QNAT readers accept; remove metadata from the source`,
    );
  }
  if (jsonNestsDeeperThan(text)) {
    throw new UsageError(
      `Cannot write QNAT file: its metadata would nest deeper than the ${MAX_JSON_DEPTH} levels QNAT readers accept`,
    );
  }
  if (plan.length > QNAT_MAX_TENSORS) {
    throw new UsageError(
      `Cannot write QNAT file: ${plan.length} tensors, more than the ${QNAT_MAX_TENSORS} QNAT readers accept`,
    );
  }
  const names = plan.map((t) => encoder.encode(t.name));
  const seen = new Set<string>();
  let headersSize = 0;
  plan.forEach((t, i) => {
    const bytes = names[i]!.length;
    if (bytes === 0 || bytes > QNAT_MAX_NAME_BYTES) {
      throw new RangeError(
        `Cannot write QNAT file: tensor name "${t.name}" is ${bytes} UTF-8 bytes, expected 1 to ${QNAT_MAX_NAME_BYTES}`,
      );
    }
    if (seen.has(t.name)) {
      throw new TypeError(`Cannot write QNAT file: tensor name "${t.name}" appears twice`);
    }
    seen.add(t.name);
    if (t.shape.length > QNAT_MAX_DIMS) {
      throw new RangeError(
        `Cannot write QNAT file: tensor "${t.name}" has ${t.shape.length} dims, at most ${QNAT_MAX_DIMS}`,
      );
    }
    headersSize += 2 + bytes + 1 + 1 + 8 * t.shape.length + 4 + 8 + 8 + 8;
  });
  const headersStart = QNAT_HEADER_SIZE + meta.length;
  const dataStart = align(headersStart + headersSize);
  let cursor = dataStart;
  const tensors: QnatTensorHeader[] = plan.map((t) => {
    const n = elementCount(t.shape);
    let blockSize = 0;
    let blockCount = 0;
    if (t.kind === QNAT_KIND.NF4) {
      checkNf4BlockSize(t.blockSize);
      if (n % t.blockSize !== 0) {
        throw new RangeError(
          `Cannot write tensor "${t.name}" [${t.shape}] as NF4: ${n} elements are not a multiple of the block size ${t.blockSize}`,
        );
      }
      blockSize = t.blockSize;
      blockCount = n / t.blockSize;
    } else if (t.kind !== QNAT_KIND.F32) {
      throw new TypeError(`Cannot write tensor "${t.name}": unknown QNAT kind ${t.kind}`);
    }
    const size = qnatSectionLayout(t.kind, n, blockCount, flags).size;
    const header = {
      name: t.name,
      kind: t.kind,
      shape: t.shape,
      blockSize,
      blockCount,
      dataOffset: cursor,
      dataSize: size,
    };
    cursor = align(cursor + size);
    return header;
  });
  // The file ends right after the last section (no trailing padding).
  const last = tensors[tensors.length - 1];
  const fileSize = last ? last.dataOffset + last.dataSize : dataStart;
  if (!Number.isSafeInteger(fileSize)) {
    throw new RangeError(`Cannot write QNAT file: ${fileSize} bytes exceeds 2^53`);
  }
  const prefix = new Uint8Array(dataStart);
  const view = new DataView(prefix.buffer);
  prefix.set(QNAT_MAGIC, 0);
  view.setUint32(4, QNAT_VERSION, true);
  view.setUint32(8, flags, true);
  view.setBigUint64(12, BigInt(meta.length), true);
  view.setUint32(20, tensors.length, true);
  prefix.set(meta, QNAT_HEADER_SIZE);
  let at = headersStart;
  tensors.forEach((t, i) => {
    const name = names[i]!;
    view.setUint16(at, name.length, true);
    prefix.set(name, at + 2);
    at += 2 + name.length;
    view.setUint8(at, t.kind);
    view.setUint8(at + 1, t.shape.length);
    at += 2;
    for (const d of t.shape) {
      view.setBigUint64(at, BigInt(d), true);
      at += 8;
    }
    view.setUint32(at, t.blockSize, true);
    view.setBigUint64(at + 4, BigInt(t.blockCount), true);
    view.setBigUint64(at + 12, BigInt(t.dataOffset), true);
    view.setBigUint64(at + 20, BigInt(t.dataSize), true);
    at += 28;
  });
  return { prefix, tensors, fileSize };
}

/** The fixed header of a QNAT file, parsed. */
export interface QnatFixedHeader {
  /** Format version (1). */
  readonly version: number;
  /** Flag bits. */
  readonly flags: number;
  /** Metadata JSON size in bytes. */
  readonly metadataSize: number;
  /** Number of tensor headers. */
  readonly tensorCount: number;
}

function u64(view: DataView, at: number, what: string, path: string, offset: number): number {
  const v = view.getBigUint64(at, true);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new ModelFormatError("QNAT", path, `${what} ${v} exceeds 2^53`, { offset });
  }
  return Number(v);
}

/**
 * Parse and check the 24-byte fixed header against the file size.
 *
 * @param bytes The first 24 bytes (or all of a shorter file).
 * @param fileSize The file's size.
 * @param path File name, for messages.
 * @returns The fields.
 * @throws {ModelFormatError} When a field breaks a rule.
 */
export function parseQnatHeader(
  bytes: Uint8Array,
  fileSize: number,
  path = "<memory>",
): QnatFixedHeader {
  const fail = (reason: string, offset: number): never => {
    throw new ModelFormatError("QNAT", path, reason, { offset });
  };
  if (bytes.length >= 4 && !QNAT_MAGIC.every((b, i) => bytes[i] === b)) {
    const seen = hexBytes(bytes.subarray(0, 4));
    fail(`wrong magic: expected 51 4e 41 54 ("QNAT"), found ${seen}`, 0);
  }
  if (bytes.length < QNAT_HEADER_SIZE) {
    fail(`file too short: ${bytes.length} bytes, the QNAT header needs ${QNAT_HEADER_SIZE}`, 0);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, QNAT_HEADER_SIZE);
  const version = view.getUint32(4, true);
  if (version !== QNAT_VERSION) {
    fail(`unsupported version ${version}: this reader knows version ${QNAT_VERSION}`, 4);
  }
  const flags = view.getUint32(8, true);
  if ((flags & ~KNOWN_FLAGS) !== 0) {
    fail(
      `unknown flags 0x${
        (flags & ~KNOWN_FLAGS).toString(16).padStart(8, "0")
      }: only 0x1 (DOUBLE_QUANT) and 0x2 (ZERO_POINTS) are defined`,
      8,
    );
  }
  const metadataSize = u64(view, 12, "metadata_size", path, 12);
  if (metadataSize > QNAT_MAX_METADATA_SIZE) {
    fail(
      `metadata too large: ${metadataSize} bytes exceeds the ${QNAT_MAX_METADATA_SIZE}-byte limit`,
      12,
    );
  }
  if (QNAT_HEADER_SIZE + metadataSize > fileSize) {
    fail(
      `metadata [${QNAT_HEADER_SIZE}, ${
        QNAT_HEADER_SIZE + metadataSize
      }) extends past the end of the file (${fileSize} bytes)`,
      12,
    );
  }
  const tensorCount = view.getUint32(20, true);
  if (tensorCount > QNAT_MAX_TENSORS) {
    fail(`tensor_count ${tensorCount} exceeds the limit of ${QNAT_MAX_TENSORS}`, 20);
  }
  const room = fileSize - QNAT_HEADER_SIZE - metadataSize;
  if (tensorCount * MIN_ENTRY_SIZE > room) {
    fail(
      `tensor headers truncated: ${tensorCount} headers need at least ${
        tensorCount * MIN_ENTRY_SIZE
      } bytes, ${room} remain after the metadata`,
      QNAT_HEADER_SIZE + metadataSize,
    );
  }
  return { version, flags, metadataSize, tensorCount };
}

/**
 * How many bytes of tensor headers to read at most for `tensorCount` headers.
 *
 * @param tensorCount The header's tensor count.
 * @returns An upper bound of the packed headers' size.
 */
export function qnatMaxHeadersSize(tensorCount: number): number {
  return tensorCount * MAX_ENTRY_SIZE;
}

/**
 * Parse and check the metadata JSON (docs/QNAT.md §2.2).
 *
 * @param bytes The JSON bytes.
 * @param flags The file flags, which the JSON must mirror.
 * @param path File name, for messages.
 * @returns The metadata.
 * @throws {ModelFormatError} When it is not valid.
 */
export function parseQnatMetadata(bytes: Uint8Array, flags: number, path: string): QnatMetadata {
  const fail = (reason: string, cause?: unknown): never => {
    throw new ModelFormatError("QNAT", path, reason, {
      offset: QNAT_HEADER_SIZE,
      ...(cause === undefined ? {} : { cause }),
    });
  };
  let value: unknown;
  let text = "";
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    value = JSON.parse(text);
  } catch (cause) {
    fail(`metadata is not valid UTF-8 JSON: ${(cause as Error).message}`, cause);
  }
  if (jsonNestsDeeperThan(text)) fail(`metadata nests deeper than ${MAX_JSON_DEPTH} levels`);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    fail("metadata is not a JSON object");
  }
  const m = value as Record<string, unknown>;
  if (m.model_name !== null && typeof m.model_name !== "string") {
    fail("metadata.model_name must be a string or null");
  }
  if (typeof m.model_type !== "string") fail("metadata.model_type must be a string");
  if (!COMPUTE_DTYPES.includes(m.compute_dtype as QnatComputeDtype)) {
    fail(
      `metadata.compute_dtype ${JSON.stringify(m.compute_dtype)} is not one of ${
        COMPUTE_DTYPES.join(", ")
      }`,
    );
  }
  if (m.quant_type !== "nf4") {
    fail(`metadata.quant_type ${JSON.stringify(m.quant_type)} is not "nf4"`);
  }
  if (typeof m.block_size !== "number" || !Number.isSafeInteger(m.block_size)) {
    fail("metadata.block_size must be an integer");
  }
  const dq = (flags & QNAT_FLAGS.DOUBLE_QUANT) !== 0;
  const zp = (flags & QNAT_FLAGS.ZERO_POINTS) !== 0;
  if (m.double_quant !== dq) {
    fail(
      `metadata.double_quant ${JSON.stringify(m.double_quant)} disagrees with the flags (${dq})`,
    );
  }
  if (m.zero_points !== zp) {
    fail(`metadata.zero_points ${JSON.stringify(m.zero_points)} disagrees with the flags (${zp})`);
  }
  if (
    m.model_metadata !== undefined &&
    (typeof m.model_metadata !== "object" || m.model_metadata === null ||
      Array.isArray(m.model_metadata))
  ) {
    fail("metadata.model_metadata must be a JSON object");
  }
  return m as unknown as QnatMetadata;
}

/**
 * Parse and check the packed tensor headers: names (valid UTF-8, 1–256
 * bytes, unique), kind, dims, block size and count against the shape, and
 * data size against the kind and flags. Offsets are checked by the reader.
 *
 * @param bytes The bytes from the first tensor header on (at least all headers).
 * @param count Number of headers.
 * @param flags File flags.
 * @param path File name, for messages.
 * @param base Absolute offset of `bytes[0]`, for messages.
 * @returns The headers and the offset just past the last one.
 * @throws {ModelFormatError} When a header breaks a rule.
 */
export function parseQnatTensorHeaders(
  bytes: Uint8Array,
  count: number,
  flags: number,
  path: string,
  base: number,
): { headers: QnatTensorHeader[]; end: number } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const headers: QnatTensorHeader[] = [];
  const seen = new Set<string>();
  let at = 0;
  for (let i = 0; i < count; i++) {
    const start = at;
    const fail = (reason: string): never => {
      throw new ModelFormatError("QNAT", path, `tensor header ${i}: ${reason}`, {
        offset: base + start,
      });
    };
    const need = (n: number): void => {
      if (at + n > bytes.length) fail("truncated: the file ends inside it");
    };
    need(2);
    const nameLength = view.getUint16(at, true);
    if (nameLength === 0 || nameLength > QNAT_MAX_NAME_BYTES) {
      fail(`name length ${nameLength} is not in [1, ${QNAT_MAX_NAME_BYTES}]`);
    }
    need(2 + nameLength + 2);
    let name = "";
    try {
      name = decoder.decode(bytes.subarray(at + 2, at + 2 + nameLength));
    } catch {
      fail("name is not valid UTF-8");
    }
    if (seen.has(name)) fail(`duplicate tensor name "${name}"`);
    seen.add(name);
    at += 2 + nameLength;
    const kind = view.getUint8(at);
    const ndim = view.getUint8(at + 1);
    at += 2;
    if (kind !== QNAT_KIND.NF4 && kind !== QNAT_KIND.F32) {
      fail(`tensor "${name}" has unknown kind ${kind} (0 NF4, 1 F32)`);
    }
    if (ndim > QNAT_MAX_DIMS) fail(`tensor "${name}" has ${ndim} dims, at most ${QNAT_MAX_DIMS}`);
    need(8 * ndim + 28);
    const shape: number[] = [];
    for (let d = 0; d < ndim; d++) {
      shape.push(u64(view, at, `tensor "${name}" dim ${d}`, path, base + at));
      at += 8;
    }
    let elements = 0;
    try {
      elements = elementCount(shape);
    } catch (cause) {
      fail(`tensor "${name}" has an invalid shape: ${(cause as Error).message}`);
    }
    const blockSize = view.getUint32(at, true);
    const blockCount = u64(view, at + 4, `tensor "${name}" block_count`, path, base + at + 4);
    const dataOffset = u64(view, at + 12, `tensor "${name}" data_offset`, path, base + at + 12);
    const dataSize = u64(view, at + 20, `tensor "${name}" data_size`, path, base + at + 20);
    at += 28;
    if (kind === QNAT_KIND.NF4) {
      if (blockSize < 2 || blockSize % 2 !== 0) {
        fail(`tensor "${name}" block size ${blockSize} is not an even number ≥ 2`);
      }
      if (elements % blockSize !== 0) {
        fail(
          `tensor "${name}" has ${elements} elements, not a multiple of its block size ${blockSize}`,
        );
      }
      if (blockCount !== elements / blockSize) {
        fail(
          `tensor "${name}" block count ${blockCount} does not match ${elements} elements / block size ${blockSize}`,
        );
      }
    } else if (blockSize !== 0 || blockCount !== 0) {
      fail(`F32 tensor "${name}" must have block size 0 and block count 0`);
    }
    const expected = qnatSectionLayout(kind, elements, blockCount, flags).size;
    if (dataSize !== expected) {
      fail(
        `tensor "${name}" data size ${dataSize} does not match its ${
          kind === QNAT_KIND.NF4 ? "NF4" : "F32"
        } [${shape}] section (${expected} bytes)`,
      );
    }
    headers.push({ name, kind, shape, blockSize, blockCount, dataOffset, dataSize });
  }
  return { headers, end: base + at };
}
