// This module is browser compatible.

/**
 * Numbers and bytes as the formats' messages show them in hexadecimal: a
 * CRC as eight digits, a file's first bytes as spaced pairs.
 *
 * @module
 */

/**
 * A 32-bit value as eight hex digits (`0000abcd`), as CRC messages show it.
 *
 * @param n The value.
 * @returns The digits, without `0x`.
 */
export function hexWord(n: number): string {
  return n.toString(16).padStart(8, "0");
}

/**
 * Bytes as spaced hex pairs (`41 50 52 00`), as a wrong magic is shown.
 *
 * @param bytes The bytes.
 * @returns The pairs.
 */
export function hexBytes(bytes: Uint8Array): string {
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join(" ");
}
