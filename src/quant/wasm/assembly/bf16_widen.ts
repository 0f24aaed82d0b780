// AssemblyScript: BF16 → f32 (exact: the 16 bits become the top half), so a
// BF16 payload can be encoded to a block type inside the module without the
// host decoding it first (kernels.ts' encodeFromBf16).

/** Widen `n` bf16 values at `src` (n a multiple of 8) to f32 at `dst`. */
export function widenBf16(src: usize, dst: usize, n: i32): void {
  const zero = i8x16.splat(0);
  for (let i = 0; i < n; i += 8) {
    const h = v128.load(src + <usize>i * 2);
    const o = dst + <usize>i * 4;
    v128.store(o, i8x16.shuffle(zero, h, 0, 1, 16, 17, 0, 1, 18, 19, 0, 1, 20, 21, 0, 1, 22, 23));
    v128.store(o + 16, i8x16.shuffle(zero, h, 0, 1, 24, 25, 0, 1, 26, 27, 0, 1, 28, 29, 0, 1, 30, 31));
  }
}
