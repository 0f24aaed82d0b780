/**
 * `--include-weights` and `--exclude-weights` as llama-quantize has them
 * (`prepare_imatrix` in tools/quantize/quantize.cpp): which entries of the
 * importance matrix are used, by substring of their tensor names.
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import type { ImportanceMatrix } from "../formats/imatrix/imatrix_dat.ts";

/**
 * The matrix with only the entries asked for: those whose name holds none of
 * `exclude`, or, with `include`, those whose name holds one of them. A
 * matrix left with no entry is no matrix (llama-quantize then quantizes, and
 * records, without one).
 *
 * @example Usage
 * ```ts
 * import { selectImportance } from "./imatrix_weights.ts";
 * const m = { source: "m.dat", entries: new Map([["blk.0.attn_q.weight", new Float32Array(1)], ["blk.0.ffn_up.weight", new Float32Array(1)]]) };
 * console.assert(selectImportance(m, [], ["attn"])!.entries.size === 1);
 * console.assert(selectImportance(m, ["x"], []) === undefined);
 * ```
 *
 * @param matrix The matrix read.
 * @param include `--include-weights` values.
 * @param exclude `--exclude-weights` values.
 * @returns The matrix to use, or undefined when no entry is left.
 * @throws {UsageError} When both lists are given (llama-quantize refuses that too).
 */
export function selectImportance(
  matrix: ImportanceMatrix,
  include: readonly string[],
  exclude: readonly string[],
): ImportanceMatrix | undefined {
  if (include.length > 0 && exclude.length > 0) {
    throw new UsageError(
      "includeWeights and excludeWeights cannot be used together (as in llama-quantize)",
    );
  }
  if (include.length === 0 && exclude.length === 0) return matrix;
  const keep = (name: string) =>
    include.length > 0
      ? include.some((s) => name.includes(s))
      : !exclude.some((s) => name.includes(s));
  const entries = new Map([...matrix.entries].filter(([name]) => keep(name)));
  return entries.size === 0 ? undefined : { ...matrix, entries };
}
