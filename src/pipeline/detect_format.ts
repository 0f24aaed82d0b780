// This module is browser compatible.

/**
 * Tell a model file's format from its first bytes, never from its name
 * (DESIGN.md §2.4).
 *
 * @module
 */

/** Formats aprkit reads. */
export type ModelFileFormat = "apr" | "gguf" | "safetensors" | "qnat";

const JSON_START = new Set([0x7b, 0x20, 0x09, 0x0a, 0x0d]); // { space tab LF CR

/** How many leading bytes {@linkcode detectFormat} needs. */
export const DETECT_BYTES = 9;

/**
 * Detect a model file's format from its first bytes.
 *
 * @param head The first {@linkcode DETECT_BYTES} bytes (fewer for tiny files).
 * @returns The format, or `undefined` when the bytes match none.
 *
 * @example Usage
 * ```ts
 * import { detectFormat } from "./detect_format.ts";
 * console.assert(detectFormat(new TextEncoder().encode("GGUF\x03\0\0\0")) === "gguf");
 * ```
 */
export function detectFormat(head: Uint8Array): ModelFileFormat | undefined {
  const magic = String.fromCharCode(...head.subarray(0, 4));
  // realizar also accepts the spelling "APR2" (APR_V2.md §6).
  if (magic === "APR\0" || magic === "APR2") return "apr";
  if (magic === "GGUF") return "gguf";
  if (magic === "QNAT") return "qnat";
  // SafeTensors has no magic: a u64 header length, then a JSON object, which
  // may start with whitespace (FORMATS.md §1). The length's high four bytes
  // are zero in any real file (a header is at most 100 MB): text never has
  // NUL bytes, so a README or a script is not taken for SafeTensors.
  if (
    head.length >= 9 && head[4] === 0 && head[5] === 0 && head[6] === 0 && head[7] === 0 &&
    JSON_START.has(head[8]!)
  ) {
    return "safetensors";
  }
  return undefined;
}
