// AssemblyScript: ggml's make_qx_quants(16, nmax, x, L, rmse_type = 1, w)
// on four 16-value groups at once, shared by the Q6_K encoder (nmax 32, w x²
// or the importance weights) and the Q3_K encoders (the reference's groups
// are loaded here too; with importance weights, nmax 4 for the sub-blocks and
// 32 for the scales). aprkit's TypeScript port: makeQxQuants in
// ../../_make_quants.ts.
//
// C sums each group sequentially in f32, so lanes cannot split a group: lane
// k of XT[i] is value i of group k, and each lane runs C's sequence, its
// branches as lane masks. The winner's levels are recomputed from its iscale
// (winnerLevels) where the caller needs them.

import { nearestInt4, select4, transpose4 } from "./common";

const GROUP_MAX_EPS: f32 = <f32>1e-15;

// One block: the loops read all three at one pointer (fewer address computations).
export const XT: usize = memory.data(3 * 16 * 16, 16); // transposed values
export const WX: usize = XT + 256; // w · x
export const W: usize = XT + 512; // transposed weights
// Per group (16 of a super-block, and slots 16..19 for a second search),
// written by searchQx at the offset it is given.
export const SCALES: usize = memory.data(20 * 4, 16); // the scale C returns
const WIN_ISCALE: usize = memory.data(20 * 4, 16); // the winning candidate's iscale
const SMALL: usize = memory.data(20 * 4, 16); // all-ones where amax < GROUP_MAX_EPS
// nearest_int's constants (see searchQx).
const CONSTS: usize = memory.data<i32>([
  0x4b400000, 0x4b400000, 0x4b400000, 0x4b400000, // 1.5·2^23 (nearest_int's magic)
  0x7fffff, 0x7fffff, 0x7fffff, 0x7fffff,
  0x400000, 0x400000, 0x400000, 0x400000,
], 16);
const LIMITS: usize = memory.data(4 * 16, 16); // -nmax, nmax - 1 as i32 and f32
export const MAX: usize = memory.data(16, 16); // each group's max (loadGroups)
let FINITE = true; // every value loadGroups loaded is finite
const STATE: usize = memory.data(3 * 16, 16); // the search's scale, best, winning iscale
const SUMS: usize = memory.data(2 * 16, 16); // one candidate's sums (exactSums)

/**
 * Transpose the four 16-value groups at `base` (64 bytes apart) into XT and
 * their weights into W (those at `w`, laid out as the values; x² when `w` is
 * 0), with W·x in WX, and each group's value largest in magnitude (the first
 * of equals, C's `max`) in MAX.
 */
export function loadGroups(base: usize, w: usize): void {
  let max = f32x4.splat(0);
  let amax = max;
  let bad = max;
  for (let i0 = 0; i0 < 16; i0 += 4) {
    // Values i0..i0+3 of the four groups, transposed by shuffles straight
    // into rows i0..i0+3 of XT (and W).
    const p = base + <usize>i0 * 4;
    transpose4(p, p + 64, p + 128, p + 192, XT + <usize>i0 * 16);
    if (w != 0) {
      const q = w + <usize>i0 * 4;
      transpose4(q, q + 64, q + 128, q + 192, W + <usize>i0 * 16);
    }
    for (let k = 0; k < 4; k++) {
      const i = i0 + k;
      const v = v128.load(XT + <usize>i * 16);
      const ax = f32x4.abs(v);
      const more = f32x4.gt(ax, amax);
      amax = select4(ax, amax, more);
      max = select4(v, max, more);
      // v - v is NaN for an infinity or a NaN, 0 else.
      bad = v128.or(bad, f32x4.sub(v, v));
      let wv: v128;
      if (w != 0) {
        wv = v128.load(W + <usize>i * 16);
      } else {
        wv = f32x4.mul(v, v);
        v128.store(W + <usize>i * 16, wv);
      }
      v128.store(WX + <usize>i * 16, f32x4.mul(wv, v));
    }
  }
  v128.store(MAX, max);
  FINITE = !v128.any_true(bad);
}



/** Lanes where the group counts as all zero (amax < GROUP_MAX_EPS). */
@inline export function tinyLanes(max: v128): v128 {
  return f32x4.lt(f32x4.abs(max), f32x4.splat(GROUP_MAX_EPS));
}

/** The candidate `k` of C's `is` = -9, …, -1, 1, …, 9: iscale = -(nmax + 0.1·is) / max. */
@inline function candidate(nm: f32, k: i32, max: v128): v128 {
  const is = k < 9 ? k - 9 : k - 8;
  return f32x4.div(f32x4.splat(-(nm + <f32>0.1 * <f32>is)), max);
}

/**
 * One candidate's (Σ w·x·l, Σ w·l·l) to SUMS, l = clamp(nearest_int(iscale·x),
 * lo, hi) by nearest_int's bit trick (`magic`, `mant`, `bias`), in C's order.
 */
