// This module is browser compatible.

/**
 * llama.cpp's legacy importance-matrix file (`llama-imatrix -o FILE.dat`, the
 * format `llama-quantize --imatrix` reads at commit c392e50), all integers
 * little-endian int32:
 *
 * ```
 * n_entries
 * n_entries × { name_len, name[name_len], ncall, nval, f32 values[nval] }
 * optional: last_call, dataset_len, dataset[dataset_len]
 * ```
 *
 * Each entry holds one value per column of a weight matrix (per matrix, for
 * MoE expert tensors): sums of squared activations over `ncall` calls, which
 * llama-quantize divides by `ncall`. The file is untrusted input: every count
 * is checked against the bytes left before anything is allocated.
 *
 * @module
 */

import { ModelFormatError } from "../../errors.ts";

/** An importance matrix, ready for the quantizers. */
export interface ImportanceMatrix {
  /** Where it came from (for messages). */
  readonly source: string;
  /** Per GGUF tensor name: the mean squared activation of each column. */
  readonly entries: ReadonlyMap<string, Float32Array>;
  /** Chunks of calibration text it was computed on (`last_call`), when the file says. */
  readonly chunks?: number;
  /**
   * The calibration file's name, when the file says; of a GGUF matrix listing
   * several, the first, which is what llama-quantize records.
   */
  readonly dataset?: string;
}

/** Longest entry name accepted: GGUF names are at most 64 bytes; this leaves room without trusting the file. */
const MAX_NAME_BYTES = 4096;
/** Smallest entry: name length, one name byte, ncall, nval, one value. */
const MIN_ENTRY_BYTES = 17;

/**
 * Parse a legacy `.dat` importance matrix, strictly: every count must fit the
 * bytes that follow, names must be unique UTF-8 without NUL, values finite,
 * and the file must end exactly after the optional dataset trailer.
 *
 * @example Usage
 * ```ts
 * import { parseImatrixDat } from "./imatrix_dat.ts";
 * const name = new TextEncoder().encode("blk.0.attn_q.weight");
 * const b = new DataView(new ArrayBuffer(4 + 4 + name.length + 8 + 8));
 * b.setInt32(0, 1, true);
 * b.setInt32(4, name.length, true);
 * new Uint8Array(b.buffer).set(name, 8);
 * const o = 8 + name.length;
 * b.setInt32(o, 2, true); // ncall
 * b.setInt32(o + 4, 2, true); // nval
 * b.setFloat32(o + 8, 4, true);
 * b.setFloat32(o + 12, 6, true);
 * const m = parseImatrixDat(new Uint8Array(b.buffer), "x.dat");
 * console.assert(m.entries.get("blk.0.attn_q.weight")![1] === 3);
 * ```
 *
 * @param bytes The whole file.
 * @param source Its path, for messages.
 * @returns The matrix, values divided by their call counts.
 * @throws {ModelFormatError} For anything malformed (naming the file and byte offset).
 */
export function parseImatrixDat(bytes: Uint8Array, source: string): ImportanceMatrix {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fail = (reason: string, offset: number): never => {
    throw new ModelFormatError("imatrix", source, reason, { offset });
  };
  let p = 0;
  const int32 = (what: string): number => {
    if (bytes.length - p < 4) fail(`the file ends inside ${what}`, p);
    const v = dv.getInt32(p, true);
    p += 4;
    return v;
  };
  const count = int32("the entry count");
  if (count < 1) fail(`no data: the entry count is ${count}`, 0);
  if (count > (bytes.length - 4) / MIN_ENTRY_BYTES) {
    fail(`the entry count ${count} does not fit in ${bytes.length} bytes`, 0);
  }
  const names = new TextDecoder("utf-8", { fatal: true });
  const entries = new Map<string, Float32Array>();
  for (let i = 0; i < count; i++) {
    const at = p;
    const length = int32(`entry ${i + 1}'s name length`);
    if (length < 1 || length > MAX_NAME_BYTES || length > bytes.length - p) {
      fail(
        `entry ${
          i + 1
        }'s name length ${length} is not from 1 to ${MAX_NAME_BYTES} bytes in the file`,
        at,
      );
    }
    const raw = bytes.subarray(p, p + length);
    let name = "";
    try {
      name = names.decode(raw);
    } catch {
      fail(`entry ${i + 1}'s name is not UTF-8`, p);
    }
    if (name.includes("\0")) fail(`entry ${i + 1}'s name contains a NUL byte`, p);
    if (entries.has(name)) fail(`entry ${i + 1} repeats the name "${name}"`, at);
    p += length;
    const ncall = int32(`the call count of "${name}"`);
    const valuesAt = p;
    const nval = int32(`the value count of "${name}"`);
    if (nval < 1 || nval > (bytes.length - p) / 4) {
      fail(
        `"${name}" declares ${nval} values, the file has room for ${
          Math.floor((bytes.length - p) / 4)
        }`,
        valuesAt,
      );
    }
    const values = new Float32Array(nval);
    for (let j = 0; j < nval; j++) {
      const v = dv.getFloat32(p + 4 * j, true);
      // llama-quantize divides in f32 by the call count (when positive).
      const mean = ncall > 0 ? Math.fround(v / ncall) : v;
      if (!Number.isFinite(mean)) fail(`"${name}" holds a non-finite value (${v})`, p + 4 * j);
      values[j] = mean;
    }
    p += 4 * nval;
    entries.set(name, values);
  }
  if (p === bytes.length) return { source, entries };
  const lastCall = int32("the chunk count");
  const datasetAt = p;
  const datasetLength = int32("the dataset name length");
  if (datasetLength < 0 || datasetLength !== bytes.length - p) {
    fail(
      `the dataset name length ${datasetLength} does not match the ${bytes.length - p} bytes left`,
      datasetAt,
    );
  }
  let dataset = "";
  try {
    dataset = names.decode(bytes.subarray(p));
  } catch {
    fail("the dataset name is not UTF-8", p);
  }
  return { source, entries, chunks: lastCall, dataset };
}
