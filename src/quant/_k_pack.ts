// This module is browser compatible.

/**
 * Internal: the 2-bit level packing Q2_K and Q3_K share (ggml-quants.c's
 * `qs[j/4 + l] = L[j+l] | L[j+l+32] << 2 | L[j+l+64] << 4 | L[j+l+96] << 6`
 * for each half of a super-block).
 *
 * @module
 */

/** Pack 256 levels (each 0..3) into 64 bytes at `y[o..)`. */
export function packTwoBits(L: Uint8Array, y: Uint8Array, o: number): void {
  for (let j = 0; j < 256; j += 128) {
    for (let l = 0; l < 32; l++) {
      y[o + j / 4 + l] = (L[j + l]! | (L[j + l + 32]! << 2) | (L[j + l + 64]! << 4) |
        (L[j + l + 96]! << 6)) & 255;
    }
  }
}
