// AssemblyScript: Q8_0, Q5_0, Q5_1, Q4_0 and Q4_1 encoders, byte-identical with
// llama.cpp's quantize_row_q8_0_ref / q5_0_ref / q5_1_ref / q4_0_ref / q4_1_ref
// (and ../../q8_0.ts, ../../_legacy_blocks.ts).
// Each 32-value block is eight f32x4; C's sequential max/min scans are done per
// lane and then folded in C's order, with the cases where that order shows
// (NaN in Q8_0's MAX, the sign of a zero min/max, the first of equal |x|)
// handled by a scalar pass over the block.

import { f32ToF16 } from "./common";

const TWO31: f32 = 2147483648.0;

/** Eight i32x4 of values 0..255 at `q` as 32 bytes, in order. */
@inline function bytes32(q: usize): v128 {
  return i8x16.narrow_i16x8_u(
    i16x8.narrow_i32x4_u(v128.load(q), v128.load(q + 16)),
    i16x8.narrow_i32x4_u(v128.load(q + 32), v128.load(q + 48)),
  );
}

// Scratch: one block's codes, as i32 lanes.
const Q: usize = memory.data(32 * 4, 16);

/** C's (int)roundf(x) (halves away from zero) & 255; NaN, ±inf and |x| ≥ 2^31 give 0. */
@inline function roundAway8(x: v128): v128 {
  const t = f32x4.trunc(x);
  // x - trunc(x) is exact in f32, so the tie test is exact.
  const up = f32x4.ge(f32x4.abs(f32x4.sub(x, t)), f32x4.splat(<f32>0.5));
  const step = v128.bitselect(i32x4.splat(-1), i32x4.splat(1), f32x4.lt(x, f32x4.splat(0)));
  const r = i32x4.add(i32x4.trunc_sat_f32x4_s(t), v128.and(step, up));
  const valid = f32x4.lt(f32x4.abs(x), f32x4.splat(TWO31));
  return v128.and(v128.and(r, valid), i32x4.splat(255));
}

/** Truncation toward zero of `v` to int32 (0 for NaN and |v| ≥ 2^31, as aprkit's toInt8/toUint8). */
@inline function truncInt(v: v128): v128 {
  return v128.and(i32x4.trunc_sat_f32x4_s(v), f32x4.lt(f32x4.abs(v), f32x4.splat(TWO31)));
}

/** Eight i32x4 of values −128..127 at `q` as 32 signed bytes, in order. */
@inline function sbytes32(q: usize): v128 {
  return i8x16.narrow_i16x8_s(
    i16x8.narrow_i32x4_s(v128.load(q), v128.load(q + 16)),
    i16x8.narrow_i32x4_s(v128.load(q + 32), v128.load(q + 48)),
  );
}

/**
 * C's (int)roundf(x) (halves away from zero) for |x| < 2^30: trunc, then one
 * step away from zero where |x − trunc(x)| ≥ 0.5 (exact in f32).
 */
@inline function roundAwaySmall(x: v128): v128 {
  const t = f32x4.trunc(x);
  const up = f32x4.ge(f32x4.abs(f32x4.sub(x, t)), f32x4.splat(<f32>0.5));
  // ±1 by x's sign where `up`: (up ^ s) − s is up for x ≥ 0 and −up below.
  const s = i32x4.shr_s(x, 31);
  return i32x4.sub(i32x4.trunc_sat_f32x4_s(t), i32x4.sub(v128.xor(up, s), s));
}

/** The largest lane of `m` (no NaN among them). */
@inline function maxLane(m: v128): f32 {
  const a = f32x4.pmax(m, i32x4.shuffle(m, m, 2, 3, 0, 1));
  return f32x4.extract_lane(f32x4.pmax(a, i32x4.shuffle(a, a, 1, 0, 3, 2)), 0);
}

