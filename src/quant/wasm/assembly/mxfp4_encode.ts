// AssemblyScript: MXFP4 encoder, byte-identical with llama.cpp's
// quantize_row_mxfp4_ref (and aprkit's TypeScript port in
// ../../mxfp4_encoder.ts): one E8M0 exponent per 32 values, each value the
// first of the 16 E2M1 codes nearest it, four values a lane group.

import { KVALUES_FP4 } from "./ggml_grids";
import { e8m0Half } from "./iq_decode";
import { bytes16 } from "./k_pack";
import { select4 } from "./common";

/** The E2M1 code index of four values at `p` for the block scale `d`. */
@inline function bestIndex4(p: usize, d: v128): v128 {
  const x = v128.load(p);
  let best = i32x4.splat(0);
  let bestErr = f32x4.abs(f32x4.sub(f32x4.mul(f32x4.splat(<f32>load<i8>(KVALUES_FP4)), d), x));
  for (let i = 1; i < 16; i++) {
    const k = f32x4.splat(<f32>load<i8>(KVALUES_FP4 + <usize>i));
    const err = f32x4.abs(f32x4.sub(f32x4.mul(k, d), x));
    const better = f32x4.lt(err, bestErr);
    best = select4(i32x4.splat(i), best, better);
    bestErr = select4(err, bestErr, better);
  }
  return best;
}

/** Encode `nb` blocks of 32 f32 at `src` into MXFP4 (17 bytes each) at `dst`. */
export function encodeMxfp4(src: usize, dst: usize, nb: i32): void {
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 128;
    const y = dst + <usize>b * 17;
    // `if (amax < |x|) amax = |x|`: NaN never enters, so the order does not matter.
    let m = f32x4.splat(0);
    for (let j = 0; j < 32; j += 4) {
      const a = f32x4.abs(v128.load(x + <usize>j * 4));
      m = select4(a, m, f32x4.lt(m, a));
    }
    const a01 = Mathf.max(f32x4.extract_lane(m, 0), f32x4.extract_lane(m, 1));
    const amax = Mathf.max(a01, Mathf.max(f32x4.extract_lane(m, 2), f32x4.extract_lane(m, 3)));
    // (uint8_t)(floorf(log2f(amax)) - 2 + 127), log2 rounded to f32 as the
    // TypeScript port does; an infinite amax gives 0 there (int32 conversion).
    const e = amax > 0 && amax < Infinity
      ? (<i32>(Mathf.floor(<f32>Math.log2(<f64>amax)) + <f32>125.0)) & 255
      : 0;
    store<u8>(y, <u8>e);
    const d = f32x4.splat(e8m0Half(e));
    const lo0 = bestIndex4(x, d);
    const lo1 = bestIndex4(x + 16, d);
    const lo2 = bestIndex4(x + 32, d);
    const lo3 = bestIndex4(x + 48, d);
    const hi0 = bestIndex4(x + 64, d);
    const hi1 = bestIndex4(x + 80, d);
    const hi2 = bestIndex4(x + 96, d);
    const hi3 = bestIndex4(x + 112, d);
    const lo = bytes16(lo0, lo1, lo2, lo3);
    const hi = bytes16(hi0, hi1, hi2, hi3);
    v128.store(y + 1, v128.or(lo, i8x16.shl(hi, 4)));
  }
}
