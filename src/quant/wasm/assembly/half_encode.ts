// AssemblyScript: f32 → f16 and f32 → bf16 encoders, identical to ../../f16.ts'
// f32BitsToF16Bits and ../../bf16.ts' f32BitsToBf16Bits (round to nearest even,
// NaN forced quiet with sign and top payload bits kept). Element-wise: lanes run
// consecutive values, every range of the scalar code becomes a lane mask.

@inline function f16Lanes(x: v128): v128 {
  const sign = v128.and(i32x4.shr_u(x, 16), i32x4.splat(0x8000));
  const a = v128.and(x, i32x4.splat(0x7fffffff));
  // Normal range: rebias the exponent, round the 13 dropped bits to even.
  const m = i32x4.sub(a, i32x4.splat(0x38000000));
  const odd = v128.and(i32x4.shr_u(m, 13), i32x4.splat(1));
  const normal = i32x4.shr_u(i32x4.add(i32x4.add(m, i32x4.splat(0xfff)), odd), 13);
  // Below 2^-14: adding 0.5 rounds |x| to a multiple of 2^-24 (RNE, wasm keeps
  // subnormals), whose count is the f16 subnormal (or 0, or the smallest normal).
  const half = i32x4.splat(0x3f000000);
  const sub = i32x4.sub(f32x4.add(a, half), half);
  // Overflow: infinity; NaN: quiet, top payload bits kept.
  const nan = v128.or(i32x4.splat(0x7e00), v128.and(i32x4.shr_u(a, 13), i32x4.splat(0x3ff)));
  let r = v128.bitselect(normal, sub, i32x4.ge_s(a, i32x4.splat(0x38800000)));
  r = v128.bitselect(i32x4.splat(0x7c00), r, i32x4.ge_s(a, i32x4.splat(0x477ff000)));
  r = v128.bitselect(nan, r, i32x4.gt_s(a, i32x4.splat(0x7f800000)));
  return v128.or(r, sign);
}

@inline function bf16Lanes(x: v128): v128 {
  const odd = v128.and(i32x4.shr_u(x, 16), i32x4.splat(1));
  const rounded = i32x4.shr_u(i32x4.add(i32x4.add(x, i32x4.splat(0x7fff)), odd), 16);
  const nan = v128.or(i32x4.shr_u(x, 16), i32x4.splat(0x40));
  const isNan = i32x4.gt_s(v128.and(x, i32x4.splat(0x7fffffff)), i32x4.splat(0x7f800000));
  return v128.bitselect(nan, rounded, isNan);
}

/** Encode `n` f32 at `src` as little-endian f16 at `dst` (2n bytes). */
export function encodeF16(src: usize, dst: usize, n: i32): void {
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const p = src + <usize>i * 4;
    const lo = f16Lanes(v128.load(p));
    const hi = f16Lanes(v128.load(p + 16));
    v128.store(dst + <usize>i * 2, i16x8.narrow_i32x4_u(lo, hi));
  }
  for (; i < n; i++) {
    const x = i32x4.splat(load<i32>(src + <usize>i * 4));
    store<u16>(dst + <usize>i * 2, <u16>i32x4.extract_lane(f16Lanes(x), 0));
  }
}

/** Encode `n` f32 at `src` as little-endian bf16 at `dst` (2n bytes). */
export function encodeBf16(src: usize, dst: usize, n: i32): void {
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const p = src + <usize>i * 4;
    const lo = bf16Lanes(v128.load(p));
    const hi = bf16Lanes(v128.load(p + 16));
    v128.store(dst + <usize>i * 2, i16x8.narrow_i32x4_u(lo, hi));
  }
  for (; i < n; i++) {
    const x = i32x4.splat(load<i32>(src + <usize>i * 4));
    store<u16>(dst + <usize>i * 2, <u16>i32x4.extract_lane(bf16Lanes(x), 0));
  }
}
