/**
 * How aprender's and realizar's APR readers turn a tensor into f32 values,
 * written for the tests from their public sources (docs/INTEROP.md, "APR"),
 * independently of aprkit's reader. Only the rules that decide what a value
 * is are reproduced: the header and index as APR_V2.md §2 and §4 lay them
 * out, and per dtype
 *
 * - aprender's `AprV2Reader::get_tensor_as_f32` and realizar's
 *   `get_tensor_f32` (`"flat"`): F32, F16, APR_Q8 (`f32` scale, then
 *   `i8 × scale`), and Q4_K/Q6_K as one flat run of `ceil(n / 256)`
 *   super-blocks whose first `n` values are the tensor (`dequantize_q4_k(data,
 *   0, element_count)`): no row padding;
 * - realizar's transformer loader (`"rows"`): the same, except that Q4_K/Q6_K
 *   rows are decoded one by one, each as `ceil(cols / 256)` super-blocks.
 *
 * The K-quant super-block arithmetic itself is aprkit's decoder (checked
 * against llama.cpp's `ggml-quants.c` output elsewhere); what differs
 * between the readers, and what these tests judge, is the layout.
 */

import { decodeToFloat32 } from "../../src/quant/decode.ts";

/** Which reader's rules decode the file. */
export type ReaderRule = "flat" | "rows";

/** One index entry, as APR_V2.md §4 lays it out. */
export interface RuleEntry {
  name: string;
  code: number;
  shape: number[];
  offset: number;
  size: number;
}

/** An APR file parsed with the readers' rules. */
export interface RuleFile {
  flags: number;
  metadata: Record<string, unknown>;
  entries: RuleEntry[];
  dataOffset: number;
  bytes: Uint8Array;
}

/** Parse an uncompressed APR v2 file's header, metadata and index. */
export function parseApr(bytes: Uint8Array): RuleFile {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, false) !== 0x41505200) throw new Error("not APR");
  const flags = view.getUint16(6, true);
  const count = view.getUint32(8, true);
  const metaOffset = Number(view.getBigUint64(12, true));
  const metaSize = view.getUint32(20, true);
  const indexOffset = Number(view.getBigUint64(24, true));
  const dataOffset = Number(view.getBigUint64(32, true));
  const metadata = JSON.parse(
    new TextDecoder().decode(bytes.subarray(metaOffset, metaOffset + metaSize)),
  );
  const entries: RuleEntry[] = [];
  let at = indexOffset;
  for (let i = 0; i < count; i++) {
    const nameLength = view.getUint16(at, true);
    const name = new TextDecoder().decode(bytes.subarray(at + 2, at + 2 + nameLength));
    at += 2 + nameLength;
    const code = bytes[at]!;
    const ndim = bytes[at + 1]!;
    at += 2;
    const shape: number[] = [];
    for (let d = 0; d < ndim; d++, at += 8) shape.push(Number(view.getBigUint64(at, true)));
    const offset = Number(view.getBigUint64(at, true));
    const size = Number(view.getBigUint64(at + 8, true));
    at += 16;
    entries.push({ name, code, shape, offset, size });
  }
  return { flags, metadata, entries, dataOffset, bytes };
}

/** IEEE binary16 to f32. */
function half(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac === 0 ? sign * Infinity : NaN;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

const SUPER_BLOCK = 256;
const K_BYTES: Readonly<Record<number, ["Q4_K" | "Q6_K", number]>> = {
  12: ["Q4_K", 144],
  14: ["Q6_K", 210],
};

/** Flat K-quant: `ceil(n / 256)` super-blocks (zeros past the payload), first `n` values. */
function flatKQuant(code: number, data: Uint8Array, n: number): Float32Array {
  const [dtype, blockBytes] = K_BYTES[code]!;
  const blocks = Math.ceil(n / SUPER_BLOCK);
  const padded = new Uint8Array(blocks * blockBytes);
  padded.set(data.subarray(0, padded.length));
  return decodeToFloat32(dtype, padded, [blocks * SUPER_BLOCK]).subarray(0, n);
}

/**
 * A tensor's values as a reader following `rule` decodes them.
 *
 * @throws {Error} For a dtype code the readers' rules here do not cover.
 */
export function readerValues(file: RuleFile, name: string, rule: ReaderRule): Float32Array {
  const entry = file.entries.find((e) => e.name === name);
  if (entry === undefined) throw new Error(`no tensor ${name}`);
  const start = file.dataOffset + entry.offset;
  const data = file.bytes.subarray(start, start + entry.size);
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const n = entry.shape.reduce((a, b) => a * b, 1);
  switch (entry.code) {
    case 0:
      return new Float32Array(n).map((_, i) => view.getFloat32(4 * i, true));
    case 1:
      return new Float32Array(n).map((_, i) => half(view.getUint16(2 * i, true)));
    case 9: {
      const scale = view.getFloat32(0, true);
      return new Float32Array(n).map((_, i) => view.getInt8(4 + i) * scale);
    }
    case 12:
    case 14: {
      if (rule === "flat") return flatKQuant(entry.code, data, n);
      const cols = entry.shape[entry.shape.length - 1] ?? 1;
      const rowBytes = Math.ceil(cols / SUPER_BLOCK) * K_BYTES[entry.code]![1];
      const out = new Float32Array(n);
      for (let r = 0; r < n / cols; r++) {
        const row = data.subarray(r * rowBytes, (r + 1) * rowBytes);
        out.set(flatKQuant(entry.code, row, cols), r * cols);
      }
      return out;
    }
    default:
      throw new Error(`dtype code ${entry.code} of ${name} is not covered by these rules`);
  }
}