@inline function exactSums(
  iscale: v128,
  magic: v128,
  mant: v128,
  bias: v128,
  lo: v128,
  hi: v128,
): void {
  let sumlx = f32x4.splat(0);
  let suml2 = sumlx;
  for (let i = 0; i < 16; i++) {
    const t = f32x4.add(f32x4.mul(iscale, v128.load(XT + <usize>i * 16)), magic);
    const n = i32x4.sub(v128.and(t, mant), bias);
    const l = f32x4.convert_i32x4_s(i32x4.min_s(i32x4.max_s(n, lo), hi));
    sumlx = f32x4.add(sumlx, f32x4.mul(v128.load(WX + <usize>i * 16), l));
    suml2 = f32x4.add(suml2, f32x4.mul(f32x4.mul(v128.load(W + <usize>i * 16), l), l));
  }
  v128.store(SUMS, sumlx);
  v128.store(SUMS + 16, suml2);
}

/** C's `if (suml2 > 0 && sumlx*sumlx > best*suml2)` per lane, on the search's state. */
@inline function consider(sumlx: v128, suml2: v128, iscale: v128): void {
  const zero = f32x4.splat(0);
  const best = v128.load(STATE + 16);
  const take = v128.and(
    f32x4.gt(suml2, zero),
    f32x4.gt(f32x4.mul(sumlx, sumlx), f32x4.mul(best, suml2)),
  );
  const s = f32x4.div(sumlx, suml2);
  v128.store(STATE, select4(s, v128.load(STATE), take));
  v128.store(STATE + 16, select4(f32x4.mul(s, sumlx), best, take));
  v128.store(STATE + 32, select4(iscale, v128.load(STATE + 32), take));
}

/**
 * Level of `iscale·v`, clamped to lo..hi where asked. f32x4.nearest rounds
 * half to even, as nearest_int's 1.5·2^23 does below 2^22 (a -0 for +0 does
 * not change the sums).
 */
@inline function levelF(
  iscale: v128,
  v: v128,
  loF: v128,
  hiF: v128,
  lo: bool,
  hi: bool,
): v128 {
  let l = f32x4.nearest(f32x4.mul(iscale, v));
  if (lo) l = f32x4.pmax(l, loF);
  if (hi) l = f32x4.pmin(l, hiF);
  return l;
}

/**
 * Candidates k, k + 1, k + 2 (every value finite), three independent addition
 * chains, each considered in C's order; `lo`, `hi`: which clamps can bind.
 */
@inline function tripleQx(
  nm: f32,
  k: i32,
  max: v128,
  loF: v128,
  hiF: v128,
  lo: bool,
  hi: bool,
): void {
  const zero = f32x4.splat(0);
  const iscaleA = candidate(nm, k, max);
  const iscaleB = candidate(nm, k + 1, max);
  const iscaleC = candidate(nm, k + 2, max);
  let slxA = zero;
  let sl2A = zero;
  let slxB = zero;
  let sl2B = zero;
  let slxC = zero;
  let sl2C = zero;
  for (let p = XT; p < XT + 256; p += 16) {
    const v = v128.load(p);
    const wx = v128.load(p, 256);
    const wv = v128.load(p, 512);
    const lA = levelF(iscaleA, v, loF, hiF, lo, hi);
    const lB = levelF(iscaleB, v, loF, hiF, lo, hi);
    const lC = levelF(iscaleC, v, loF, hiF, lo, hi);
    slxA = f32x4.add(slxA, f32x4.mul(wx, lA));
    slxB = f32x4.add(slxB, f32x4.mul(wx, lB));
    slxC = f32x4.add(slxC, f32x4.mul(wx, lC));
    sl2A = f32x4.add(sl2A, f32x4.mul(f32x4.mul(wv, lA), lA));
    sl2B = f32x4.add(sl2B, f32x4.mul(f32x4.mul(wv, lB), lB));
    sl2C = f32x4.add(sl2C, f32x4.mul(f32x4.mul(wv, lC), lC));
  }
  consider(slxA, sl2A, iscaleA);
  consider(slxB, sl2B, iscaleB);
  consider(slxC, sl2C, iscaleC);
}

/**
 * make_qx_quants(16, nmax, x, L, 1, w) on the groups loadGroups loaded: each
 * lane's scale (0 where the group is all zero) to SCALES + `o`, and what
 * winnerLevels needs to recompute its levels.
 */
