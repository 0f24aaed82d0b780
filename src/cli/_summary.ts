// This module is browser compatible.

/**
 * Shared summaries for `inspect` and `tensors`: tensors grouped by dtype,
 * metadata values shortened for a terminal.
 *
 * @module
 */

import { elementCount } from "../dtype.ts";
import type { ModelHeader } from "../tensor.ts";

/** Tensors of one dtype. */
export interface DtypeSummary {
  /** The dtype. */
  dtype: string;
  /** Tensors of it. */
  tensors: number;
  /** Elements (parameters) in them. */
  params: number;
  /** Payload bytes. */
  bytes: number;
}

/**
 * Group a header's tensors by dtype.
 *
 * @param header The model header.
 * @returns One row per dtype, most bytes first.
 */
export function summarizeByDtype(header: ModelHeader): DtypeSummary[] {
  const rows = new Map<string, DtypeSummary>();
  for (const t of header.tensors) {
    const row = rows.get(t.dtype) ?? { dtype: t.dtype, tensors: 0, params: 0, bytes: 0 };
    row.tensors++;
    row.params += elementCount(t.shape);
    row.bytes += t.byteLength;
    rows.set(t.dtype, row);
  }
  // Ties by code point, not localeCompare: the same order (and --json) under every locale.
  return [...rows.values()].sort((a, b) =>
    b.bytes - a.bytes || (a.dtype < b.dtype ? -1 : a.dtype > b.dtype ? 1 : 0)
  );
}

/** Arrays longer than this are shown by their length only (vocabularies have 10^5 entries). */
export const SHOWN_ARRAY_LENGTH = 8;

/**
 * Shorten a metadata value for display or `--json`: long arrays become
 * `{ "array_length": N }`, long strings are cut.
 *
 * @param value Any JSON value.
 * @param maxString Longest string kept whole.
 * @returns A small JSON value.
 */
export function shortenValue(value: unknown, maxString = 200): unknown {
  if (typeof value === "string") {
    return value.length > maxString
      ? `${value.slice(0, maxString)}… (${value.length} chars)`
      : value;
  }
  if (Array.isArray(value)) {
    if (value.length > SHOWN_ARRAY_LENGTH) return { array_length: value.length };
    return value.map((v) => shortenValue(v, maxString));
  }
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, shortenValue(v, maxString)]),
    );
  }
  return value;
}

/**
 * Total parameters of a header.
 *
 * @param header The model header.
 * @returns Sum of the tensors' element counts.
 */
export function parameterCount(header: ModelHeader): number {
  return header.tensors.reduce((sum, t) => sum + elementCount(t.shape), 0);
}
