// AssemblyScript: the 2-bit level packing Q2_K, Q3_K and TQ2_0 share
// (ggml-quants.c's `qs[j/4 + l] = L[j+l] | L[j+l+32] << 2 | L[j+l+64] << 4 |
// L[j+l+96] << 6` for each 128-value half; ../../_k_pack.ts in TypeScript).

/** Pack the 256 levels (each 0..3) at `L` into 64 bytes at `q`. */
@inline export function packTwoBits(L: usize, q: usize): void {
  for (let j = 0; j < 256; j += 128) {
    for (let l = 0; l < 32; l += 16) {
      const p = L + <usize>(j + l);
      let v = v128.load(p);
      v = v128.or(v, i8x16.shl(v128.load(p + 32), 2));
      v = v128.or(v, i8x16.shl(v128.load(p + 64), 4));
      v = v128.or(v, i8x16.shl(v128.load(p + 96), 6));
      v128.store(q + <usize>(j / 4 + l), v);
    }
  }
}

/** Sixteen i32 lanes (each 0..255), in order, as sixteen bytes. */
@inline export function bytes16(a: v128, b: v128, c: v128, d: v128): v128 {
  return i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_u(a, b), i16x8.narrow_i32x4_u(c, d));
}
