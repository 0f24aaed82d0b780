// This module is browser compatible.

/**
 * Which APR readers decode a row-padded K-quant tensor right: a Q4_K or
 * Q6_K tensor whose rows are not whole 256-value super-blocks, each row
 * padded to whole super-blocks (`--row-fallback padded`, or an older
 * aprkit's or aprender's file). Measured with each reader's own code
 * (issue 34: 78 tensors of one such file decoded with a max error of
 * 0.13–1.05): realizar's transformer loader decodes row by row; aprender's
 * `get_tensor_as_f32` and realizar's `get_tensor_f32` read the payload as
 * one flat run of super-blocks. The import note, `apr validate` and
 * docs/INTEROP.md say it from here.
 *
 * @module
 */

import type { DType } from "../../dtype.ts";

/** Values per K-quant super-block. */
const SUPER_BLOCK = 256;

/** What one reader makes of a row-padded K-quant tensor. */
export interface RowPaddedReaderSupport {
  /** The reader. */
  readonly reader: string;
  /** Whether its values are the tensor's. */
  readonly decodes: boolean;
  /** What it does, in words that follow its name. */
  readonly detail: string;
}

/** Every reader examined, and whether it decodes a row-padded K-quant right. */
export const ROW_PADDED_READERS: readonly RowPaddedReaderSupport[] = [
  { reader: "aprkit", decodes: true, detail: "decodes it row by row (every command)" },
  {
    reader: "realizar's transformer loader",
    decodes: true,
    detail: "decodes it row by row (the loader its run paths use)",
  },
  {
    reader: "realizar's get_tensor_f32",
    decodes: false,
    detail: "reads the rows as one flat run of super-blocks: wrong values",
  },
  {
    reader: "aprender's get_tensor_as_f32",
    decodes: false,
    detail: "reads the rows as one flat run of super-blocks: wrong values",
  },
];

/**
 * Whether a tensor is a row-padded K-quant: Q4_K or Q6_K with rows that
 * are not whole super-blocks.
 *
 * @example Usage
 * ```ts
 * import { isRowPaddedKQuant } from "./row_padded_readers.ts";
 * console.assert(isRowPaddedKQuant({ dtype: "Q4_K", shape: [4, 128] }));
 * console.assert(!isRowPaddedKQuant({ dtype: "Q4_K", shape: [4, 512] }));
 * ```
 *
 * @param info The tensor's type and shape.
 * @returns The answer.
 */
export function isRowPaddedKQuant(
  info: { readonly dtype: DType; readonly shape: readonly number[] },
): boolean {
  const cols = info.shape[info.shape.length - 1] ?? 1;
  return (info.dtype === "Q4_K" || info.dtype === "Q6_K") && cols % SUPER_BLOCK !== 0;
}

/**
 * The one line an import or `apr validate` says about a file's row-padded
 * K-quant tensors.
 *
 * @param count How many there are.
 * @param listed Some of their names, already joined.
 * @returns The line.
 */
export function rowPaddedReadersLine(count: number, listed: string): string {
  const wrong = ROW_PADDED_READERS.filter((r) => !r.decodes).map((r) => r.reader);
  const right = ROW_PADDED_READERS.filter((r) => r.decodes && r.reader !== "aprkit")
    .map((r) => r.reader);
  return `${count} K-quant tensor(s) have rows padded to whole super-blocks (${listed}): ` +
    `${right.join(", ")} decodes them right; ${wrong.join(" and ")} decode them wrong ` +
    "(they read the rows as one flat run of super-blocks)";
}
