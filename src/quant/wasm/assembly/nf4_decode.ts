// AssemblyScript: NF4 block decoder, identical to ../../nf4.ts' decodeNf4Block
// (level · scale rounded to f32, then + zero rounded to f32). The 16 f32
// levels are looked up with byte swizzles: one table per byte of the f32.

import { NF4_PLANES } from "./nf4_levels";

/** The f32 levels of 16 nibble codes (`idx`, lanes 0..15) as four f32x4 times `s` plus `z`, at `p`. */
@inline function storeLevels(p: usize, idx: v128, s: v128, z: v128): void {
  const b0 = i8x16.swizzle(v128.load(NF4_PLANES), idx);
  const b1 = i8x16.swizzle(v128.load(NF4_PLANES + 16), idx);
  const b2 = i8x16.swizzle(v128.load(NF4_PLANES + 32), idx);
  const b3 = i8x16.swizzle(v128.load(NF4_PLANES + 48), idx);
  // Little-endian f32 j = bytes b0[j] b1[j] b2[j] b3[j].
  const lo01 = i8x16.shuffle(b0, b1, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const hi01 = i8x16.shuffle(b0, b1, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const lo23 = i8x16.shuffle(b2, b3, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const hi23 = i8x16.shuffle(b2, b3, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const f0 = i16x8.shuffle(lo01, lo23, 0, 8, 1, 9, 2, 10, 3, 11);
  const f1 = i16x8.shuffle(lo01, lo23, 4, 12, 5, 13, 6, 14, 7, 15);
  const f2 = i16x8.shuffle(hi01, hi23, 0, 8, 1, 9, 2, 10, 3, 11);
  const f3 = i16x8.shuffle(hi01, hi23, 4, 12, 5, 13, 6, 14, 7, 15);
  v128.store(p, f32x4.add(f32x4.mul(f0, s), z));
  v128.store(p + 16, f32x4.add(f32x4.mul(f1, s), z));
  v128.store(p + 32, f32x4.add(f32x4.mul(f2, s), z));
  v128.store(p + 48, f32x4.add(f32x4.mul(f3, s), z));
}

/**
 * Decode `nb` NF4 blocks of `blockSize` values (even): codes at `src`
 * (blockSize / 2 bytes each, even value in the low nibble), one f32 scale per
 * block at `scales`, one f32 zero point per block at `zeros` (0: none).
 */
export function decodeNf4(
  src: usize,
  scales: usize,
  zeros: usize,
  dst: usize,
  nb: i32,
  blockSize: i32,
): void {
  const m15 = i8x16.splat(15);
  const half = blockSize >> 1;
  for (let b = 0; b < nb; b++) {
    const c = src + <usize>(b * half);
    const y = dst + <usize>(b * blockSize) * 4;
    const sc = load<f32>(scales + <usize>b * 4);
    const zf: f32 = zeros == 0 ? 0 : load<f32>(zeros + <usize>b * 4);
    const s = f32x4.splat(sc);
    const z = f32x4.splat(zf);
    let i = 0;
    for (; i + 16 <= half; i += 16) {
      const q = v128.load(c + <usize>i);
      const lo = v128.and(q, m15);
      const hi = i8x16.shr_u(q, 4);
      // Values 2k and 2k + 1 come from the low and high nibble of byte k.
      const a = i8x16.shuffle(lo, hi, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const e = i8x16.shuffle(lo, hi, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
      storeLevels(y + <usize>i * 8, a, s, z);
      storeLevels(y + <usize>i * 8 + 64, e, s, z);
    }
    for (; i < half; i++) {
      const q = <u32>load<u8>(c + <usize>i);
      store<f32>(y + <usize>i * 8, load<f32>(NF4_PLANES + 64 + <usize>(q & 15) * 4) * sc + zf);
      store<f32>(y + <usize>i * 8 + 4, load<f32>(NF4_PLANES + 64 + <usize>(q >> 4) * 4) * sc + zf);
    }
  }
}
