// This module is browser compatible.

/**
 * The one-line notes an APR import owes its user about types it could not
 * keep (docs/INTEROP.md, "APR"): K-quant tensors whose rows are not whole
 * super-blocks, written in a type every APR reader decodes alike, and source
 * types APR has no code for (GGUF's Q5_K, Q8_0, Q5_0…), stored in a wider
 * type that holds their values exactly, or — the types aprkit decodes but
 * cannot encode (i-quants, ternary, FP4) — in F16 or the requested type.
 * Also the one a GGUF export owes for a single K-quant type: which tensors
 * took llama-quantize's fallback type.
 *
 * @module
 */

import { DTYPES } from "../dtype.ts";
import type { TensorPlan } from "../quant/plan_quantization.ts";
import type { RowFallback } from "../quant/apr_row_fallback.ts";
import { isRowPaddedKQuant, rowPaddedReadersLine } from "../formats/apr/row_padded_readers.ts";

/** At most this many tensor names are listed in a note. */
const LISTED = 3;

/**
 * The notes for one planned APR output, at most one per kind.
 *
 * @example Usage
 * ```ts
 * import { aprPlanNotes } from "./apr_plan_notes.ts";
 * const source = { name: "w", dtype: "F32" as const, shape: [4, 128], byteLength: 2048 };
 * const notes = aprPlanNotes([{
 *   source,
 *   info: { ...source, dtype: "APR_Q8", byteLength: 516 },
 *   action: "float",
 *   quantized: true,
 *   rowFallbackFrom: "Q4_K",
 * }]);
 * console.assert(notes.length === 1 && notes[0]!.startsWith("1 tensor(s) have rows"));
 * ```
 *
 * @param plans Every tensor's plan, in header order.
 * @param rowFallback The row fallback asked for (`"padded"`: padded K-quants are wanted).
 * @returns The notes, each one line.
 */
export function aprPlanNotes(
  plans: readonly TensorPlan[],
  rowFallback: RowFallback = "q8",
): string[] {
  const notes: string[] = [];
  const fellBack = plans.filter((p) => p.rowFallbackFrom !== undefined);
  if (fellBack.length > 0) {
    const from = distinct(fellBack.map((p) => p.rowFallbackFrom!));
    const to = distinct(fellBack.map((p) => p.info.dtype));
    const widths = distinct(
      fellBack.map((p) => String(p.info.shape[p.info.shape.length - 1] ?? 1)),
    );
    notes.push(
      `${fellBack.length} tensor(s) have rows that are not whole 256-value super-blocks ` +
        `(rows of ${widths}: ${names(fellBack)}); as ${from}, APR readers would decode them ` +
        "differently (aprender and realizar's get_tensor_f32 read them flat), so they are written " +
        `as ${to}, which every APR reader decodes alike (the rowFallback option; ` +
        "docs/QUANTIZATION.md)",
    );
  }
  // Row-padded K-quants, asked for (--row-fallback padded) or copied from an
  // APR source (an older aprkit's or aprender's file): only realizar's
  // transformer loader decodes them right, so say it either way.
  const padded = plans.filter((p) => p.quantized || p.action === "copy")
    .filter((p) => isRowPaddedKQuant(p.info));
  if (padded.length > 0) {
    notes.push(
      rowPaddedReadersLine(padded.length, names(padded)) + (
        rowFallback === "padded"
          ? " (--row-fallback padded; q8 or f16 write a type every APR reader decodes alike)"
          : "; they are copied from the source as they are: convert from the original model to " +
            "write the row fallback instead"
      ),
    );
  }
  // Decoded to F32, which holds every value of these types exactly (a
  // requested F16/BF16 cast is not "the same values", and not this note).
  const widened = plans.filter((p) =>
    p.action === "float" && p.info.dtype === "F32" &&
    DTYPES[p.source.dtype].layout === "row_blocks" &&
    DTYPES[p.source.dtype].aprCode === undefined && !DTYPES[p.source.dtype].decodeOnly
  );
  if (widened.length > 0) {
    const before = widened.reduce((s, p) => s + p.source.byteLength, 0);
    const after = widened.reduce((s, p) => s + p.info.byteLength, 0);
    notes.push(
      `${widened.length} tensor(s) of types ${distinct(widened.map((p) => p.source.dtype))} ` +
        `(${names(widened)}) have no APR type; storing them as F32 with the same values, ` +
        `${size(before)} → ${size(after)} (${(after / before).toFixed(1)}× larger; an export ` +
        "back to GGUF keeps them F32)",
    );
  }
  // Decode-only ggml types: no APR code and no encoder, so never kept as they are.
  const decoded = plans.filter((p) => DTYPES[p.source.dtype].decodeOnly);
  if (decoded.length > 0) {
    notes.push(
      `${decoded.length} tensor(s) of types ${distinct(decoded.map((p) => p.source.dtype))} ` +
        `(${names(decoded)}) have no APR type: decoded as ggml does and written as ` +
        `${distinct(decoded.map((p) => p.info.dtype))}`,
    );
  }
  return notes;
}

/**
 * The note for a GGUF output of one K-quant type (`q4_k`, `q6_k`): tensors
 * whose rows are not whole super-blocks get llama-quantize's fallback type
 * (Q5_0, Q8_0…), encoded from the source; `undefined` when none do.
 *
 * @example Usage
 * ```ts
 * import { ggufRowFallbackNote } from "./apr_plan_notes.ts";
 * const source = { name: "w", dtype: "F32" as const, shape: [4, 64], byteLength: 1024 };
 * const note = ggufRowFallbackNote([{
 *   source,
 *   info: { ...source, dtype: "Q5_0", byteLength: 176 },
 *   action: "float",
 *   quantized: true,
 *   rowFallbackFrom: "Q4_K",
 * }]);
 * console.assert(note!.startsWith("1 tensor(s) have rows of 64"));
 * ```
 *
 * @param plans Every tensor's plan, in header order.
 * @returns The note, one line, or `undefined`.
 */
export function ggufRowFallbackNote(plans: readonly TensorPlan[]): string | undefined {
  const fellBack = plans.filter((p) => p.rowFallbackFrom !== undefined);
  if (fellBack.length === 0) return undefined;
  const widths = distinct(fellBack.map((p) => String(p.info.shape[p.info.shape.length - 1] ?? 1)));
  return `${fellBack.length} tensor(s) have rows of ${widths}, not whole ` +
    `${distinct(fellBack.map((p) => p.rowFallbackFrom!))} blocks (${names(fellBack)}); ` +
    `written as ${distinct(fellBack.map((p) => p.info.dtype))}, llama-quantize's fallback`;
}

function distinct(values: readonly string[]): string {
  return [...new Set(values)].join("/");
}

function names(plans: readonly TensorPlan[]): string {
  const listed = plans.slice(0, LISTED).map((p) => p.source.name).join(", ");
  return plans.length > LISTED ? `${listed}, …` : listed;
}

function size(bytes: number): string {
  return bytes >= 2 ** 20
    ? `${(bytes / 2 ** 20).toFixed(1)} MiB`
    : `${(bytes / 1024).toFixed(1)} KiB`;
}
