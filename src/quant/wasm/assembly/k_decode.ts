// AssemblyScript: Q2_K, Q3_K, Q4_K, Q5_K and Q6_K decoders, bit-exact with
// llama.cpp's dequantize_row_q*_K (and ../../q4_k.ts, ../../q6_k.ts, ../../k_quants.ts).
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

/** get_scale_min_k4: sub-block j's 6-bit scale | (min << 8), from the 12 bytes at `sc`. */
@inline function scaleMinK4(sc: usize, j: i32): u32 {
  if (j < 4) return (<u32>load<u8>(sc + j) & 63) | ((<u32>load<u8>(sc + j + 4) & 63) << 8);
  const s = (<u32>load<u8>(sc + j + 4) & 15) | ((<u32>load<u8>(sc + j - 4) >> 6) << 4);
  const m = (<u32>load<u8>(sc + j + 4) >> 4) | ((<u32>load<u8>(sc + j) >> 6) << 4);
  return s | (m << 8);
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
      const sm1 = scaleMinK4(sc, j);
      const sm2 = scaleMinK4(sc, j + 1);
      const s1 = sm1 & 255;
      const m1 = sm1 >> 8;
      const s2 = sm2 & 255;
      const m2 = sm2 >> 8;
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

/** Decode `nb` Q5_K blocks (as Q4_K, plus a fifth bit per value from qh) at `src` into f32 at `dst`. */
export function decodeQ5K(src: usize, dst: usize, nb: i32): void {
  const m15 = i8x16.splat(15);
  const b16 = i8x16.splat(16);
  const zero = i8x16.splat(0);
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 176;
    let y = dst + <usize>b * 1024;
    const d = f16ToF32(<i32>load<u16>(x));
    const dmin = f16ToF32(<i32>load<u16>(x + 2));
    const sc = x + 4;
    const qh0 = v128.load(x + 16);
    const qh1 = v128.load(x + 32);
    let q = x + 48;
    for (let j = 0; j < 8; j += 2) {
      const sm1 = scaleMinK4(sc, j);
      const sm2 = scaleMinK4(sc, j + 1);
      const d1 = f32x4.splat(d * <f32>(sm1 & 255));
      const dm1 = f32x4.splat(dmin * <f32>(sm1 >> 8));
      const d2 = f32x4.splat(d * <f32>(sm2 & 255));
      const dm2 = f32x4.splat(dmin * <f32>(sm2 >> 8));
      // Bits j and j + 1 of each qh byte are the fifth bits of the pair.
      const bit: i32 = 1 << j;
      const u1 = i8x16.splat(<i8>bit);
      const u2 = i8x16.splat(<i8>(bit << 1));
      const q0 = v128.load(q);
      const q1 = v128.load(q + 16);
      const h01 = v128.andnot(b16, i8x16.eq(v128.and(qh0, u1), zero));
      const h11 = v128.andnot(b16, i8x16.eq(v128.and(qh1, u1), zero));
      const h02 = v128.andnot(b16, i8x16.eq(v128.and(qh0, u2), zero));
      const h12 = v128.andnot(b16, i8x16.eq(v128.and(qh1, u2), zero));
      storeU8AsF32(y, v128.or(v128.and(q0, m15), h01), d1, dm1);
      storeU8AsF32(y + 64, v128.or(v128.and(q1, m15), h11), d1, dm1);
      storeU8AsF32(y + 128, v128.or(i8x16.shr_u(q0, 4), h02), d2, dm2);
      storeU8AsF32(y + 192, v128.or(i8x16.shr_u(q1, 4), h12), d2, dm2);
      q += 32;
      y += 256;
    }
  }
}

/** Decode `nb` Q2_K blocks (scales, 2-bit quants, f16 d, f16 dmin) at `src` into f32 at `dst`. */
export function decodeQ2K(src: usize, dst: usize, nb: i32): void {
  const m3 = i8x16.splat(3);
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 84;
    let y = dst + <usize>b * 1024;
    const d = f16ToF32(<i32>load<u16>(x + 80));
    const dmin = f16ToF32(<i32>load<u16>(x + 82));
    let is = 0;
    for (let n = 0; n < 2; n++) {
      const q0 = v128.load(x + 16 + <usize>n * 32);
      const q1 = v128.load(x + 32 + <usize>n * 32);
      for (let shift = 0; shift < 8; shift += 2) {
        const s1 = <u32>load<u8>(x + <usize>is);
        const s2 = <u32>load<u8>(x + <usize>is + 1);
        is += 2;
        const v0 = v128.and(i8x16.shr_u(q0, shift), m3);
        const v1 = v128.and(i8x16.shr_u(q1, shift), m3);
        storeU8AsF32(y, v0, f32x4.splat(d * <f32>(s1 & 15)), f32x4.splat(dmin * <f32>(s1 >> 4)));
        storeU8AsF32(y + 64, v1, f32x4.splat(d * <f32>(s2 & 15)), f32x4.splat(dmin * <f32>(s2 >> 4)));
        y += 128;
      }
    }
  }
}

/** Decode `nb` Q3_K blocks (high-bit mask, 2-bit quants, packed 6-bit scales, f16 d) at `src` into f32 at `dst`. */
export function decodeQ3K(src: usize, dst: usize, nb: i32): void {
  const m3 = i8x16.splat(3);
  const b4 = i8x16.splat(4);
  const zero = i8x16.splat(0);
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 110;
    let y = dst + <usize>b * 1024;
    const dAll = f16ToF32(<i32>load<u16>(x + 108));
    const hm0 = v128.load(x);
    const hm1 = v128.load(x + 16);
    const s = x + 96;
    let is = 0;
    let m = 1;
    for (let n = 0; n < 2; n++) {
      const q0 = v128.load(x + 32 + <usize>n * 32);
      const q1 = v128.load(x + 48 + <usize>n * 32);
      for (let shift = 0; shift < 8; shift += 2) {
        const mv = i8x16.splat(<i8>m);
        // (q >> shift & 3) - 4 where the mask bit is clear: -4..3.
        const v0 = i8x16.sub(
          v128.and(i8x16.shr_u(q0, shift), m3),
          v128.and(i8x16.eq(v128.and(hm0, mv), zero), b4),
        );
        const v1 = i8x16.sub(
          v128.and(i8x16.shr_u(q1, shift), m3),
          v128.and(i8x16.eq(v128.and(hm1, mv), zero), b4),
        );
        storeI8AsF32(y, v0, f32x4.splat(dAll * <f32>q3Scale(s, is)));
        storeI8AsF32(y + 64, v1, f32x4.splat(dAll * <f32>q3Scale(s, is + 1)));
        is += 2;
        m <<= 1;
        y += 128;
      }
    }
  }
}

/** Q3_K's 6-bit scale j (-32..31) from the 12 packed bytes at `s`. */
@inline function q3Scale(s: usize, j: i32): i32 {
  const low = j < 8 ? <i32>load<u8>(s + j) & 15 : <i32>load<u8>(s + j - 8) >> 4;
  const high = (<i32>load<u8>(s + 8 + (j & 3)) >> (2 * (j >> 2))) & 3;
  return (low | (high << 4)) - 32;
}