export function searchQx(nmax: i32, o: usize): void {
  const zero = f32x4.splat(0);
  const max = v128.load(MAX);
  // Loop constants, read from memory into locals: AssemblyScript writes a
  // v128.const at each use (binaryen folds splats of constants into one),
  // which V8 rebuilds in every iteration.
  const nm = <f32>nmax;
  v128.store(LIMITS, i32x4.splat(-nmax));
  v128.store(LIMITS + 16, i32x4.splat(nmax - 1));
  v128.store(LIMITS + 32, f32x4.splat(-nm));
  v128.store(LIMITS + 48, f32x4.splat(nm - <f32>1.0));
  const magic = v128.load(CONSTS);
  const mant = v128.load(CONSTS + 16);
  const bias = v128.load(CONSTS + 32);
  const loI = v128.load(LIMITS);
  const hiI = v128.load(LIMITS + 16);
  const loF = v128.load(LIMITS + 32);
  const hiF = v128.load(LIMITS + 48);
  // Where every value is finite, f32 rounding (levelF) and f32 clamps give
  // nearest_int's levels (|iscale·x| <= nmax + 1 in a group not all zero;
  // the others' sums are not used); else nearest_int's bit trick.
  const finite = FINITE;
  // C's first pass (iscale = -nmax / max).
  const iscale = f32x4.div(loF, max);
  if (finite) {
    let slx = zero;
    let sl2 = zero;
    for (let p = XT; p < XT + 256; p += 16) {
      // |iscale·x| <= nmax(1 + 2^-24)^2: no level below -nmax.
      const l = levelF(iscale, v128.load(p), loF, hiF, false, true);
      slx = f32x4.add(slx, f32x4.mul(v128.load(p, 256), l));
      sl2 = f32x4.add(sl2, f32x4.mul(f32x4.mul(v128.load(p, 512), l), l));
    }
    v128.store(SUMS, slx);
    v128.store(SUMS + 16, sl2);
  } else {
    exactSums(iscale, magic, mant, bias, loI, hiI);
  }
  const sumlx = v128.load(SUMS);
  const suml2 = v128.load(SUMS + 16);
  // C: suml2 ? sumlx/suml2 : 0 (NaN counts as true).
  const scale = select4(f32x4.div(sumlx, suml2), zero, f32x4.ne(suml2, zero));
  v128.store(STATE, scale);
  v128.store(STATE + 16, f32x4.mul(scale, sumlx));
  v128.store(STATE + 32, iscale);
  // Then the 18 candidates, three at a time where every value is finite:
  // three independent addition chains, taken in C's order.
  if (finite) {
    // Which clamps can bind: |iscale·x| <= (nmax + 0.1·is)(1 + 2^-23)^2, so
    // for is <= -6 (k < 4) every level is within -nmax + 1..nmax - 1 and for
    // is <= 4 (k < 13: nmax + 0.4 < nmax + 0.5) none is below -nmax; a clamp
    // that cannot bind is left out (the same levels, an operation fewer per
    // value).
    tripleQx(nm, 0, max, loF, hiF, false, false);
    tripleQx(nm, 3, max, loF, hiF, false, true);
    tripleQx(nm, 6, max, loF, hiF, false, true);
    tripleQx(nm, 9, max, loF, hiF, false, true);
    tripleQx(nm, 12, max, loF, hiF, true, true);
    tripleQx(nm, 15, max, loF, hiF, true, true);
  } else {
    // A value is not finite: nearest_int's bit trick, one candidate at a time.
    for (let k = 0; k < 18; k++) {
      const iscaleK = candidate(nm, k, max);
      exactSums(iscaleK, magic, mant, bias, loI, hiI);
      consider(v128.load(SUMS), v128.load(SUMS + 16), iscaleK);
    }
  }
  const small = tinyLanes(max);
  v128.store(SCALES + o, select4(zero, v128.load(STATE), small));
  v128.store(WIN_ISCALE + o, v128.load(STATE + 32));
  v128.store(SMALL + o, small);
}

/**
 * The levels (l + nmax) make_qx_quants left in L for group `j` of the 16
 * values at `x`: its winner's, or 0 for an all-zero group.
 */
export function winnerLevels(x: usize, j: i32, nmax: i32, out: usize): void {
  if (load<i32>(SMALL + <usize>j * 4) != 0) {
    memory.fill(out, 0, 16);
    return;
  }
  const wi = f32x4.splat(load<f32>(WIN_ISCALE + <usize>j * 4));
  for (let i = 0; i < 16; i += 4) {
    const n = nearestInt4(f32x4.mul(wi, v128.load(x + <usize>i * 4)));
    const l = i32x4.add(
      i32x4.min_s(i32x4.max_s(n, i32x4.splat(-nmax)), i32x4.splat(nmax - 1)),
      i32x4.splat(nmax),
    );
    store<u8>(out + <usize>i, <u8>i32x4.extract_lane(l, 0));
    store<u8>(out + <usize>i + 1, <u8>i32x4.extract_lane(l, 1));
    store<u8>(out + <usize>i + 2, <u8>i32x4.extract_lane(l, 2));
    store<u8>(out + <usize>i + 3, <u8>i32x4.extract_lane(l, 3));
  }
}
