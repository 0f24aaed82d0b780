// AssemblyScript: ggml's make_q3_quants(16, 4, x, L, do_rmse = true) on the
// sixteen sub-blocks of a Q3_K super-block, four at a time (the reference
// Q3_K encoder's fit, q3_k.ts; aprkit's TypeScript port: makeQ3Quants in
// ../../q3_k.ts).
//
// C refines each sub-block by sequential per-value moves, so lanes cannot
// split a sub-block: a group of four sub-blocks is transposed (lane k of row
// i is value i of sub-block 4g + k) and each lane runs C's sequence, its
// branches as lane masks. A lane whose pass changed nothing would change
// nothing again, so passes run until no lane changes (at most five, as C).
//
// Each value's move depends on the sums the moves before it left, but a move
// is taken for about 2% of (value, sub-block) pairs. So a pass first asks,
// for two values at a time and from the sums as they stand, whether any lane
// might move (a test that never misses a move), and runs C's step for a value
// only where it might (or where the step before changed the sums). The common
// path carries nothing from one value to the next, so a pass's tests overlap
// instead of waiting on a division chain. The sixteen values are written out
// and the scratch is static, so every hot address is a constant, which V8
// checks against the memory once at compile time instead of at each access.
//
// Per value, the terms of its current level as C forms them when it
// subtracts them (w·x·l, w·l·l), and the level as the bits nearest_int's
// 1.5·2^23 gives (`0x4b400000 + l`): a move needs nearest_int(x·sl2/slx) to
// differ from the level, so the test compares x·sl2/slx + 1.5·2^23 with those
// bits (equal bits: the same level; unequal: C's step decides).

import { select4 } from "./common";

const GROUP_MAX_EPS: f32 = <f32>1e-15;

// Scratch (static memory, 16-byte aligned); rows of four lanes.
const XR: usize = memory.data(16 * 16, 16); // the values, transposed (w = x·x, recomputed)
const TA: usize = memory.data(16 * 16, 16); // w·x·l of the current levels
const TB: usize = memory.data(16 * 16, 16); // w·l·l of the current levels
const LM: usize = memory.data(16 * 16, 16); // 0x4b400000 + the current levels
const ST: usize = memory.data(2 * 16, 16); // sumlx, suml2
/** Each sub-block's scale (0 where all zero), written by q3Group. */
export const Q3_SCALES: usize = memory.data(16 * 4, 16);
/** All-ones where a sub-block is all zero (amax < GROUP_MAX_EPS), written by q3Group. */
export const Q3_TINY: usize = memory.data(16 * 4, 16);
// Constants, read from memory into locals (AssemblyScript writes a v128.const
// at each use, which V8 rebuilds in every iteration): nearest_int's 1.5·2^23,
// mantissa mask and bias, the levels' -4 and 3, and -4.0.
const CONSTS: usize = memory.data<i32>([
  0x4b400000, 0x4b400000, 0x4b400000, 0x4b400000,
  0x7fffff, 0x7fffff, 0x7fffff, 0x7fffff,
  0x400000, 0x400000, 0x400000, 0x400000,
  -4, -4, -4, -4,
  3, 3, 3, 3,
  0xc0800000, 0xc0800000, 0xc0800000, 0xc0800000,
], 16);

/** clamp(nearest_int(v), -4, 3) with the constants in locals. */
@inline function level(v: v128, magic: v128, mant: v128, bias: v128, lo: v128, hi: v128): v128 {
  const n = i32x4.sub(v128.and(f32x4.add(v, magic), mant), bias);
  return i32x4.min_s(i32x4.max_s(n, lo), hi);
}

/** Values i0..i0+3 of the four sub-blocks at `x` (64 bytes apart) as rows i0..i0+3. */
@inline function loadRows(x: usize, i0: usize): void {
  const p = x + i0 * 4;
  const r0 = v128.load(p);
  const r1 = v128.load(p + 64);
  const r2 = v128.load(p + 128);
  const r3 = v128.load(p + 192);
  const lo01 = i32x4.shuffle(r0, r1, 0, 4, 1, 5);
  const lo23 = i32x4.shuffle(r2, r3, 0, 4, 1, 5);
  const hi01 = i32x4.shuffle(r0, r1, 2, 6, 3, 7);
  const hi23 = i32x4.shuffle(r2, r3, 2, 6, 3, 7);
  v128.store(XR + i0 * 16, i32x4.shuffle(lo01, lo23, 0, 1, 4, 5));
  v128.store(XR + i0 * 16 + 16, i32x4.shuffle(lo01, lo23, 2, 3, 6, 7));
  v128.store(XR + i0 * 16 + 32, i32x4.shuffle(hi01, hi23, 0, 1, 4, 5));
  v128.store(XR + i0 * 16 + 48, i32x4.shuffle(hi01, hi23, 2, 3, 6, 7));
}

