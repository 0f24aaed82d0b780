// AssemblyScript: BF16 payload bytes straight to Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1 and Q1_0 blocks, the same bytes as widening them (bf16_widen.ts) and running
// legacy_encode.ts' encoders, in one pass: each block's 32 values are widened
// into eight locals (two unpacks per 16 bytes), its scale found and its
// levels made from registers, with the loop constants read from memory once
// (AssemblyScript writes a v128.const at each use, which V8 rebuilds in every
// iteration). A block the short paths do not cover (a NaN or an infinity, a
// scale whose levels could leave the range the short rounding holds) is
// widened to scratch and encoded by legacy_encode.ts' own kernel.

import { addTransposed, f32ToF16, f32ToF16Inline } from "./common";
import { encodeQ4_0, encodeQ4_1, encodeQ5_0, encodeQ5_1, encodeQ8_0 } from "./legacy_encode";
import { widenBf16 } from "./bf16_widen";
import { encodeQ1_0 } from "./ternary_encode";

// One block widened, for the exact kernels.
const BLOCK: usize = memory.data(32 * 4, 16);
// Loop constants (see the header).
const K: usize = memory.data<i32>([
  0x3effffff, 0x3effffff, 0x3effffff, 0x3effffff, // 0.5 − 2^-25 (just below a half)
  0x80000000, 0x80000000, 0x80000000, 0x80000000, // the sign bit
  15, 15, 15, 15, // Q4 levels' top
  0x0f0f0f0f, 0x0f0f0f0f, 0x0f0f0f0f, 0x0f0f0f0f, // low nibbles
  0x3f000000, 0x3f000000, 0x3f000000, 0x3f000000, // 0.5
  0x4b400000, 0x4b400000, 0x4b400000, 0x4b400000, // 1.5·2^23
  0x41080000, 0x41080000, 0x41080000, 0x41080000, // 8.5 (Q4_0's offset)
  0x41840000, 0x41840000, 0x41840000, 0x41840000, // 16.5 (Q5_0's)
  31, 31, 31, 31, // Q5 levels' top
  0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff, // all but the sign
], 16);

/** bf16 lanes 0..3 (`hi` false) or 4..7 of `h` as f32: each value's 16 bits on top. */
@inline function widen(h: v128, hi: bool): v128 {
  const z = i8x16.splat(0);
  return hi
    ? i8x16.shuffle(z, h, 8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31)
    : i8x16.shuffle(z, h, 0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
}

// f32x4.min/max (NaN-propagating, −0 below +0) take ~8 instructions each on
// x64; pmin/pmax and integer max are one. So the maxima below are pmin/pmax
// (which may skip a NaN) with a separate test for NaN, or integer maxima of
// the magnitudes' bits (ordered as the magnitudes, NaN above infinity).

/** The largest lane of `m` (no NaN among them). */
@inline function pmaxLane(m: v128): f32 {
  const a = f32x4.pmax(m, i32x4.shuffle(m, m, 2, 3, 0, 1));
  return f32x4.extract_lane(f32x4.pmax(a, i32x4.shuffle(a, a, 1, 0, 3, 2)), 0);
}

/** The smallest lane of `m` (no NaN among them). */
@inline function pminLane(m: v128): f32 {
  const a = f32x4.pmin(m, i32x4.shuffle(m, m, 2, 3, 0, 1));
  return f32x4.extract_lane(f32x4.pmin(a, i32x4.shuffle(a, a, 1, 0, 3, 2)), 0);
}

/**
 * Whether the block holds a NaN: then its sum is NaN (so is it for +inf with
 * −inf, which the callers' range tests send to the exact kernel anyway).
 */
@inline function anyNaN(
  x0: v128,
  x1: v128,
  x2: v128,
  x3: v128,
  x4: v128,
  x5: v128,
  x6: v128,
  x7: v128,
): bool {
  const s = f32x4.add(
    f32x4.add(f32x4.add(x0, x1), f32x4.add(x2, x3)),
    f32x4.add(f32x4.add(x4, x5), f32x4.add(x6, x7)),
  );
  return v128.any_true(f32x4.ne(s, s));
}

/** Sixteen i32x4 lanes of −128..127 as 16 signed bytes, in order. */
@inline function sbytes(a: v128, b: v128, c: v128, d: v128): v128 {
  return i8x16.narrow_i16x8_s(i16x8.narrow_i32x4_s(a, b), i16x8.narrow_i32x4_s(c, d));
}

/** Sixteen i32x4 lanes of 0..255 as 16 bytes, in order. */
@inline function ubytes(a: v128, b: v128, c: v128, d: v128): v128 {
  return i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_u(a, b), i16x8.narrow_i32x4_u(c, d));
}

