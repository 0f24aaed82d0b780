// AssemblyScript: Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 decoders, bit-exact with
// llama.cpp's dequantize_row_q* (and ../../ggml_legacy.ts): q · d with
// |q| ≤ 128 and an f16 d is exact in f32, so each value is rounded once (+ m).

import { f16ToF32 } from "./common";

/** Signed bytes 0..15 of `v` times `d`, as four f32x4 at `p`. */
@inline export function storeScaled(p: usize, v: v128, d: v128): void {
  const lo = i16x8.extend_low_i8x16_s(v);
  const hi = i16x8.extend_high_i8x16_s(v);
  v128.store(p, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(lo)), d));
  v128.store(p + 16, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(lo)), d));
  v128.store(p + 32, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(hi)), d));
  v128.store(p + 48, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(hi)), d));
}

/** Decode `nb` Q8_0 blocks (f16 d, 32 × i8) at `src` into f32 at `dst`. */
export function decodeQ8_0(src: usize, dst: usize, nb: i32): void {
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 34;
    const y = dst + <usize>b * 128;
    const d = f32x4.splat(f16ToF32(<i32>load<u16>(x)));
    storeScaled(y, v128.load(x + 2), d);
    storeScaled(y + 64, v128.load(x + 18), d);
  }
}

/** Decode `nb` Q4_0 blocks (f16 d, 16 bytes of nibbles) at `src` into f32 at `dst`. */
export function decodeQ4_0(src: usize, dst: usize, nb: i32): void {
  const m15 = i8x16.splat(15);
  const b8 = i8x16.splat(8);
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 18;
    const y = dst + <usize>b * 128;
    const d = f32x4.splat(f16ToF32(<i32>load<u16>(x)));
    const q = v128.load(x + 2);
    storeScaled(y, i8x16.sub(v128.and(q, m15), b8), d);
    storeScaled(y + 64, i8x16.sub(i8x16.shr_u(q, 4), b8), d);
  }
}

/** Unsigned bytes 0..15 of `v` times `d` plus `m`, as four f32x4 at `p`. */
@inline function storeScaledPlus(p: usize, v: v128, d: v128, m: v128): void {
  const lo = i16x8.extend_low_i8x16_u(v);
  const hi = i16x8.extend_high_i8x16_u(v);
  v128.store(p, f32x4.add(f32x4.mul(f32x4.convert_i32x4_u(i32x4.extend_low_i16x8_u(lo)), d), m));
  v128.store(p + 16, f32x4.add(f32x4.mul(f32x4.convert_i32x4_u(i32x4.extend_high_i16x8_u(lo)), d), m));
  v128.store(p + 32, f32x4.add(f32x4.mul(f32x4.convert_i32x4_u(i32x4.extend_low_i16x8_u(hi)), d), m));
  v128.store(p + 48, f32x4.add(f32x4.mul(f32x4.convert_i32x4_u(i32x4.extend_high_i16x8_u(hi)), d), m));
}

/** Decode `nb` Q4_1 blocks (f16 d, f16 m, 16 bytes of nibbles) at `src` into f32 at `dst`. */
export function decodeQ4_1(src: usize, dst: usize, nb: i32): void {
  const m15 = i8x16.splat(15);
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 20;
    const y = dst + <usize>b * 128;
    const d = f32x4.splat(f16ToF32(<i32>load<u16>(x)));
    const m = f32x4.splat(f16ToF32(<i32>load<u16>(x + 2)));
    const q = v128.load(x + 4);
    storeScaledPlus(y, v128.and(q, m15), d, m);
    storeScaledPlus(y + 64, i8x16.shr_u(q, 4), d, m);
  }
}

/** Bit 4 set in byte j where bit j of the u32 at `p` is set (j < 16), and where bit j + 16 is (second). */
@inline function fifthBits(p: usize, upper: bool): v128 {
  const h = i32x4.splat(load<i32>(p));
  const bytes = upper
    ? i8x16.shuffle(h, h, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3)
    : i8x16.shuffle(h, h, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const bit = v128.and(bytes, i8x16(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128));
  return v128.andnot(i8x16.splat(16), i8x16.eq(bit, i8x16.splat(0)));
}

/** Decode `nb` Q5_0 blocks (f16 d, u32 fifth bits, 16 bytes of nibbles) at `src` into f32 at `dst`. */
export function decodeQ5_0(src: usize, dst: usize, nb: i32): void {
  const m15 = i8x16.splat(15);
  const b16 = i8x16.splat(16);
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 22;
    const y = dst + <usize>b * 128;
    const d = f32x4.splat(f16ToF32(<i32>load<u16>(x)));
    const q = v128.load(x + 6);
    storeScaled(y, i8x16.sub(v128.or(v128.and(q, m15), fifthBits(x + 2, false)), b16), d);
    storeScaled(y + 64, i8x16.sub(v128.or(i8x16.shr_u(q, 4), fifthBits(x + 2, true)), b16), d);
  }
}

/** Decode `nb` Q5_1 blocks (f16 d, f16 m, u32 fifth bits, 16 bytes of nibbles) at `src` into f32 at `dst`. */
export function decodeQ5_1(src: usize, dst: usize, nb: i32): void {
  const m15 = i8x16.splat(15);
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 24;
    const y = dst + <usize>b * 128;
    const d = f32x4.splat(f16ToF32(<i32>load<u16>(x)));
    const m = f32x4.splat(f16ToF32(<i32>load<u16>(x + 2)));
    const q = v128.load(x + 8);
    storeScaledPlus(y, v128.or(v128.and(q, m15), fifthBits(x + 4, false)), d, m);
    storeScaledPlus(y + 64, v128.or(i8x16.shr_u(q, 4), fifthBits(x + 4, true)), d, m);
  }
}
