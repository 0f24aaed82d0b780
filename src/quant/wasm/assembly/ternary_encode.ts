// AssemblyScript: TQ1_0, TQ2_0, Q1_0 and Q2_0 encoders, byte-identical with
// llama.cpp's quantize_row_{tq1_0,tq2_0,q1_0,q2_0}_ref (and aprkit's
// TypeScript ports in ../../ternary_encoders.ts): trits lroundf(x / absmax)
// + 1, four values a lane group, packed in base 3 (TQ1_0) or two bits (TQ2_0,
// and Q2_0's 64-value blocks); Q1_0 the sign bits and the mean |x|.

import { addTransposed, f32ToF16, select4 } from "./common";
import { bytes16, packTwoBits } from "./k_pack";

// Scratch (static memory, 16-byte aligned).
const T: usize = memory.data(256 * 4, 16); // trits, i32 lanes
const L: usize = memory.data(256, 16); // trits & 3, bytes (TQ2_0)

/** Whether absmax256's block had a NaN. */
let sawNan = false;

/**
 * C's `MAX(amax, fabsf(x))` over 256 values (a NaN resets the running
 * maximum to the next value, so with one the scan is sequential).
 */
@inline function absmax256(x: usize): f32 {
  sawNan = false;
  let m = f32x4.splat(0);
  let nan = i32x4.splat(0);
  for (let j = 0; j < 256; j += 4) {
    const v = f32x4.abs(v128.load(x + <usize>j * 4));
    nan = v128.or(nan, f32x4.ne(v, v));
    m = f32x4.max(m, v);
  }
  if (!v128.any_true(nan)) {
    const a = Mathf.max(f32x4.extract_lane(m, 0), f32x4.extract_lane(m, 1));
    return Mathf.max(a, Mathf.max(f32x4.extract_lane(m, 2), f32x4.extract_lane(m, 3)));
  }
  sawNan = true;
  let amax: f32 = 0;
  for (let j = 0; j < 256; j++) {
    const a = Mathf.abs(load<f32>(x + <usize>j * 4));
    amax = amax > a ? amax : a;
  }
  return amax;
}

/**
 * Each value's trit, `lroundf(x · id) + 1` modulo 256 (all the packing
 * keeps), as the TypeScript port's int32 conversion of that f64 sum gives it:
 * halves away from zero; beyond int32 (only after a NaN made amax smaller
 * than some |x|) 1 while the sum is exact in f64 (|v| < 2^53), else 0, as
 * for an infinite or NaN product.
 */
@inline function trits(x: usize, id: f32, n: i32 = 256): void {
  const idv = f32x4.splat(id);
  const half = f32x4.splat(<f32>0.5);
  const one = i32x4.splat(1);
  const big = f32x4.splat(<f32>2147483648.0);
  const f64Exact = f32x4.splat(<f32>9007199254740992.0); // 2^53
  const sign = i32x4.splat(0x80000000);
  for (let j = 0; j < n; j += 4) {
    const v = f32x4.mul(v128.load(x + <usize>j * 4), idv);
    const t = f32x4.trunc(v);
    const away = f32x4.ge(f32x4.abs(f32x4.sub(v, t)), half);
    // t ± 1 where the fraction is at least a half (v − t is exact).
    const unit = v128.or(v128.and(v, sign), f32x4.splat(1)); // ±1, the sign of v
    const r = f32x4.add(t, select4(unit, f32x4.splat(0), away));
    const a = f32x4.abs(v);
    const inRange = i32x4.add(i32x4.trunc_sat_f32x4_s(r), one);
    const outside = select4(one, i32x4.splat(0), f32x4.lt(a, f64Exact));
    v128.store(T + <usize>j * 4, select4(inRange, outside, f32x4.lt(a, big)));
  }
}

/**
 * The trits when every |x·id| <= 1 (up to rounding: below 1.5): lroundf is
 * then -1, 0 or 1 by whether x·id is at most -0.5 or at least 0.5, as masks
 * (-1 where true), so the trit is 1 − [≥ 0.5] + [≤ -0.5], five operations.
 */
@inline function smallTrits(x: usize, id: f32): void {
  const idv = f32x4.splat(id);
  const half = f32x4.splat(<f32>0.5);
  const minusHalf = f32x4.splat(<f32>-0.5);
  const one = i32x4.splat(1);
  for (let j = 0; j < 256; j += 4) {
    const v = f32x4.mul(v128.load(x + <usize>j * 4), idv);
    const t = i32x4.add(i32x4.sub(one, f32x4.ge(v, half)), f32x4.le(v, minusHalf));
    v128.store(T + <usize>j * 4, t);
  }
}