/**
 * C's roundf (halves away from zero) for |v| < 2^23: truncate v plus just
 * under a half of v's sign. For a fraction below a half the sum stays below
 * the next integer (it is at most n + 1 − ulp(v) − 2^-25, whose rounding is
 * at most n + 1 − ulp), at a half it reaches n + 1 (n + 1 − 2^-25 rounds up
 * to it, an even mantissa at 1, a nearer one above).
 */
@inline function roundAway(v: v128, half: v128, sign: v128, magic: v128): v128 {
  return truncSmall(f32x4.add(v, v128.or(v128.and(v, sign), half)), magic);
}

/**
 * Truncation toward zero of `v` (every lane finite, |v| < 2^22) to i32:
 * f32x4.trunc, then the integer read from the mantissa of t + 1.5·2^23 (exact
 * there). Three operations where the saturating conversion takes seven.
 */
@inline function truncSmall(v: v128, magic: v128): v128 {
  return i32x4.sub(f32x4.add(f32x4.trunc(v), magic), magic);
}

// Block kinds of eachBlock (a constant at each call, so each kernel keeps its own branch).
const Q8_0: i32 = 0;
const Q4_0: i32 = 1;
const Q5_0: i32 = 2;
const Q4_1: i32 = 3;
const Q5_1: i32 = 4;

/**
 * The loop of the 32-value kernels: each block's 64 bf16 bytes at `src`
 * widened into eight locals, then encoded as `kind` at `dst`.
 */
@inline function eachBlock(src: usize, dst: usize, nb: i32, kind: i32, blockBytes: usize): void {
  for (let b = 0; b < nb; b++) {
    const p = src + <usize>b * 64;
    const y = dst + <usize>b * blockBytes;
    const h0 = v128.load(p);
    const h1 = v128.load(p + 16);
    const h2 = v128.load(p + 32);
    const h3 = v128.load(p + 48);
    const x0 = widen(h0, false);
    const x1 = widen(h0, true);
    const x2 = widen(h1, false);
    const x3 = widen(h1, true);
    const x4 = widen(h2, false);
    const x5 = widen(h2, true);
    const x6 = widen(h3, false);
    const x7 = widen(h3, true);
    if (kind == Q8_0) {
      q8Block(p, y, x0, x1, x2, x3, x4, x5, x6, x7);
      continue;
    }
    // The others start from the block's largest and smallest values
    // (pmin/pmax may skip a NaN: each tests for one).
    const hi = pmaxLane(f32x4.pmax(
      f32x4.pmax(f32x4.pmax(x0, x1), f32x4.pmax(x2, x3)),
      f32x4.pmax(f32x4.pmax(x4, x5), f32x4.pmax(x6, x7)),
    ));
    const lo = pminLane(f32x4.pmin(
      f32x4.pmin(f32x4.pmin(x0, x1), f32x4.pmin(x2, x3)),
      f32x4.pmin(f32x4.pmin(x4, x5), f32x4.pmin(x6, x7)),
    ));
    if (kind == Q4_0) symmetricBlock(p, y, 8, lo, hi, x0, x1, x2, x3, x4, x5, x6, x7);
    else if (kind == Q5_0) symmetricBlock(p, y, 16, lo, hi, x0, x1, x2, x3, x4, x5, x6, x7);
    else if (kind == Q4_1) withMinBlock(p, y, 15, lo, hi, x0, x1, x2, x3, x4, x5, x6, x7);
    else withMinBlock(p, y, 31, lo, hi, x0, x1, x2, x3, x4, x5, x6, x7);
  }
}

