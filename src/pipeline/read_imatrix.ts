/**
 * `readImportanceMatrix()`: load llama.cpp's legacy `.dat` importance matrix
 * from disk for `--imatrix`, with a size limit checked before reading.
 *
 * @module
 */

import { ModelFormatError, UsageError } from "../errors.ts";
import { type ImportanceMatrix, parseImatrixDat } from "../formats/imatrix/imatrix_dat.ts";

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
 * @param path The `.dat` file.
 * @returns The matrix.
 * @throws {Deno.errors.NotFound} When the file does not exist.
 * @throws {UsageError} When it cannot be read otherwise (not a file, no permission).
 * @throws {ModelFormatError} When it is malformed or too large.
 */
export async function readImportanceMatrix(path: string): Promise<ImportanceMatrix> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (error) {
    // A missing path is NotFound wherever the library meets one.
    if (error instanceof Deno.errors.NotFound) {
      throw new Deno.errors.NotFound(`Cannot read importance matrix "${path}": no such file`, {
        cause: error,
      });
    }
    throw new UsageError(`Cannot read importance matrix "${path}": ${reason(error)}`, {
      cause: error,
    });
  }
  if (!info.isFile) throw new UsageError(`Cannot read importance matrix "${path}": not a file`);
  if (info.size > MAX_IMATRIX_BYTES) {
    throw new ModelFormatError(
      "imatrix",
      path,
      `${info.size} bytes is more than the ${MAX_IMATRIX_BYTES} an importance matrix may have`,
    );
  }
  const bytes = await Deno.readFile(path);
  return parseImatrixDat(bytes, path);
}

function reason(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "no such file";
  if (error instanceof Deno.errors.PermissionDenied) return "permission denied";
  return error instanceof Error ? error.message : String(error);
}
