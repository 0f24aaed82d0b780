/**
 * `readImportanceMatrix()`: load a llama.cpp importance matrix from disk for
 * `--imatrix` — the legacy `.dat` or the newer GGUF form — with a size limit
 * checked before reading.
 *
 * @module
 */

import { ModelFormatError, UsageError } from "../errors.ts";
import { type ImportanceMatrix, parseImatrixDat } from "../formats/imatrix/imatrix_dat.ts";
import { parseImatrixGguf } from "../formats/imatrix/imatrix_gguf.ts";
import { BlobSource } from "../io/blob_source.ts";
import { fs, notFoundError, type RuntimeFile } from "../runtime/fs.ts";

export type { ImportanceMatrix };

/**
 * Largest file accepted (it is read whole): a mixture-of-experts model with
 * 60 layers of 256 experts and three 7168-column matrices each needs ~1.3 GB.
 */
export const MAX_IMATRIX_BYTES = 2 ** 31;

/**
 * Read and parse an importance matrix file.
 *
 * @example Usage
 * ```ts ignore
 * import { readImportanceMatrix } from "./read_imatrix.ts";
 * const m = await readImportanceMatrix("model-imatrix.dat");
 * console.log(m.entries.size);
 * ```
 *
 * @param path The `.dat` or `.gguf` file.
 * @returns The matrix.
 * @throws {Deno.errors.NotFound} When the file does not exist.
 * @throws {UsageError} When it cannot be read otherwise (not a file, no permission).
 * @throws {ModelFormatError} When it is malformed or too large.
 */
export async function readImportanceMatrix(path: string): Promise<ImportanceMatrix> {
  let file: RuntimeFile;
  try {
    file = await fs.open(path, { read: true });
  } catch (error) {
    // A missing path is NotFound wherever the library meets one.
    if (error instanceof fs.errors.NotFound) {
      throw notFoundError(`Cannot read importance matrix "${path}": no such file`, {
        cause: error,
      });
    }
    throw new UsageError(`Cannot read importance matrix "${path}": ${reason(error)}`, {
      cause: error,
    });
  }
  try {
    const info = await file.stat();
    if (!info.isFile) throw new UsageError(`Cannot read importance matrix "${path}": not a file`);
    if (info.size > MAX_IMATRIX_BYTES) {
      throw new ModelFormatError(
        "imatrix",
        path,
        `${info.size} bytes is more than the ${MAX_IMATRIX_BYTES} an importance matrix may have`,
      );
    }
    // Read what stat promised and no more: a file that grows meanwhile is not trusted further.
    const bytes = new Uint8Array(info.size);
    let n = 0;
    while (n < bytes.length) {
      const got = await file.read(bytes.subarray(n));
      if (got === null) break;
      n += got;
    }
    const data = bytes.subarray(0, n);
    // llama-imatrix's newer GGUF form starts with GGUF's magic; the legacy .dat with an entry count.
    if (n >= 4 && new TextDecoder().decode(data.subarray(0, 4)) === "GGUF") {
      return await parseImatrixGguf(new BlobSource(new Blob([data]), path), path);
    }
    return parseImatrixDat(data, path);
  } finally {
    file.close();
  }
}

function reason(error: unknown): string {
  if (error instanceof fs.errors.NotFound) return "no such file";
  if (error instanceof fs.errors.PermissionDenied) return "permission denied";
  if (error instanceof fs.errors.IsADirectory) return "not a file";
  return error instanceof Error ? error.message : String(error);
}