/** One Q8_0 block (34 bytes at `y`) of the bf16 values at `p`, widened to x0..x7. */
@inline function q8Block(
  p: usize,
  y: usize,
  x0: v128,
  x1: v128,
  x2: v128,
  x3: v128,
  x4: v128,
  x5: v128,
  x6: v128,
  x7: v128,
): void {
  const half = v128.load(K);
  const sign = v128.load(K + 16);
  const magic = v128.load(K + 80);
  const abs = v128.load(K + 144);
  // The largest magnitude's bits: a NaN is above every other (its amax
  // is NaN, and the test below fails).
  const m = i32x4.max_u(
    i32x4.max_u(
      i32x4.max_u(v128.and(x0, abs), v128.and(x1, abs)),
      i32x4.max_u(v128.and(x2, abs), v128.and(x3, abs)),
    ),
    i32x4.max_u(
      i32x4.max_u(v128.and(x4, abs), v128.and(x5, abs)),
      i32x4.max_u(v128.and(x6, abs), v128.and(x7, abs)),
    ),
  );
  const m2 = i32x4.max_u(m, i32x4.shuffle(m, m, 2, 3, 0, 1));
  const amax = reinterpret<f32>(
    i32x4.extract_lane(i32x4.max_u(m2, i32x4.shuffle(m2, m2, 1, 0, 3, 2)), 0),
  );
  const d = amax / <f32>127.0;
  const id: f32 = d != 0 ? <f32>1.0 / d : 0;
  // Every |x·id| <= amax·id (rounding is monotonic), so below 127.5 every
  // level is within ±127 and the rounding above applies.
  if (!(amax * id < <f32>127.5)) {
    widenBf16(p, BLOCK, 32);
    encodeQ8_0(BLOCK, y, 1);
    return;
  }
  store<u16>(y, <u16>f32ToF16Inline(d));
  const idv = f32x4.splat(id);
  v128.store(
    y + 2,
    sbytes(
      roundAway(f32x4.mul(x0, idv), half, sign, magic),
      roundAway(f32x4.mul(x1, idv), half, sign, magic),
      roundAway(f32x4.mul(x2, idv), half, sign, magic),
      roundAway(f32x4.mul(x3, idv), half, sign, magic),
    ),
  );
  v128.store(
    y + 18,
    sbytes(
      roundAway(f32x4.mul(x4, idv), half, sign, magic),
      roundAway(f32x4.mul(x5, idv), half, sign, magic),
      roundAway(f32x4.mul(x6, idv), half, sign, magic),
      roundAway(f32x4.mul(x7, idv), half, sign, magic),
    ),
  );
}

/**
 * One block of a symmetric type (Q5_0: `half` 16, Q4_0: 8): d = max / −half
 * for the first value of largest |x|, levels MIN(2·half − 1, (int8_t)(x·id +
 * half + 0.5)); see legacy_encode.ts' encodeSymmetric.
 */
@inline function symmetricBlock(
  p: usize,
  y: usize,
  half: f32,
  lo: f32,
  hi: f32,
  x0: v128,
  x1: v128,
  x2: v128,
  x3: v128,
  x4: v128,
  x5: v128,
  x6: v128,
  x7: v128,
): void {
  const offset = v128.load(half == 16 ? K + 112 : K + 96);
  const hiQ = v128.load(half == 16 ? K + 128 : K + 32);
  const m15 = v128.load(K + 48);
  const magic = v128.load(K + 80);
  // C keeps the first value of the largest |x|: the largest value, or the
  // smallest, whichever is larger in magnitude; when both are (x and −x),
  // which comes first decides, and the exact kernel looks, as it does for a
  // block with a NaN (C skips NaN).
  const amax = hi > -lo ? hi : -lo;
  const max: f32 = amax == 0 ? 0 : hi > -lo ? hi : lo;
  const d = max / -half;
  const id: f32 = d != 0 ? <f32>1.0 / d : 0;
  // Every x·id + half + 0.5 is then in (−0.5, 2·half + 1.5): the truncation
  // is the level, (int8_t) changes nothing (legacy_encode.ts). A NaN amax
  // fails the test.
  if (
    !(amax * Mathf.abs(id) <= half + <f32>1.0) || (hi == -lo && hi != 0) ||
    anyNaN(x0, x1, x2, x3, x4, x5, x6, x7)
  ) {
    widenBf16(p, BLOCK, 32);
    if (half == 16) encodeQ5_0(BLOCK, y, 1);
    else encodeQ4_0(BLOCK, y, 1);
    return;
  }
  store<u16>(y, <u16>f32ToF16Inline(d));
  const idv = f32x4.splat(id);
  const q0 = i32x4.min_s(truncSmall(f32x4.add(f32x4.mul(x0, idv), offset), magic), hiQ);
  const q1 = i32x4.min_s(truncSmall(f32x4.add(f32x4.mul(x1, idv), offset), magic), hiQ);
  const q2 = i32x4.min_s(truncSmall(f32x4.add(f32x4.mul(x2, idv), offset), magic), hiQ);
  const q3 = i32x4.min_s(truncSmall(f32x4.add(f32x4.mul(x3, idv), offset), magic), hiQ);
  const q4 = i32x4.min_s(truncSmall(f32x4.add(f32x4.mul(x4, idv), offset), magic), hiQ);
  const q5 = i32x4.min_s(truncSmall(f32x4.add(f32x4.mul(x5, idv), offset), magic), hiQ);
  const q6 = i32x4.min_s(truncSmall(f32x4.add(f32x4.mul(x6, idv), offset), magic), hiQ);
  const q7 = i32x4.min_s(truncSmall(f32x4.add(f32x4.mul(x7, idv), offset), magic), hiQ);
  pack(y + 2, ubytes(q0, q1, q2, q3), ubytes(q4, q5, q6, q7), half == 16, m15);
}

