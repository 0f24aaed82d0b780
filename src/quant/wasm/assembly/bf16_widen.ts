// AssemblyScript: BF16 → f32 (exact: the 16 bits become the top half), so a
// BF16 payload can be encoded to a block type inside the module without the
// host decoding it first (kernels.ts' encodeFromBf16).

/** Widen `n` bf16 values at `src` (n a multiple of 8) to f32 at `dst`. */
export function widenBf16(src: usize, dst: usize, n: i32): void {
  const zero = i8x16.splat(0);
  for (let i = 0; i < n; i += 8) {
    const h = v128.load(src + <usize>i * 2);
    const o = dst + <usize>i * 4;
    // The 16-bit interleaves of (0, h), which V8 recognizes as one instruction
    // each (a shuffle repeating zero's lane 0 is a general two-operand one).
    v128.store(o, i8x16.shuffle(zero, h, 0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23));
    v128.store(o + 16, i8x16.shuffle(zero, h, 8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31));
  }
}
