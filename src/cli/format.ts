// This module is browser compatible.

/**
 * Human-readable numbers for the CLI: sizes, rates, durations, counts.
 *
 * @module
 */

import { terminalSafe } from "./terminal_text.ts";

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/**
 * Format a byte count with a binary unit, e.g. `1.50 GiB`.
 *
 * @param bytes A non-negative byte count.
 * @returns The formatted size.
 */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0
    ? `${value} B`
    : `${value.toFixed(value < 10 ? 2 : value < 100 ? 1 : 0)} ${UNITS[unit]}`;
}

/**
 * Format seconds as `m:ss` or `h:mm:ss`.
 *
 * @param seconds A duration; non-finite values give `--:--`.
 * @returns The formatted duration.
 */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "--:--";
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}

/**
 * Format an integer with thousands separators, e.g. `1,234,567`.
 *
 * @param n The number.
 * @returns The formatted number.
 */
export function formatCount(n: number): string {
  // By hand, not toLocaleString: its first call loads the ICU locale data,
  // ~0.1 CPU-s at the end of every conversion.
  if (!Number.isSafeInteger(n)) return String(n);
  const digits = String(Math.abs(n));
  let out = "";
  for (let end = digits.length; end > 0; end -= 3) {
    out = digits.slice(Math.max(0, end - 3), end) + (out === "" ? "" : `,${out}`);
  }
  return n < 0 ? `-${out}` : out;
}

/**
 * Parse a size such as `5GB`, `500MiB`, `1.5G` or `1048576` into bytes.
 * Decimal units (KB, MB, GB) are powers of 1000, binary ones (KiB, MiB, GiB)
 * and bare letters (K, M, G) powers of 1024.
 *
 * @param text The size as the user wrote it.
 * @returns The size in bytes.
 * @throws {RangeError} When the text is not a positive size.
 */
export function parseSize(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$/i.exec(text);
  if (!match) {
    throw new RangeError(`Cannot parse size "${text}": expected e.g. 5GB, 500MiB or 1048576`);
  }
  const [, number, prefix = "", suffix = ""] = match;
  const power = " kmgt".indexOf(prefix.toLowerCase() || " ");
  const decimal = suffix.toLowerCase() === "b" && prefix !== "";
  const bytes = Math.floor(Number(number) * (decimal ? 1000 : 1024) ** power);
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new RangeError(`Cannot parse size "${text}": must be a positive number of bytes`);
  }
  return bytes;
}

/**
 * Lay out rows as left-aligned columns separated by two spaces.
 *
 * @param rows Cells, one array per row; the first row is usually the heading.
 * @returns The table, one line per row.
 */
export function formatTable(cells: readonly (readonly string[])[]): string[] {
  // Cells hold names from files: escaped, so none can move the cursor.
  const rows = cells.map((row) => row.map(terminalSafe));
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => widths[i] = Math.max(widths[i] ?? 0, cell.length));
  }
  return rows.map((row) =>
    row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join("  ")
      .trimEnd()
  );
}
