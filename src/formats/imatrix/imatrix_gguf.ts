// This module is browser compatible.

/**
 * llama.cpp's GGUF importance-matrix file (the format `llama-imatrix` writes
 * since mid-2025; it did not exist at commit c392e50): a GGUF file whose
 * tensors are, per weight matrix `NAME`, `NAME.in_sum2` (F32, `ne = [columns,
 * matrices]`: sums of squared activations) and `NAME.counts` (F32, one per
 * matrix: how many activations were summed), with the metadata
 * `imatrix.datasets` (strings), `imatrix.chunk_count` and `imatrix.chunk_size`.
 * llama-quantize turns each entry into `in_sum2 / round(count)` per matrix,
 * or 1 for a matrix that saw no activations; so does this reader.
 *
 * @module
 */

import { ModelFormatError } from "../../errors.ts";
import type { ByteSource } from "../../io/byte_source.ts";
import { GgufValueType, parseGgufHeader } from "../gguf/header.ts";
import type { ImportanceMatrix } from "./imatrix_dat.ts";

const SUMS = ".in_sum2";
const COUNTS = ".counts";
/** Older-style activation sums some writers add: allowed, not used. */
const ACTIVATIONS = ".in_sum";

/**
 * Read a GGUF importance matrix. Every tensor must be an F32 `.in_sum2`,
 * `.counts` (or `.in_sum`) entry with its partner, the counts one per matrix,
 * the metadata llama-quantize requires present, and every value finite.
 *
 * @example Usage
 * ```ts ignore
 * import { parseImatrixGguf } from "./imatrix_gguf.ts";
 * import { openFileSource } from "../../io/file_source.ts";
 * const m = await parseImatrixGguf(await openFileSource("imatrix.gguf"), "imatrix.gguf");
 * console.log(m.entries.size, m.datasets);
 * ```
 *
 * @param source The file's bytes.
 * @param path Its path, for messages.
 * @returns The matrix.
 * @throws {ModelFormatError} For a malformed file (naming it).
 */
export async function parseImatrixGguf(
  source: ByteSource,
  path: string,
): Promise<ImportanceMatrix> {
  const header = await parseGgufHeader(source);
  const fail = (reason: string, offset?: number): never => {
    throw new ModelFormatError("imatrix", path, reason, offset === undefined ? {} : { offset });
  };
  const datasets = header.kv.get("imatrix.datasets");
  const chunkCount = header.kv.get("imatrix.chunk_count");
  if (datasets === undefined || chunkCount === undefined || !header.kv.has("imatrix.chunk_size")) {
    fail(
      "a GGUF importance matrix needs imatrix.datasets, imatrix.chunk_count and imatrix.chunk_size",
    );
  }
  if (header.tensors.length === 0) fail("no data: the file has no tensors");
  const byName = new Map(header.tensors.map((t) => [t.name, t]));
  const entries = new Map<string, Float32Array>();
  for (const t of header.tensors) {
    if (t.name.endsWith(COUNTS) || t.name.endsWith(ACTIVATIONS)) {
      const base = t.name.slice(0, t.name.lastIndexOf("."));
      if (!byName.has(`${base}${SUMS}`)) fail(`"${t.name}" has no "${base}${SUMS}"`, t.infoOffset);
      continue;
    }
    if (!t.name.endsWith(SUMS)) {
      fail(`"${t.name}" is not an importance matrix tensor (${SUMS}, ${COUNTS})`, t.infoOffset);
    }
    const base = t.name.slice(0, -SUMS.length);
    const counts = byName.get(`${base}${COUNTS}`);
    if (counts === undefined) fail(`"${t.name}" has no "${base}${COUNTS}"`, t.infoOffset);
    if (t.dtype !== "F32" || counts!.dtype !== "F32") {
      fail(`the sums and counts of "${base}" must be F32`, t.infoOffset);
    }
    const matrices = counts!.ne.reduce((a, b) => a * b, 1);
    const n = t.ne.reduce((a, b) => a * b, 1);
    if (matrices < 1 || n % matrices !== 0) {
      fail(`"${base}" has ${n} sums for ${matrices} counts`, t.infoOffset);
    }
    const sums = await readF32(source, header.dataOffset + t.offset, n);
    const count = await readF32(source, header.dataOffset + counts!.offset, matrices);
    const cols = n / matrices;
    const values = new Float32Array(n);
    for (let j = 0; j < matrices; j++) {
      // llama.cpp rounds each count to an integer (lround), then divides in f32.
      const c = Math.sign(count[j]!) * Math.round(Math.abs(count[j]!));
      for (let i = 0; i < cols; i++) {
        const v = c > 0 ? Math.fround(sums[j * cols + i]! / c) : 1;
        if (!Number.isFinite(v)) fail(`"${base}" holds a non-finite value`, t.infoOffset);
        values[j * cols + i] = v;
      }
    }
    entries.set(base, values);
  }
  const names = Array.isArray(datasets!.value) ? datasets!.value : [];
  const chunks = typeof chunkCount!.value === "number" ? chunkCount!.value : undefined;
  return {
    source: path,
    entries,
    ...(chunks !== undefined ? { chunks } : {}),
    ...(datasets!.type === GgufValueType.ARRAY && typeof names[0] === "string"
      ? { dataset: names[0] }
      : {}),
  };
}

async function readF32(source: ByteSource, offset: number, n: number): Promise<Float32Array> {
  const bytes = await source.read(offset, 4 * n);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = dv.getFloat32(4 * i, true);
  return out;
}