/** d's f16 bits and the trits of the block at `x`. */
@inline function tritsOf(x: usize): i32 {
  const amax = absmax256(x);
  const id: f32 = amax != 0 ? <f32>1.0 / amax : 0;
  // amax is every |x|'s maximum unless a NaN reset it (then amax·id may be
  // anything, NaN included, as for a subnormal amax's infinite id).
  if (amax * id < <f32>1.5 && !sawNan) smallTrits(x, id);
  else trits(x, id);
  return f32ToF16(amax);
}


/** Bytes of five trits `step` apart from trit `first` (four lanes): base 3, ×256/243 rounded up. */
@inline function pack5(first: i32, step: i32, count: i32): v128 {
  const m = i32x4.splat(255);
  const three = i32x4.splat(3);
  let q = i32x4.splat(0);
  for (let n = 0; n < count; n++) {
    const t = v128.load(T + <usize>(first + n * step) * 4);
    q = v128.and(i32x4.add(i32x4.mul(q, three), t), m);
  }
  if (count == 4) q = v128.and(i32x4.mul(q, three), m);
  // (q·256 + 242) / 243: below 2^16, so the f32 quotient floors exactly.
  const n = f32x4.convert_i32x4_s(i32x4.add(i32x4.shl(q, 8), i32x4.splat(242)));
  const div = f32x4.floor(f32x4.div(n, f32x4.splat(<f32>243.0)));
  return v128.and(i32x4.trunc_sat_f32x4_s(div), m);
}

/** Encode `nb` blocks of 256 f32 at `src` into TQ1_0 (54 bytes each) at `dst`. */
export function encodeTq1_0(src: usize, dst: usize, nb: i32): void {
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 1024;
    const y = dst + <usize>b * 54;
    const dBits = tritsOf(x);
    // 32 bytes of five trits 32 apart, 16 of five trits 16 apart, 4 of four trits 4 apart.
    for (let m = 0; m < 32; m += 16) {
      v128.store(y + m, bytes16(pack5(m, 32, 5), pack5(m + 4, 32, 5), pack5(m + 8, 32, 5), pack5(m + 12, 32, 5)));
    }
    v128.store(y + 32, bytes16(pack5(160, 16, 5), pack5(164, 16, 5), pack5(168, 16, 5), pack5(172, 16, 5)));
    const last = bytes16(pack5(240, 4, 4), i32x4.splat(0), i32x4.splat(0), i32x4.splat(0));
    store<u32>(y + 48, i32x4.extract_lane(last, 0));
    store<u16>(y + 52, <u16>dBits);
  }
}

/** Encode `nb` blocks of 256 f32 at `src` into TQ2_0 (66 bytes each) at `dst`. */
export function encodeTq2_0(src: usize, dst: usize, nb: i32): void {
  const three = i32x4.splat(3);
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 1024;
    const y = dst + <usize>b * 66;
    const dBits = tritsOf(x);
    for (let j = 0; j < 256; j += 16) {
      const p = T + <usize>j * 4;
      v128.store(
        L + <usize>j,
        bytes16(
          v128.and(v128.load(p), three),
          v128.and(v128.load(p + 16), three),
          v128.and(v128.load(p + 32), three),
          v128.and(v128.load(p + 48), three),
        ),
      );
    }
    packTwoBits(L, y);
    store<u16>(y + 64, <u16>dBits);
  }
}

/** Encode `nb` blocks of 128 f32 at `src` into Q1_0 (18 bytes each) at `dst`. */
export function encodeQ1_0(src: usize, dst: usize, nb: i32): void {
  const zero = f32x4.splat(0);
  // C sums |x| sequentially in f32, a chain of 128 dependent additions per
  // block: four blocks at a time run their chains side by side, lane k
  // block k's in C's order (each four values transposed by shuffles).
  const abs = v128.load(ABS); // f32x4.abs rebuilds its mask at each use
  let b = 0;
  for (; b + 4 <= nb; b += 4) {
    const x = src + <usize>b * 512;
    let s = zero;
    for (let j = 0; j < 128; j += 4) {
      const p = x + <usize>j * 4;
      s = addTransposed(
        s,
        v128.and(v128.load(p), abs),
        v128.and(v128.load(p + 512), abs),
        v128.and(v128.load(p + 1024), abs),
        v128.and(v128.load(p + 1536), abs),
      );
    }
    v128.store(SUMS, f32x4.div(s, f32x4.splat(<f32>128.0)));
    for (let k = 0; k < 4; k++) {
      const y = dst + <usize>(b + k) * 18;
      store<u16>(y, <u16>f32ToF16(load<f32>(SUMS + <usize>k * 4)));
      signBits(x + <usize>k * 512, y, zero);
    }
  }
  for (; b < nb; b++) {
    const x = src + <usize>b * 512;
    const y = dst + <usize>b * 18;
    let sumAbs: f32 = 0;
    for (let j = 0; j < 128; j++) sumAbs += Mathf.abs(load<f32>(x + <usize>j * 4));
    store<u16>(y, <u16>f32ToF16(sumAbs / <f32>128.0));
    signBits(x, y, zero);
  }
}

