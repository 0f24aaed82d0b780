// This module is browser compatible.

/**
 * Bounds on JSON from a file checked before parsing it: how deeply it nests
 * and how many items it holds. `JSON.parse` copes with
 * any depth, but what handles the value afterwards (printing it, copying it
 * into another file's metadata) recurses and overflows the stack: a million
 * `[` in an APR file's metadata made `apr inspect` exit 1 "Maximum call
 * stack size exceeded" (docs/SECURITY.md).
 *
 * @module
 */

/** Deepest nesting of arrays and objects accepted; real metadata nests fewer than 10 levels. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether JSON text nests arrays and objects deeper than `limit`. A linear
 * scan that skips strings (escapes included); it does not check the syntax,
 * which `JSON.parse` does after it.
 *
 * @example Usage
 * ```ts
 * import { jsonNestsDeeperThan } from "./json_depth.ts";
 * console.assert(jsonNestsDeeperThan("[[[1]]]", 2));
 * console.assert(!jsonNestsDeeperThan('{"a":"[[[["}', 2));
 * ```
 *
 * @param text The JSON text.
 * @param limit The deepest nesting allowed.
 * @returns `true` when some value nests deeper.
 */
export function jsonNestsDeeperThan(text: string, limit: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = closingQuote(text, i);
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

/**
 * Whether JSON text holds more than `limit` array elements and object members
 * in all (commas outside strings, plus one). `JSON.parse` of a 110 MB index
 * of 8 million one-character entries took 110 s and 1.9 GB; counting first
 * takes a linear scan of the text, which is already in memory.
 *
 * @example Usage
 * ```ts
 * import { jsonHoldsMoreThan } from "./json_depth.ts";
 * console.assert(jsonHoldsMoreThan('{"a":1,"b":[2,3]}', 3));
 * console.assert(!jsonHoldsMoreThan('{"a":"x,y,z"}', 1));
 * ```
 *
 * @param text The JSON text.
 * @param limit The most items allowed.
 * @returns `true` when it holds more.
 */
export function jsonHoldsMoreThan(text: string, limit: number): boolean {
  let items = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = closingQuote(text, i);
    } else if (c === 0x2c && ++items > limit) {
      return true;
    }
  }
  return false;
}

/**
 * Where the string opened by the quote at `open` ends: the next quote not
 * escaped by a backslash, or the end of the text.
 */
function closingQuote(text: string, open: number): number {
  let i = open + 1;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) i++;
    else if (c === 0x22) break;
  }
  return i;
}