/**
 * Levels 0..15 (`five` false: 16 bytes of nibbles at `y`, level j + 16 in
 * the high nibble) or 0..31 (`five`: 4 bytes of fifth bits at `y`, then the
 * nibbles), from the 32 levels as bytes `a` (0..15) and `c` (16..31). The
 * shifts are 16-bit (one instruction; V8 builds an i8x16 shift from one and a
 * mask): a nibble shifted by 4 moves no bit into the next byte, and of a
 * byte shifted by 3 only bit 4 reaches a byte's top bit, which is all
 * i8x16.bitmask reads, so the bytes are the same.
 */
@inline function pack(y: usize, a: v128, c: v128, five: bool, m15: v128): void {
  if (!five) {
    v128.store(y, v128.or(a, i16x8.shl(c, 4)));
    return;
  }
  v128.store(y + 4, v128.or(v128.and(a, m15), i16x8.shl(v128.and(c, m15), 4)));
  // Bit 4 of level j is bit j of qh: move it to each byte's top bit.
  store<u32>(y, <u32>i8x16.bitmask(i16x8.shl(a, 3)) | (<u32>i8x16.bitmask(i16x8.shl(c, 3)) << 16));
}

/**
 * One block of a type with a min (Q5_1: `top` 31, Q4_1: 15): d = (max −
 * min) / top, levels (x − min)·id + 0.5 truncated (MIN 15 for Q4_1); see
 * legacy_encode.ts' encodeWithMin. A block with a NaN, an infinity or a zero
 * min or max (whose sign C takes from the first zero) takes the exact kernel.
 */
@inline function withMinBlock(
  p: usize,
  y: usize,
  top: f32,
  min: f32,
  max: f32,
  x0: v128,
  x1: v128,
  x2: v128,
  x3: v128,
  x4: v128,
  x5: v128,
  x6: v128,
  x7: v128,
): void {
  const halfV = v128.load(K + 64);
  const m15 = v128.load(K + 48);
  const q15 = v128.load(K + 32);
  const magic = v128.load(K + 80);
  // A block with a NaN takes the exact kernel (tested below).
  const d = (max - min) / top;
  const id: f32 = d != 0 ? <f32>1.0 / d : 0;
  // Without NaN, infinities and zero ends, C's scan finds the same min and
  // max; (max − min)·id <= top + 1 keeps every level in range (legacy_encode.ts).
  if (
    !((max - min) * id <= top + <f32>1.0) || min == 0 || max == 0 ||
    anyNaN(x0, x1, x2, x3, x4, x5, x6, x7)
  ) {
    widenBf16(p, BLOCK, 32);
    if (top == 31) encodeQ5_1(BLOCK, y, 1);
    else encodeQ4_1(BLOCK, y, 1);
    return;
  }
  store<u16>(y, <u16>f32ToF16Inline(d));
  store<u16>(y + 2, <u16>f32ToF16Inline(min));
  const idv = f32x4.splat(id);
  const minv = f32x4.splat(min);
  let q0 = truncSmall(f32x4.add(f32x4.mul(f32x4.sub(x0, minv), idv), halfV), magic);
  let q1 = truncSmall(f32x4.add(f32x4.mul(f32x4.sub(x1, minv), idv), halfV), magic);
  let q2 = truncSmall(f32x4.add(f32x4.mul(f32x4.sub(x2, minv), idv), halfV), magic);
  let q3 = truncSmall(f32x4.add(f32x4.mul(f32x4.sub(x3, minv), idv), halfV), magic);
  let q4 = truncSmall(f32x4.add(f32x4.mul(f32x4.sub(x4, minv), idv), halfV), magic);
  let q5 = truncSmall(f32x4.add(f32x4.mul(f32x4.sub(x5, minv), idv), halfV), magic);
  let q6 = truncSmall(f32x4.add(f32x4.mul(f32x4.sub(x6, minv), idv), halfV), magic);
  let q7 = truncSmall(f32x4.add(f32x4.mul(f32x4.sub(x7, minv), idv), halfV), magic);
  if (top != 31) {
    q0 = i32x4.min_s(q0, q15);
    q1 = i32x4.min_s(q1, q15);
    q2 = i32x4.min_s(q2, q15);
    q3 = i32x4.min_s(q3, q15);
    q4 = i32x4.min_s(q4, q15);
    q5 = i32x4.min_s(q5, q15);
    q6 = i32x4.min_s(q6, q15);
    q7 = i32x4.min_s(q7, q15);
  }
  pack(y + 4, ubytes(q0, q1, q2, q3), ubytes(q4, q5, q6, q7), top == 31, m15);
}

