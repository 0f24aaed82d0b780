// AssemblyScript: APR_Q4's encoder (APR_V2.md §5, Rust semantics), identical
// to ../../apr_q4.ts on whole 32-value blocks.

import { f32ToF16 } from "./common";

/** round(|r|) halves away from zero (trunc plus one when the exact fraction is ≥ 0.5; NaN → 0). */
@inline function roundAbs4(a: v128): v128 {
  const t = f32x4.trunc(a);
  return i32x4.sub(i32x4.trunc_sat_f32x4_s(t), f32x4.ge(f32x4.sub(a, t), f32x4.splat(<f32>0.5)));
}

/** 8 + clamp(round(v / s), -8, 7) on four lanes. */
@inline function quant4(v: v128, s: v128): v128 {
  const r = f32x4.div(v, s);
  const q = roundAbs4(f32x4.abs(r));
  const neg = f32x4.lt(r, f32x4.splat(0));
  const down = i32x4.sub(i32x4.splat(8), i32x4.min_s(q, i32x4.splat(8)));
  const up = i32x4.add(i32x4.splat(8), i32x4.min_s(q, i32x4.splat(7)));
  return v128.bitselect(down, up, neg);
}

/** Encode `nb` whole blocks of 32 f32 at `src` into 18-byte APR_Q4 blocks at `dst`. */
export function encodeAprQ4(src: usize, dst: usize, nb: i32): void {
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 128;
    const y = dst + <usize>b * 18;
    let m4 = f32x4.splat(0);
    for (let i = 0; i < 8; i++) {
      const a = f32x4.abs(v128.load(x + <usize>i * 16));
      m4 = v128.bitselect(a, m4, f32x4.gt(a, m4));
    }
    let absmax: f32 = 0;
    const l0 = f32x4.extract_lane(m4, 0);
    if (l0 > absmax) absmax = l0;
    const l1 = f32x4.extract_lane(m4, 1);
    if (l1 > absmax) absmax = l1;
    const l2 = f32x4.extract_lane(m4, 2);
    if (l2 > absmax) absmax = l2;
    const l3 = f32x4.extract_lane(m4, 3);
    if (l3 > absmax) absmax = l3;
    const scale: f32 = absmax == 0 ? <f32>1.0 : absmax / <f32>7.0;
    store<u16>(y, <u16>f32ToF16(scale));
    const s = f32x4.splat(scale);
    const a = i8x16.narrow_i16x8_u(
      i16x8.narrow_i32x4_u(quant4(v128.load(x), s), quant4(v128.load(x + 16), s)),
      i16x8.narrow_i32x4_u(quant4(v128.load(x + 32), s), quant4(v128.load(x + 48), s)),
    );
    const c = i8x16.narrow_i16x8_u(
      i16x8.narrow_i32x4_u(quant4(v128.load(x + 64), s), quant4(v128.load(x + 80), s)),
      i16x8.narrow_i32x4_u(quant4(v128.load(x + 96), s), quant4(v128.load(x + 112), s)),
    );
    // Value 2j in the low nibble of byte j, value 2j + 1 in the high nibble.
    const even = i8x16.shuffle(a, c, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const odd = i8x16.shuffle(a, c, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    v128.store(y + 2, v128.or(even, i8x16.shl(odd, 4)));
  }
}
