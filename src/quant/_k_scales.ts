// This module is browser compatible.

/**
 * Internal: the packed 6-bit scale/min pairs shared by Q4_K and Q5_K
 * (APR_V2.md §5, llama.cpp's `get_scale_min_k4`).
 *
 * @module
 */

/**
 * Read sub-block `j`'s scale and min from the 12 bytes at `b[o..o+12)`.
 * Writes `[scale, min]` into `out`.
 */
export function scaleMinK4(j: number, b: Uint8Array, o: number, out: Uint8Array): void {
  if (j < 4) {
    out[0] = b[o + j]! & 63;
    out[1] = b[o + j + 4]! & 63;
  } else {
    out[0] = (b[o + j + 4]! & 15) | ((b[o + j - 4]! >>> 6) << 4);
    out[1] = (b[o + j + 4]! >>> 4) | ((b[o + j]! >>> 6) << 4);
  }
}