/** Encode `nb` blocks of 32 f32 at `src` into 34-byte Q8_0 blocks at `dst`. */
export function encodeQ8_0(src: usize, dst: usize, nb: i32): void {
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 128;
    const y = dst + <usize>b * 34;
    // f32x4.max propagates NaN: a NaN anywhere makes the block's max NaN.
    let m4 = f32x4.splat(0);
    for (let i = 0; i < 8; i++) m4 = f32x4.max(m4, f32x4.abs(v128.load(x + <usize>i * 16)));
    m4 = f32x4.max(m4, i32x4.shuffle(m4, m4, 2, 3, 0, 1));
    let amax = f32x4.extract_lane(f32x4.max(m4, i32x4.shuffle(m4, m4, 1, 0, 3, 2)), 0);
    // Values may exceed the max C finds after a NaN: no short rounding then.
    const short = amax == amax;
    if (!short) {
      // C's MAX(amax, fabsf(x)) takes a NaN and drops it at the next value:
      // the result depends on the order, so follow it.
      amax = 0;
      for (let j = 0; j < 32; j++) {
        const a = Mathf.abs(load<f32>(x + <usize>j * 4));
        amax = amax > a ? amax : a;
      }
    }
    const d = amax / <f32>127.0;
    const id: f32 = d != 0 ? <f32>1.0 / d : 0;
    store<u16>(y, <u16>f32ToF16(d));
    const idv = f32x4.splat(id);
    // Every |x·id| <= amax·id (rounding is monotonic): under 2^30 (all but
    // NaN, infinities and a subnormal amax's huge id), the short rounding,
    // whose levels are within ±127 (signed narrowing keeps them).
    if (short && amax * id < <f32>1073741824.0) {
      for (let i = 0; i < 8; i++) {
        v128.store(Q + <usize>i * 16, roundAwaySmall(f32x4.mul(v128.load(x + <usize>i * 16), idv)));
      }
      v128.store(y + 2, sbytes32(Q));
      v128.store(y + 18, sbytes32(Q + 64));
      continue;
    }
    for (let i = 0; i < 8; i++) {
      v128.store(Q + <usize>i * 16, roundAway8(f32x4.mul(v128.load(x + <usize>i * 16), idv)));
    }
    v128.store(y + 2, bytes32(Q));
    v128.store(y + 18, bytes32(Q + 64));
  }
}

/** Q5_0/Q5_1's packing of 32 levels from `Q`: 4 bytes of fifth bits at `qh`, then 16 of nibbles. */
@inline function packFiveBits(qh: usize): void {
  const a = bytes32(Q);
  const c = bytes32(Q + 64);
  const m15 = i8x16.splat(15);
  v128.store(qh + 4, v128.or(v128.and(a, m15), i8x16.shl(v128.and(c, m15), 4)));
  // Bit 4 of level j is bit j of qh: move it to each byte's top bit.
  const lo = <u32>i8x16.bitmask(i8x16.shl(a, 3));
  const hi = <u32>i8x16.bitmask(i8x16.shl(c, 3));
  store<u32>(qh, lo | (hi << 16));
}

/** Q4_0/Q4_1's packing of 32 levels from `Q`: 16 bytes of nibbles at `y`. */
@inline function packNibbles(y: usize): void {
  v128.store(y, v128.or(bytes32(Q), i8x16.shl(bytes32(Q + 64), 4)));
}

/**
 * The symmetric types (Q5_0: `half` 16, Q4_0: 8): `d = max / -half`, levels
 * `MIN(2·half − 1, (int8_t)(x/d + half + 0.5))`, f16 d then the packed levels.
 */
@inline function encodeSymmetric(src: usize, dst: usize, nb: i32, half: f32, blockBytes: usize): void {
  const top = i32x4.splat(<i32>(half + half) - 1);
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 128;
    const y = dst + <usize>b * blockBytes;
    // pmax ignores NaN lanes of the values, as C's comparisons do.
    let m4 = f32x4.splat(0);
    for (let i = 0; i < 8; i++) m4 = f32x4.pmax(m4, f32x4.abs(v128.load(x + <usize>i * 16)));
    const amax = maxLane(m4);
    // C keeps the first value of the largest |x| (NaN never compares larger).
    let max: f32 = 0;
    if (amax > 0) {
      const am = f32x4.splat(amax);
      for (let i = 0; i < 8; i++) {
        const v = v128.load(x + <usize>i * 16);
        const hit = i32x4.bitmask(f32x4.eq(f32x4.abs(v), am));
        if (hit != 0) {
          max = load<f32>(x + <usize>(i * 4 + ctz(hit)) * 4);
          break;
        }
      }
    }
    const d = max / -half;
    const id: f32 = d != 0 ? <f32>1.0 / d : 0;
    store<u16>(y, <u16>f32ToF16(d));
    const idv = f32x4.splat(id);
    const offset = f32x4.splat(half + <f32>0.5);
    if (amax * Mathf.abs(id) <= half + <f32>1.0) {
      // Every x·id + half + 0.5 is then in (−0.5, 2·half + 1.5) (or NaN, 0
      // either way): the truncation is the level, (int8_t) changes nothing.
      for (let i = 0; i < 8; i++) {
        const v = f32x4.add(f32x4.mul(v128.load(x + <usize>i * 16), idv), offset);
        v128.store(Q + <usize>i * 16, i32x4.min_s(i32x4.trunc_sat_f32x4_s(v), top));
      }
      if (half == 16) packFiveBits(y + 2);
      else packNibbles(y + 2);
      continue;
    }
    for (let i = 0; i < 8; i++) {
      const v = f32x4.add(f32x4.mul(v128.load(x + <usize>i * 16), idv), offset);
      // (int8_t) of the truncation, then MIN(top, ·), stored as a byte.
      const q8 = i32x4.shr_s(i32x4.shl(truncInt(v), 24), 24);
      v128.store(Q + <usize>i * 16, v128.and(i32x4.min_s(q8, top), i32x4.splat(255)));
    }
    if (half == 16) packFiveBits(y + 2);
    else packNibbles(y + 2);
  }
}

