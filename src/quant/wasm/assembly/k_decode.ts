// AssemblyScript: Q4_K and Q6_K decoders, bit-exact with llama.cpp's
// dequantize_row_q4_K / dequantize_row_q6_K (and ../../q4_k.ts, ../../q6_k.ts).
// The scale products are exact in f32, so each value is rounded once, as in C.

import { f16ToF32 } from "./common";

/** Bytes 0..15 of `v` as four f32x4 (unsigned). */
@inline function storeU8AsF32(p: usize, v: v128, scale: v128, sub: v128): void {
  const lo = i16x8.extend_low_i8x16_u(v);
  const hi = i16x8.extend_high_i8x16_u(v);
  v128.store(p, f32x4.sub(f32x4.mul(scale, f32x4.convert_i32x4_u(i32x4.extend_low_i16x8_u(lo))), sub));
  v128.store(p + 16, f32x4.sub(f32x4.mul(scale, f32x4.convert_i32x4_u(i32x4.extend_high_i16x8_u(lo))), sub));
  v128.store(p + 32, f32x4.sub(f32x4.mul(scale, f32x4.convert_i32x4_u(i32x4.extend_low_i16x8_u(hi))), sub));
  v128.store(p + 48, f32x4.sub(f32x4.mul(scale, f32x4.convert_i32x4_u(i32x4.extend_high_i16x8_u(hi))), sub));
}

/** Decode `nb` Q4_K blocks at `src` into f32 at `dst`. */
export function decodeQ4K(src: usize, dst: usize, nb: i32): void {
  const m15 = i8x16.splat(15);
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 144;
    let y = dst + <usize>b * 1024;
    const d = f16ToF32(<i32>load<u16>(x));
    const dmin = f16ToF32(<i32>load<u16>(x + 2));
    const sc = x + 4;
    let q = x + 16;
    for (let j = 0; j < 8; j += 2) {
      // get_scale_min_k4 for sub-blocks j and j + 1.
      let s1: u32, m1: u32, s2: u32, m2: u32;
      if (j < 4) {
        s1 = load<u8>(sc + j) & 63;
        m1 = load<u8>(sc + j + 4) & 63;
        s2 = load<u8>(sc + j + 1) & 63;
        m2 = load<u8>(sc + j + 5) & 63;
      } else {
        s1 = (load<u8>(sc + j + 4) & 15) | ((load<u8>(sc + j - 4) >> 6) << 4);
        m1 = (load<u8>(sc + j + 4) >> 4) | ((load<u8>(sc + j) >> 6) << 4);
        s2 = (load<u8>(sc + j + 5) & 15) | ((load<u8>(sc + j - 3) >> 6) << 4);
        m2 = (load<u8>(sc + j + 5) >> 4) | ((load<u8>(sc + j + 1) >> 6) << 4);
      }
      const d1 = f32x4.splat(d * <f32>s1);
      const dm1 = f32x4.splat(dmin * <f32>m1);
      const d2 = f32x4.splat(d * <f32>s2);
      const dm2 = f32x4.splat(dmin * <f32>m2);
      const q0 = v128.load(q);
      const q1 = v128.load(q + 16);
      storeU8AsF32(y, v128.and(q0, m15), d1, dm1);
      storeU8AsF32(y + 64, v128.and(q1, m15), d1, dm1);
      storeU8AsF32(y + 128, i8x16.shr_u(q0, 4), d2, dm2);
      storeU8AsF32(y + 192, i8x16.shr_u(q1, 4), d2, dm2);
      q += 32;
      y += 256;
    }
  }
}

/** Signed bytes 0..15 of `v` times `scale`, as four f32x4. */
@inline function storeI8AsF32(p: usize, v: v128, scale: v128): void {
  const lo = i16x8.extend_low_i8x16_s(v);
  const hi = i16x8.extend_high_i8x16_s(v);
  v128.store(p, f32x4.mul(scale, f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(lo))));
  v128.store(p + 16, f32x4.mul(scale, f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(lo))));
  v128.store(p + 32, f32x4.mul(scale, f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(hi))));
  v128.store(p + 48, f32x4.mul(scale, f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(hi))));
}

/** Decode `nb` Q6_K blocks at `src` into f32 at `dst`. */
export function decodeQ6K(src: usize, dst: usize, nb: i32): void {
  const m15 = i8x16.splat(15);
  const m3 = i8x16.splat(3);
  const b32 = i8x16.splat(32);
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 210;
    const d = f16ToF32(<i32>load<u16>(x + 208));
    for (let h = 0; h < 2; h++) {
      const ql = x + <usize>h * 64;
      const qh = x + 128 + <usize>h * 32;
      const sc = x + 192 + <usize>h * 8;
      const y = dst + <usize>(b * 256 + h * 128) * 4;
      for (let l = 0; l < 32; l += 16) {
        const is = l >> 4;
        const a = v128.load(ql + l);
        const c = v128.load(ql + l + 32);
        const hb = v128.load(qh + l);
        const q1 = i8x16.sub(v128.or(v128.and(a, m15), i8x16.shl(v128.and(hb, m3), 4)), b32);
        const q2 = i8x16.sub(v128.or(v128.and(c, m15), i8x16.shl(v128.and(i8x16.shr_u(hb, 2), m3), 4)), b32);
        const q3 = i8x16.sub(v128.or(i8x16.shr_u(a, 4), i8x16.shl(v128.and(i8x16.shr_u(hb, 4), m3), 4)), b32);
        const q4 = i8x16.sub(v128.or(i8x16.shr_u(c, 4), i8x16.shl(i8x16.shr_u(hb, 6), 4)), b32);
        const yl = y + <usize>l * 4;
        storeI8AsF32(yl, q1, f32x4.splat(d * <f32>load<i8>(sc + is)));
        storeI8AsF32(yl + 128, q2, f32x4.splat(d * <f32>load<i8>(sc + is + 2)));
        storeI8AsF32(yl + 256, q3, f32x4.splat(d * <f32>load<i8>(sc + is + 4)));
        storeI8AsF32(yl + 384, q4, f32x4.splat(d * <f32>load<i8>(sc + is + 6)));
      }
    }
  }
}