/** Row `i`'s values. */
@inline function xr(i: usize): v128 {
  return v128.load(XR + i * 16);
}

/** The larger of rows `i` and `i + 1` and 0 per lane, NaN left out (pmax keeps its first operand's). */
@inline function hi2(i: usize): v128 {
  return f32x4.pmax(f32x4.pmax(f32x4.splat(0), xr(i)), xr(i + 1));
}

/** The smaller of rows `i` and `i + 1` and 0 per lane, NaN left out. */
@inline function lo2(i: usize): v128 {
  return f32x4.pmin(f32x4.pmin(f32x4.splat(0), xr(i)), xr(i + 1));
}

/**
 * C's scan for `max` (the first value of largest magnitude above 0, else 0;
 * NaN never taken) one row at a time, for the lanes where the largest
 * magnitude is both a positive and a negative value: only the order tells.
 */
function scanMax(): v128 {
  let amax = f32x4.splat(0);
  let max = amax;
  for (let i = 0; i < 16; i++) {
    const v = xr(<usize>i);
    const ax = f32x4.abs(v);
    const more = f32x4.gt(ax, amax);
    amax = select4(ax, amax, more);
    max = select4(v, max, more);
  }
  return max;
}

/**
 * Load the group, returning each lane's C `max`: its value largest in
 * magnitude, the first of equals (0 where none is above 0). The largest and
 * smallest values decide it unless they are equal in magnitude, where C's
 * sequential scan runs.
 */
@inline function loadGroup(x: usize): v128 {
  loadRows(x, 0);
  loadRows(x, 4);
  loadRows(x, 8);
  loadRows(x, 12);
  const hi = f32x4.pmax(
    f32x4.pmax(f32x4.pmax(hi2(0), hi2(2)), f32x4.pmax(hi2(4), hi2(6))),
    f32x4.pmax(f32x4.pmax(hi2(8), hi2(10)), f32x4.pmax(hi2(12), hi2(14))),
  );
  const lo = f32x4.pmin(
    f32x4.pmin(f32x4.pmin(lo2(0), lo2(2)), f32x4.pmin(lo2(4), lo2(6))),
    f32x4.pmin(f32x4.pmin(lo2(8), lo2(10)), f32x4.pmin(lo2(12), lo2(14))),
  );
  const nlo = f32x4.neg(lo);
  if (v128.any_true(v128.and(f32x4.eq(hi, nlo), f32x4.gt(hi, f32x4.splat(0))))) return scanMax();
  return select4(hi, v128.and(lo, f32x4.gt(nlo, hi)), f32x4.gt(hi, nlo));
}

/** C's first levels for the value at byte offset `o`: LM and the terms TA, TB. */
@inline function firstLevel(
  o: usize,
  iscale: v128,
  magic: v128,
  mant: v128,
  bias: v128,
  lo: v128,
  hi: v128,
): void {
  const v = v128.load(XR + o);
  const l = level(f32x4.mul(iscale, v), magic, mant, bias, lo, hi);
  v128.store(LM + o, i32x4.add(l, magic));
  const lf = f32x4.convert_i32x4_s(l);
  const w = f32x4.mul(v, v);
  v128.store(TA + o, f32x4.mul(f32x4.mul(w, v), lf));
  v128.store(TB + o, f32x4.mul(f32x4.mul(w, lf), lf));
}

/** The sixteen terms at `p` summed in order from 0, as C's sums. */
@inline function sum16(p: usize): v128 {
  let s = f32x4.add(f32x4.splat(0), v128.load(p));
  s = f32x4.add(s, v128.load(p + 16));
  s = f32x4.add(s, v128.load(p + 32));
  s = f32x4.add(s, v128.load(p + 48));
  s = f32x4.add(s, v128.load(p + 64));
  s = f32x4.add(s, v128.load(p + 80));
  s = f32x4.add(s, v128.load(p + 96));
  s = f32x4.add(s, v128.load(p + 112));
  s = f32x4.add(s, v128.load(p + 128));
  s = f32x4.add(s, v128.load(p + 144));
  s = f32x4.add(s, v128.load(p + 160));
  s = f32x4.add(s, v128.load(p + 176));
  s = f32x4.add(s, v128.load(p + 192));
  s = f32x4.add(s, v128.load(p + 208));
  s = f32x4.add(s, v128.load(p + 224));
  return f32x4.add(s, v128.load(p + 240));
}

