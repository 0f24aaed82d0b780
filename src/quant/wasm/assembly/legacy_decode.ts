// AssemblyScript: Q8_0 and Q4_0 decoders, bit-exact with llama.cpp's
// dequantize_row_q8_0 / dequantize_row_q4_0 (and ../../ggml_legacy.ts): each
// value is q · d with |q| ≤ 128 and an f16 d, exact in f32.

import { f16ToF32 } from "./common";

/** Signed bytes 0..15 of `v` times `d`, as four f32x4 at `p`. */
@inline function storeScaled(p: usize, v: v128, d: v128): void {
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
