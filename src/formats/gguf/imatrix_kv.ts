// This module is browser compatible.

/**
 * The `quantize.imatrix.*` keys `llama-quantize --imatrix` adds to
 * the GGUF it writes, so tools can tell which importance matrix a model was
 * quantized with.
 *
 * @module
 */

import type { ImportanceMatrix } from "../imatrix/imatrix_dat.ts";
import { GgufValueType } from "./header.ts";
import type { GgufKvInput } from "./writer.ts";

/** llama-quantize copies the strings into a 128-byte buffer: 127 bytes and the terminator. */
const MAX_VALUE_BYTES = 127;

/**
 * The keys llama-quantize writes for an importance matrix, in its order:
 * the file, the calibration dataset (when the matrix names one), the number
 * of entries, and the number of chunks (when positive), the counts as
 * UINT32 (the llama.cpp node-llama-cpp 3.22.1 bundles writes its integer
 * overrides so; c392e50 wrote INT32).
 *
 * The file is recorded by its base name, not the path given as llama-quantize
 * does: a path names the user's folders (`/home/alice/...`) in a file they may
 * publish, and would make the output depend on where the command ran.
 *
 * @example Usage
 * ```ts
 * import { imatrixGgufKv } from "./imatrix_kv.ts";
 * const kv = imatrixGgufKv({ source: "/data/m.dat", entries: new Map(), chunks: 8, dataset: "c.txt" });
 * console.assert(kv[0]![1].value === "m.dat" && kv.length === 4);
 * ```
 *
 * @param matrix The importance matrix used (its `source` is the path it was read from).
 * @returns The pairs to append after the model's metadata.
 */
export function imatrixGgufKv(matrix: ImportanceMatrix): [string, GgufKvInput][] {
  const str = (value: string): GgufKvInput => ({
    type: GgufValueType.STRING,
    value: truncateUtf8(value, MAX_VALUE_BYTES),
  });
  const kv: [string, GgufKvInput][] = [["quantize.imatrix.file", str(baseName(matrix.source))]];
  if (matrix.dataset !== undefined) kv.push(["quantize.imatrix.dataset", str(matrix.dataset)]);
  kv.push(["quantize.imatrix.entries_count", {
    type: GgufValueType.UINT32,
    value: matrix.entries.size,
  }]);
  if (matrix.chunks !== undefined && matrix.chunks > 0) {
    kv.push(["quantize.imatrix.chunks_count", {
      type: GgufValueType.UINT32,
      value: matrix.chunks,
    }]);
  }
  return kv;
}

function baseName(path: string): string {
  return path.slice(Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\")) + 1);
}

/** At most `max` UTF-8 bytes, cut before a character rather than inside one (llama-quantize cuts bytes). */
function truncateUtf8(text: string, max: number): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= max) return text;
  let end = max;
  // Back up over continuation bytes (10xxxxxx) to the start of the cut character.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(bytes.subarray(0, end));
}
