// AssemblyScript: NF4 block encoder, identical to ../../nf4.ts' encodeNf4Block:
// r = fround(fround(x - zero) / scale), code = how many of the 15 f32 midpoints
// lie strictly below r (NaN: code 7), two codes a byte, even value low.

import { NF4_PLANES } from "./nf4_levels";

const MIDPOINTS: usize = memory.data(60, 16);

// As nf4.ts: each midpoint is the f64 mean of two f32 levels, rounded to f32.
for (let i = 0; i < 15; i++) {
  const a = <f64>load<f32>(NF4_PLANES + 64 + <usize>i * 4);
  const b = <f64>load<f32>(NF4_PLANES + 64 + <usize>(i + 1) * 4);
  store<f32>(MIDPOINTS + <usize>i * 4, <f32>((a + b) / 2));
}

/** Codes of four lanes of r (as i32x4). */
@inline function codes4(r: v128): v128 {
  let c = i32x4.splat(0);
  for (let k = 0; k < 15; k++) {
    // The mask is -1 where r > midpoint: subtracting it counts.
    c = i32x4.sub(c, f32x4.gt(r, f32x4.splat(load<f32>(MIDPOINTS + <usize>k * 4))));
  }
  return v128.bitselect(c, i32x4.splat(7), f32x4.eq(r, r));
}

/**
 * Encode `blocks` blocks of `blockSize` f32 at `src` with one scale and zero
 * point a block (f32 at `scales`, `zeros`; `zeros` 0 for none) as packed codes at `dst`.
 */
export function encodeNf4(
  src: usize,
  scales: usize,
  zeros: usize,
  dst: usize,
  blocks: i32,
  blockSize: i32,
): void {
  for (let b = 0; b < blocks; b++) {
    const scale = load<f32>(scales + <usize>b * 4);
    const zero: f32 = zeros == 0 ? <f32>0 : load<f32>(zeros + <usize>b * 4);
    const p = src + <usize>b * <usize>blockSize * 4;
    const q = dst + <usize>b * <usize>(blockSize >> 1);
    if (!(scale > 0)) {
      memory.fill(q, 0x77, <usize>(blockSize >> 1));
      continue;
    }
    const s = f32x4.splat(scale);
    const z = f32x4.splat(zero);
    let i = 0;
    for (; i + 16 <= blockSize; i += 16) {
      const at = p + <usize>i * 4;
      const c0 = codes4(f32x4.div(f32x4.sub(v128.load(at), z), s));
      const c1 = codes4(f32x4.div(f32x4.sub(v128.load(at + 16), z), s));
      const c2 = codes4(f32x4.div(f32x4.sub(v128.load(at + 32), z), s));
      const c3 = codes4(f32x4.div(f32x4.sub(v128.load(at + 48), z), s));
      // 16 codes as bytes, then even | odd << 4.
      const bytes = i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_u(c0, c1), i16x8.narrow_i32x4_u(c2, c3));
      const even = i8x16.shuffle(bytes, bytes, 0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
      const odd = i8x16.shuffle(bytes, bytes, 1, 3, 5, 7, 9, 11, 13, 15, 0, 0, 0, 0, 0, 0, 0, 0);
      const packed = v128.or(even, i16x8.shl(odd, 4));
      store<u64>(q + <usize>(i >> 1), i64x2.extract_lane(packed, 0));
    }
    for (; i < blockSize; i += 2) {
      const a = f32x4.splat((load<f32>(p + <usize>i * 4) - zero) / scale);
      const c = f32x4.splat((load<f32>(p + <usize>(i + 1) * 4) - zero) / scale);
      const lo = i32x4.extract_lane(codes4(a), 0);
      const hi = i32x4.extract_lane(codes4(c), 0);
      store<u8>(q + <usize>(i >> 1), <u8>(lo | (hi << 4)));
    }
  }
}
