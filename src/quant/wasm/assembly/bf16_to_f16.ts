// AssemblyScript: BF16 payload bytes straight to F16, the bytes llama-quantize
// writes for an F16 tensor of a BF16 one (ggml_bf16_to_fp32_row, then
// ggml_fp32_to_fp16_row: round to nearest even, subnormals, ±infinity past
// 65504, and every NaN 0x7e00 with its sign — not half_encode.ts' NaN, which
// keeps the top payload bits). Eight values a vector, in 16-bit lanes: a BF16
// value in F16's normal range converts exactly (its 7 mantissa bits fit in
// F16's 10), a rebias of the exponent and a shift; only a vector holding a
// value outside it (below 2^-14, a zero, ±infinity or NaN, 65536 and up)
// takes the general lanes, whose subnormals are rounded by an f32 addition.

// Loop constants, read once (AssemblyScript writes a v128.const at each use,
// which V8 rebuilds in every iteration; see legacy_bf16.ts).
const K: usize = memory.data<i16>([
  0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, // all but the sign
  0x387f, 0x387f, 0x387f, 0x387f, 0x387f, 0x387f, 0x387f, 0x387f, // just below 2^-14
  0x4780, 0x4780, 0x4780, 0x4780, 0x4780, 0x4780, 0x4780, 0x4780, // 65536: F16's infinity
  0x3800, 0x3800, 0x3800, 0x3800, 0x3800, 0x3800, 0x3800, 0x3800, // the exponents' bias gap
], 16);

/** The F16 bits of eight BF16 values of any kind (ggml's rounding and NaN). */
@inline function general(x: v128): v128 {
  const a = v128.and(x, i16x8.splat(0x7fff));
  // Below 2^-14: adding 0.5 rounds |x| to a multiple of 2^-24 (round to
  // nearest even; wasm keeps subnormals), whose count is the F16 subnormal
  // (or 0, or the smallest normal, 0x400).
  const half = i32x4.splat(0x3f000000);
  const lo = i32x4.shl(i32x4.extend_low_i16x8_u(a), 16);
  const hi = i32x4.shl(i32x4.extend_high_i16x8_u(a), 16);
  const sub = i16x8.narrow_i32x4_u(
    i32x4.sub(f32x4.add(lo, half), half),
    i32x4.sub(f32x4.add(hi, half), half),
  );
  const normal = i16x8.shl(i16x8.sub(a, i16x8.splat(0x3800)), 3);
  let r = v128.bitselect(normal, sub, i16x8.gt_s(a, i16x8.splat(0x387f)));
  r = v128.bitselect(i16x8.splat(0x7c00), r, i16x8.gt_s(a, i16x8.splat(0x477f)));
  r = v128.bitselect(i16x8.splat(0x7e00), r, i16x8.gt_s(a, i16x8.splat(0x7f80)));
  return v128.or(r, v128.xor(x, a));
}

/** Convert `n` BF16 values at `src` to F16 at `dst` (2n bytes each; `dst` may be `src`). */
export function encodeF16FromBf16(src: usize, dst: usize, n: i32): void {
  const mag = v128.load(K);
  const low = v128.load(K + 16);
  const top = v128.load(K + 32);
  const bias = v128.load(K + 48);
  let i = 0;
  for (; i + 16 <= n; i += 16) {
    const p = src + <usize>i * 2;
    const x0 = v128.load(p);
    const x1 = v128.load(p + 16);
    const a0 = v128.and(x0, mag);
    const a1 = v128.and(x1, mag);
    // Every lane in F16's normal range: 2^-14 <= |x| < 65536.
    const in0 = v128.and(i16x8.gt_s(a0, low), i16x8.lt_s(a0, top));
    const in1 = v128.and(i16x8.gt_s(a1, low), i16x8.lt_s(a1, top));
    const q = dst + <usize>i * 2;
    if (i16x8.all_true(v128.and(in0, in1))) {
      v128.store(q, v128.or(i16x8.shl(i16x8.sub(a0, bias), 3), v128.xor(x0, a0)));
      v128.store(q + 16, v128.or(i16x8.shl(i16x8.sub(a1, bias), 3), v128.xor(x1, a1)));
    } else {
      v128.store(q, general(x0));
      v128.store(q + 16, general(x1));
    }
  }
  for (; i < n; i++) {
    const x = i16x8.splat(load<i16>(src + <usize>i * 2));
    store<u16>(dst + <usize>i * 2, <u16>i16x8.extract_lane_u(general(x), 0));
  }
}