/** Encode `nb` blocks of 32 f32 at `src` into 22-byte Q5_0 blocks at `dst`. */
export function encodeQ5_0(src: usize, dst: usize, nb: i32): void {
  encodeSymmetric(src, dst, nb, 16, 22);
}

/** Encode `nb` blocks of 32 f32 at `src` into 18-byte Q4_0 blocks at `dst`. */
export function encodeQ4_0(src: usize, dst: usize, nb: i32): void {
  encodeSymmetric(src, dst, nb, 8, 18);
}

/** The first ±0 of the block at `x` (C's min/max keeps the first zero it meets). */
function firstZero(x: usize): f32 {
  for (let j = 0; j < 32; j++) {
    const v = load<f32>(x + <usize>j * 4);
    if (v == 0) return v;
  }
  return 0;
}

/**
 * The types with a min (Q5_1: `top` 31, levels `(uint8_t)` unclamped; Q4_1:
 * `top` 15, levels `MIN(15, (int8_t)(·))`): `d = (max − min) / top`, f16 d and
 * min, then the packed levels.
 */
@inline function encodeWithMin(src: usize, dst: usize, nb: i32, top: f32, blockBytes: usize): void {
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 128;
    const y = dst + <usize>b * blockBytes;
    let lo4 = f32x4.splat(F32.MAX_VALUE);
    let hi4 = f32x4.splat(-F32.MAX_VALUE);
    for (let i = 0; i < 8; i++) {
      const v = v128.load(x + <usize>i * 16);
      lo4 = v128.bitselect(v, lo4, f32x4.lt(v, lo4));
      hi4 = v128.bitselect(v, hi4, f32x4.gt(v, hi4));
    }
    let min = F32.MAX_VALUE;
    let max = -F32.MAX_VALUE;
    for (let k = 0; k < 4; k++) {
      const l = f32x4.extract_lane(lo4, 0);
      const h = f32x4.extract_lane(hi4, 0);
      if (l < min) min = l;
      if (h > max) max = h;
      lo4 = i32x4.shuffle(lo4, lo4, 1, 2, 3, 0);
      hi4 = i32x4.shuffle(hi4, hi4, 1, 2, 3, 0);
    }
    if (min == 0) min = firstZero(x);
    if (max == 0) max = firstZero(x);
    const d = (max - min) / top;
    const id: f32 = d != 0 ? <f32>1.0 / d : 0;
    store<u16>(y, <u16>f32ToF16(d));
    store<u16>(y + 2, <u16>f32ToF16(min));
    const idv = f32x4.splat(id);
    const minv = f32x4.splat(min);
    const half = f32x4.splat(<f32>0.5);
    if ((max - min) * id <= top + <f32>1.0) {
      // Every (x − min)·id + 0.5 is then in [0, top + 1.5] (or NaN, 0 either
      // way): the truncation is the level, the byte casts change nothing.
      for (let i = 0; i < 8; i++) {
        const v = f32x4.mul(f32x4.sub(v128.load(x + <usize>i * 16), minv), idv);
        const t = i32x4.trunc_sat_f32x4_s(f32x4.add(v, half));
        v128.store(Q + <usize>i * 16, top == 31 ? t : i32x4.min_s(t, i32x4.splat(15)));
      }
      if (top == 31) packFiveBits(y + 4);
      else packNibbles(y + 4);
      continue;
    }
    for (let i = 0; i < 8; i++) {
      const v = f32x4.mul(f32x4.sub(v128.load(x + <usize>i * 16), minv), idv);
      const t = truncInt(f32x4.add(v, half));
      if (top == 31) {
        // (uint8_t) of the truncation: no clamp.
        v128.store(Q + <usize>i * 16, v128.and(t, i32x4.splat(255)));
      } else {
        // MIN(15, (int8_t) of the truncation), stored as a byte.
        const q8 = i32x4.shr_s(i32x4.shl(t, 24), 24);
        v128.store(Q + <usize>i * 16, v128.and(i32x4.min_s(q8, i32x4.splat(15)), i32x4.splat(255)));
      }
    }
    if (top == 31) packFiveBits(y + 4);
    else packNibbles(y + 4);
  }
}

/** Encode `nb` blocks of 32 f32 at `src` into 24-byte Q5_1 blocks at `dst`. */
export function encodeQ5_1(src: usize, dst: usize, nb: i32): void {
  encodeWithMin(src, dst, nb, 31, 24);
}

/** Encode `nb` blocks of 32 f32 at `src` into 20-byte Q4_1 blocks at `dst`. */
export function encodeQ4_1(src: usize, dst: usize, nb: i32): void {
  encodeWithMin(src, dst, nb, 15, 20);
}