// encodeQ1_0's four sums of a lane group, and the magnitude mask.
const SUMS: usize = memory.data(16, 16);
const ABS: usize = memory.data<i32>([0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff], 16);

/** Q1_0's 16 bytes of signs at `y` + 2 for the 128 values at `x`. */
@inline function signBits(x: usize, y: usize, zero: v128): void {
  // Bit j of the 16 bytes: x[j] >= 0 (false for NaN).
  for (let j = 0; j < 128; j += 16) {
    const p = x + <usize>j * 4;
    const m = i8x16.narrow_i16x8_s(
      i16x8.narrow_i32x4_s(f32x4.ge(v128.load(p), zero), f32x4.ge(v128.load(p + 16), zero)),
      i16x8.narrow_i32x4_s(f32x4.ge(v128.load(p + 32), zero), f32x4.ge(v128.load(p + 48), zero)),
    );
    store<u16>(y + 2 + <usize>(j >> 3), <u16>i8x16.bitmask(m));
  }
}

/** Four values' 2-bit levels (i32 lanes 0..3) as the low byte of one lane: l0 | l1 << 2 | …. */
@inline function twoBits4(l0: v128, l1: v128, l2: v128, l3: v128): v128 {
  // As bytes, lane k holds values 4k..4k+3 in its bytes 0..3: fold bytes 1
  // and 3 onto 0 and 2, then byte 2 onto the high nibble of byte 0.
  const t = bytes16(l0, l1, l2, l3);
  const u = v128.or(t, i32x4.shr_u(t, 6));
  return v128.or(v128.and(u, i32x4.splat(0xf)), v128.and(i32x4.shr_u(u, 12), i32x4.splat(0xf0)));
}

/** Encode `nb` blocks of 64 f32 at `src` into Q2_0 (18 bytes each) at `dst`. */
export function encodeQ2_0(src: usize, dst: usize, nb: i32): void {
  const two = i32x4.splat(3);
  const lo = i32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 256;
    const y = dst + <usize>b * 18;
    // C's `if (a > amax) amax = a` skips NaN: pmax keeps its first operand then.
    let m = f32x4.splat(0);
    for (let j = 0; j < 64; j += 4) m = f32x4.pmax(m, f32x4.abs(v128.load(x + <usize>j * 4)));
    const amax = Mathf.max(
      Mathf.max(f32x4.extract_lane(m, 0), f32x4.extract_lane(m, 1)),
      Mathf.max(f32x4.extract_lane(m, 2), f32x4.extract_lane(m, 3)),
    );
    store<u16>(y, <u16>f32ToF16(amax));
    // (int)roundf(x · id) + 1 clamped to 0..3: the trits (halves away from
    // zero). x · id is within ±1, or not finite (NaN, or 1 / amax overflowed
    // for a subnormal amax), where the trit is 0 as C's INT_MIN + 1 clamped.
    trits(x, amax > 0 ? <f32>1.0 / amax : 0, 64);
    for (let j = 0; j < 64; j += 16) {
      const p = T + <usize>j * 4;
      const l0 = i32x4.min_s(i32x4.max_s(v128.load(p), lo), two);
      const l1 = i32x4.min_s(i32x4.max_s(v128.load(p + 16), lo), two);
      const l2 = i32x4.min_s(i32x4.max_s(v128.load(p + 32), lo), two);
      const l3 = i32x4.min_s(i32x4.max_s(v128.load(p + 48), lo), two);
      const q = twoBits4(l0, l1, l2, l3);
      store<u32>(y + 2 + <usize>(j >> 2), i32x4.extract_lane(bytes16(q, lo, lo, lo), 0));
    }
  }
}