/** Encode `nb` 32-value blocks of bf16 at `src` (64 bytes each) into Q8_0 at `dst`. */
export function encodeQ8_0Bf16(src: usize, dst: usize, nb: i32): void {
  eachBlock(src, dst, nb, Q8_0, 34);
}

/** Encode `nb` 32-value blocks of bf16 at `src` into Q4_0 (18 bytes each) at `dst`. */
export function encodeQ4_0Bf16(src: usize, dst: usize, nb: i32): void {
  eachBlock(src, dst, nb, Q4_0, 18);
}

/** Encode `nb` 32-value blocks of bf16 at `src` into Q5_0 (22 bytes each) at `dst`. */
export function encodeQ5_0Bf16(src: usize, dst: usize, nb: i32): void {
  eachBlock(src, dst, nb, Q5_0, 22);
}

/** Encode `nb` 32-value blocks of bf16 at `src` into Q4_1 (20 bytes each) at `dst`. */
export function encodeQ4_1Bf16(src: usize, dst: usize, nb: i32): void {
  eachBlock(src, dst, nb, Q4_1, 20);
}

/** Encode `nb` 32-value blocks of bf16 at `src` into Q5_1 (24 bytes each) at `dst`. */
export function encodeQ5_1Bf16(src: usize, dst: usize, nb: i32): void {
  eachBlock(src, dst, nb, Q5_1, 24);
}

// encodeQ1_0Bf16's four sums, and one 128-value block widened for the exact kernel.
const SUMS4: usize = memory.data(16, 16);
const BLOCK128: usize = memory.data(128 * 4, 16);

/**
 * Encode `nb` 128-value blocks of bf16 at `src` (256 bytes each) into Q1_0
 * (18 bytes each) at `dst`: ternary_encode.ts' encodeQ1_0 on the widened
 * values (four blocks' sequential |x| sums side by side, lane k block k's),
 * widening as it reads.
 */
export function encodeQ1_0Bf16(src: usize, dst: usize, nb: i32): void {
  const zero = f32x4.splat(0);
  const abs = v128.load(K + 144);
  let b = 0;
  for (; b + 4 <= nb; b += 4) {
    const x = src + <usize>b * 256;
    let s = zero;
    for (let j = 0; j < 128; j += 8) {
      const p = x + <usize>j * 2;
      const h0 = v128.load(p);
      const h1 = v128.load(p + 256);
      const h2 = v128.load(p + 512);
      const h3 = v128.load(p + 768);
      s = addTransposed(
        s,
        v128.and(widen(h0, false), abs),
        v128.and(widen(h1, false), abs),
        v128.and(widen(h2, false), abs),
        v128.and(widen(h3, false), abs),
      );
      s = addTransposed(
        s,
        v128.and(widen(h0, true), abs),
        v128.and(widen(h1, true), abs),
        v128.and(widen(h2, true), abs),
        v128.and(widen(h3, true), abs),
      );
    }
    v128.store(SUMS4, f32x4.div(s, f32x4.splat(<f32>128.0)));
    for (let k = 0; k < 4; k++) {
      const y = dst + <usize>(b + k) * 18;
      store<u16>(y, <u16>f32ToF16(load<f32>(SUMS4 + <usize>k * 4)));
      const q = x + <usize>k * 256;
      // Bit j of the 16 bytes: x[j] >= 0 (false for NaN).
      for (let j = 0; j < 128; j += 16) {
        const ha = v128.load(q + <usize>j * 2);
        const hb = v128.load(q + <usize>j * 2 + 16);
        const m = i8x16.narrow_i16x8_s(
          i16x8.narrow_i32x4_s(f32x4.ge(widen(ha, false), zero), f32x4.ge(widen(ha, true), zero)),
          i16x8.narrow_i32x4_s(f32x4.ge(widen(hb, false), zero), f32x4.ge(widen(hb, true), zero)),
        );
        store<u16>(y + 2 + <usize>(j >> 3), <u16>i8x16.bitmask(m));
      }
    }
  }
  for (; b < nb; b++) {
    widenBf16(src + <usize>b * 256, BLOCK128, 128);
    encodeQ1_0(BLOCK128, dst + <usize>b * 18, 1);
  }
}