/**
 * C's step for the value at byte offset `o`, from and to the sums at ST: its
 * test and, in the lanes where it passes, its move. Returns whether a lane
 * moved.
 */
@inline function step(o: usize): bool {
  const zero = f32x4.splat(0);
  const sumlx = v128.load(ST);
  const suml2 = v128.load(ST + 16);
  const slx = f32x4.sub(sumlx, v128.load(TA + o));
  const sl2 = f32x4.sub(suml2, v128.load(TB + o));
  const magic = v128.load(CONSTS);
  const li = i32x4.sub(v128.load(LM + o), magic);
  const v = v128.load(XR + o);
  const t = f32x4.div(f32x4.mul(v, sl2), slx);
  const nl = level(
    t, magic, v128.load(CONSTS + 16), v128.load(CONSTS + 32), v128.load(CONSTS + 48),
    v128.load(CONSTS + 64),
  );
  const moves = v128.and(f32x4.gt(slx, zero), i32x4.ne(nl, li));
  if (!v128.any_true(moves)) return false;
  const nlf = f32x4.convert_i32x4_s(nl);
  const w = f32x4.mul(v, v);
  const a = f32x4.mul(f32x4.mul(w, v), nlf);
  const b = f32x4.mul(f32x4.mul(w, nlf), nlf);
  const slxN = f32x4.add(slx, a);
  const sl2N = f32x4.add(sl2, b);
  const better = f32x4.gt(
    f32x4.mul(f32x4.mul(slxN, slxN), suml2),
    f32x4.mul(f32x4.mul(sumlx, sumlx), sl2N),
  );
  const take = v128.and(moves, v128.and(f32x4.gt(sl2N, zero), better));
  if (!v128.any_true(take)) return false;
  v128.store(LM + o, select4(i32x4.add(nl, magic), v128.load(LM + o), take));
  v128.store(TA + o, select4(a, v128.load(TA + o), take));
  v128.store(TB + o, select4(b, v128.load(TB + o), take));
  v128.store(ST, select4(slxN, sumlx, take));
  v128.store(ST + 16, select4(sl2N, suml2, take));
  return true;
}

/** Lanes where the value at byte offset `o` might move, from the sums `sumlx`, `suml2`. */
@inline function mightMove(o: usize, sumlx: v128, suml2: v128, magic: v128): v128 {
  const slx = f32x4.sub(sumlx, v128.load(TA + o));
  const sl2 = f32x4.sub(suml2, v128.load(TB + o));
  const t = f32x4.add(f32x4.div(f32x4.mul(v128.load(XR + o), sl2), slx), magic);
  return v128.andnot(f32x4.gt(slx, f32x4.splat(0)), i32x4.eq(t, v128.load(LM + o)));
}

/** The values at byte offsets `o` and `o + 16` of a pass. Returns whether a lane moved. */
@inline function pairStep(o: usize): bool {
  const sumlx = v128.load(ST);
  const suml2 = v128.load(ST + 16);
  const magic = v128.load(CONSTS);
  const m0 = mightMove(o, sumlx, suml2, magic);
  const m1 = mightMove(o + 16, sumlx, suml2, magic);
  if (!v128.any_true(v128.or(m0, m1))) return false;
  // The second value's test stands only while the sums do.
  const moved = v128.any_true(m0) && step(o);
  if (moved || v128.any_true(m1)) return step(o + 16) || moved;
  return moved;
}

/**
 * Pair `p` (values 2p, 2p + 1) of a pass: tested unless nothing has moved in
 * this pass (`moved` < 0) and the last move of the pass before was in an
 * earlier pair (`last` < p). Then, in every lane, the sums and levels are the
 * ones that pair and all after it were last tested with, and no move was
 * taken: C's pass ends changing nothing, as the caller learns from the
 * returned -2. Otherwise returns the last pair moved in so far (`moved`, or `p`).
 */
@inline function pairAt(p: i32, last: i32, moved: i32): i32 {
  if (moved < 0 && last < p) return -2;
  return pairStep(<usize>p * 32) ? p : moved;
}

/**
 * One pass of C's refinement over the group's sixteen values, `last` the
 * pair of the pass before's last move (7 for a first pass). Returns the pair
 * of this pass's last move, or a negative number if nothing moved.
 */
function q3Pass(last: i32): i32 {
  let moved = pairAt(0, last, -1);
  moved = pairAt(1, last, moved);
  if (moved == -2) return -1;
  moved = pairAt(2, last, moved);
  if (moved == -2) return -1;
  moved = pairAt(3, last, moved);
  if (moved == -2) return -1;
  moved = pairAt(4, last, moved);
  if (moved == -2) return -1;
  moved = pairAt(5, last, moved);
  if (moved == -2) return -1;
  moved = pairAt(6, last, moved);
  if (moved == -2) return -1;
  return pairAt(7, last, moved);
}

/**
 * make_q3_quants(16, 4, x, L, do_rmse = true) on sub-blocks 4g..4g+3 of the
 * super-block at `x`: their scales to Q3_SCALES + 16g (0 where all zero),
 * Q3_TINY likewise, their levels to q3Level's scratch (until the next group).
 */
export function q3Group(x: usize, g: i32): void {
  const zero = f32x4.splat(0);
  const magic = v128.load(CONSTS);
  const mant = v128.load(CONSTS + 16);
  const bias = v128.load(CONSTS + 32);
  const lo = v128.load(CONSTS + 48);
  const hi = v128.load(CONSTS + 64);
  const max = loadGroup(x + <usize>g * 256);
  const iscale = f32x4.div(v128.load(CONSTS + 80), max);
  firstLevel(0, iscale, magic, mant, bias, lo, hi);
  firstLevel(16, iscale, magic, mant, bias, lo, hi);
  firstLevel(32, iscale, magic, mant, bias, lo, hi);
  firstLevel(48, iscale, magic, mant, bias, lo, hi);
  firstLevel(64, iscale, magic, mant, bias, lo, hi);
  firstLevel(80, iscale, magic, mant, bias, lo, hi);
  firstLevel(96, iscale, magic, mant, bias, lo, hi);
  firstLevel(112, iscale, magic, mant, bias, lo, hi);
  firstLevel(128, iscale, magic, mant, bias, lo, hi);
  firstLevel(144, iscale, magic, mant, bias, lo, hi);
  firstLevel(160, iscale, magic, mant, bias, lo, hi);
  firstLevel(176, iscale, magic, mant, bias, lo, hi);
  firstLevel(192, iscale, magic, mant, bias, lo, hi);
  firstLevel(208, iscale, magic, mant, bias, lo, hi);
  firstLevel(224, iscale, magic, mant, bias, lo, hi);
  firstLevel(240, iscale, magic, mant, bias, lo, hi);
  v128.store(ST, sum16(TA));
  v128.store(ST + 16, sum16(TB));
  // Up to five passes, as C, until one changes nothing.
  let last = 7;
  for (let itry = 0; itry < 5; itry++) {
    last = q3Pass(last);
    if (last < 0) break;
  }
  const sumlx = v128.load(ST);
  const suml2 = v128.load(ST + 16);
  const scale = select4(f32x4.div(sumlx, suml2), zero, f32x4.gt(suml2, zero));
  const tiny = f32x4.lt(f32x4.abs(max), f32x4.splat(GROUP_MAX_EPS));
  v128.store(Q3_SCALES + <usize>g * 16, select4(zero, scale, tiny));
  v128.store(Q3_TINY + <usize>g * 16, tiny);
}

/**
 * Sub-block j's levels + 4 as make_q3_quants leaves them (0 where all zero,
 * as C) to `out`, for the super-block at `x` whose groups q3Group fitted.
 * Needed only where the sub-block's stored scale is 0 (C keeps these levels
 * there), which is rare: its group is fitted again (the same result) rather
 * than every group's levels kept.
 */
export function q3Levels(x: usize, j: i32, out: usize): void {
  if (load<i32>(Q3_TINY + <usize>j * 4) != 0) {
    memory.fill(out, 0, 16);
    return;
  }
  q3Group(x, j >> 2);
  const lane = LM + <usize>(j & 3) * 4;
  for (let i = 0; i < 16; i++) {
    store<u8>(out + <usize>i, <u8>(load<i32>(lane + <usize>i * 16) - 0x4b400000 + 4));
  }
}
