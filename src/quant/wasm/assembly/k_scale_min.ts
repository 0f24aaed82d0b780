// AssemblyScript: the part of the Q4_K, Q5_K and Q2_K encoders they share,
// byte-identical with llama.cpp's quantize_row_q{4,5,2}_K_ref (and aprkit's
// TypeScript ports in ../../_k_scale_min_block.ts and ../../q2_k.ts):
// make_qkx2_quants on each sub-block of a super-block (eight of 32 values for
// Q4_K/Q5_K, sixteen of 16 for Q2_K); for Q4_K/Q5_K also writing f16 d, f16
// dmin and the 12 bytes of 6-bit scales and mins, and each value's level to `L`;
// with importance weights (quantize_row_q{4,5}_K_impl) the weighted fit.
//
// C sums each sub-block sequentially in f32, so lanes cannot split a
// sub-block. Instead the super-block is transposed: lane k of XT[i] is value i
// of sub-block 4g + k, and each lane runs make_qkx2_quants' scalar sequence
// for its own sub-block. C's branches become lane masks; the winning
// candidate's levels are recomputed at the end from its (iscale, min).

import {
  clamp4, f16ToF32, f32ToF16, nearestInt, nearestInt4, select4, superBlockWeights, transpose4,
} from "./common";
import { makeQpQuants } from "./qp_quants";

// Scratch (static memory, 16-byte aligned).
const XT: usize = memory.data(2 * 32 * 16, 16); // transposed values, two groups
const WT: usize = memory.data(2 * 32 * 16, 16); // transposed weights
const LF: usize = memory.data(2 * 32 * 16, 16); // current candidate's levels (f32 lanes)
// Per sub-block (up to 16), written by searchPair.
export const SCALES: usize = memory.data(16 * 4, 16);
export const MINS: usize = memory.data(16 * 4, 16); // the positive min C returns (-min)
const WIN_ISCALE: usize = memory.data(16 * 4, 16); // winning candidate's iscale and min,
const WIN_MIN: usize = memory.data(16 * 4, 16); // to recompute its levels
const FLAT: usize = memory.data(16 * 4, 16); // all-ones where max == min (levels 0)
export const L: usize = memory.data(256, 16); // final levels of the super-block
// nearest_int's 1.5·2^23, mantissa mask and bias (see searchPair), then the top level.
const CONSTS: usize = memory.data<i32>([
  0x4b400000, 0x4b400000, 0x4b400000, 0x4b400000,
  0x7fffff, 0x7fffff, 0x7fffff, 0x7fffff,
  0x400000, 0x400000, 0x400000, 0x400000,
  0, 0, 0, 0,
], 16);

/** Lanes |d| (`mad`, Q2_K's reference) or d². */
@inline function errorOf(d: v128, mad: bool): v128 {
  return mad ? f32x4.abs(d) : f32x4.mul(d, d);
}

// Per-group search state of searchPair, 16 bytes each, for slots 0 and 1.
const ST: usize = memory.data(2 * 16 * 16, 16);
const S_MIN: usize = 0;
const S_MAX: usize = 16;
const S_SW: usize = 32;
const S_SX: usize = 48;
const S_SCALE: usize = 64;
const S_BEST: usize = 80;
const S_WISC: usize = 96;
const S_WMIN: usize = 112;
const S_FLAT: usize = 128;
const S_FLATMIN: usize = 144;
const S_ISCALE: usize = 160;
const S_DPOS: usize = 176;
const S_TSCALE: usize = 192;
const S_TMIN: usize = 208;
const S_LOW: usize = 224; // the lowest value (min before C clamps it to <= 0)

/**
 * Load sub-blocks 4g..4g+3 of n values into slot `s` (XT, WT at + s·512)
 * and run make_qkx2_quants up to its candidates: weights, min and max,
 * Σw, Σw·x, and the first fit's error.
 */
@inline function startGroup(
  x: usize,
  g: i32,
  s: i32,
  n: i32,
  nmax: i32,
  mad: bool,
  w: usize,
): void {
  const xt = XT + <usize>s * 512;
  const wt = WT + <usize>s * 512;
  const st = ST + <usize>s * 256;
  const stride = <usize>n * 4;
  const base = x + <usize>(g * 4) * stride;
  let sumX2 = f32x4.splat(0);
  for (let i = 0; i < n; i += 4) {
    const p = base + <usize>i * 4;
    transpose4(p, p + stride, p + 2 * stride, p + 3 * stride, xt + <usize>i * 16);
  }
  for (let i = 0; i < n; i++) {
    const v = v128.load(xt + <usize>i * 16);
    sumX2 = f32x4.add(sumX2, f32x4.mul(v, v));
  }
  if (w != 0) {
    const wb = w + <usize>(g * 4) * stride;
    for (let i = 0; i < n; i += 4) {
      const p = wb + <usize>i * 4;
      transpose4(p, p + stride, p + 2 * stride, p + 3 * stride, wt + <usize>i * 16);
    }
  } else if (mad) {
    for (let i = 0; i < n; i++) {
      v128.store(wt + <usize>i * 16, f32x4.abs(v128.load(xt + <usize>i * 16)));
    }
  } else {
    const avX = f32x4.sqrt(f32x4.div(sumX2, f32x4.splat(<f32>n)));
    for (let i = 0; i < n; i++) {
      v128.store(wt + <usize>i * 16, f32x4.add(avX, f32x4.abs(v128.load(xt + <usize>i * 16))));
    }
  }
  let min = v128.load(xt);
  let max = min;
  let sW = v128.load(wt);
  let sX = f32x4.mul(sW, min);
  for (let i = 1; i < n; i++) {
    const v = v128.load(xt + <usize>i * 16);
    const wv = v128.load(wt + <usize>i * 16);
    min = select4(v, min, f32x4.lt(v, min));
    max = select4(v, max, f32x4.gt(v, max));
    sW = f32x4.add(sW, wv);
    sX = f32x4.add(sX, f32x4.mul(wv, v));
  }
  const zero = f32x4.splat(0);
  v128.store(st + S_LOW, min);
  min = select4(zero, min, f32x4.gt(min, zero));
  const iscale = f32x4.div(f32x4.splat(<f32>nmax), f32x4.sub(max, min));
  const scale = f32x4.div(f32x4.splat(<f32>1.0), iscale);
  let best = zero;
  for (let i = 0; i < n; i++) {
    const v = v128.load(xt + <usize>i * 16);
    const l = f32x4.convert_i32x4_s(
      clamp4(nearestInt4(f32x4.mul(iscale, f32x4.sub(v, min))), 0, nmax),
    );
    const diff = errorOf(f32x4.sub(f32x4.add(f32x4.mul(scale, l), min), v), mad);
    best = f32x4.add(best, f32x4.mul(v128.load(wt + <usize>i * 16), diff));
  }
  v128.store(st + S_MIN, min);
  v128.store(st + S_MAX, max);
  v128.store(st + S_SW, sW);
  v128.store(st + S_SX, sX);
  v128.store(st + S_SCALE, scale);
  v128.store(st + S_BEST, best);
  v128.store(st + S_WISC, iscale);
  v128.store(st + S_WMIN, min);
  v128.store(st + S_FLAT, f32x4.eq(max, min));
  v128.store(st + S_FLATMIN, min);
}

/** One candidate's fit (C's D, this_scale, this_min) from slot `s`'s sums. */
@inline function fitCandidate(s: i32, sL: v128, sL2: v128, sXL: v128): void {
  const st = ST + <usize>s * 256;
  const zero = f32x4.splat(0);
  const sW = v128.load(st + S_SW);
  const sX = v128.load(st + S_SX);
  const D = f32x4.sub(f32x4.mul(sW, sL2), f32x4.mul(sL, sL));
  let thisScale = f32x4.div(f32x4.sub(f32x4.mul(sW, sXL), f32x4.mul(sX, sL)), D);
  let thisMin = f32x4.div(f32x4.sub(f32x4.mul(sL2, sX), f32x4.mul(sL, sXL)), D);
  const minPos = f32x4.gt(thisMin, zero);
  thisMin = select4(zero, thisMin, minPos);
  thisScale = select4(f32x4.div(sXL, sL2), thisScale, minPos);
  v128.store(st + S_DPOS, f32x4.gt(D, zero));
  v128.store(st + S_TSCALE, thisScale);
  v128.store(st + S_TMIN, thisMin);
}

/** C's `if (D > 0 && cur_error < best_error)` per lane of slot `s`. */
@inline function takeCandidate(s: i32, cur: v128): void {
  const st = ST + <usize>s * 256;
  const min = v128.load(st + S_MIN);
  const best = v128.load(st + S_BEST);
  const win = v128.and(v128.load(st + S_DPOS), f32x4.lt(cur, best));
  v128.store(st + S_BEST, select4(cur, best, win));
  v128.store(st + S_SCALE, select4(v128.load(st + S_TSCALE), v128.load(st + S_SCALE), win));
  v128.store(st + S_WISC, select4(v128.load(st + S_ISCALE), v128.load(st + S_WISC), win));
  v128.store(st + S_WMIN, select4(min, v128.load(st + S_WMIN), win));
  v128.store(st + S_MIN, select4(v128.load(st + S_TMIN), min, win));
}

/** Slot `s`'s results as group g's: scale, min, and what winnerLevels needs. */
@inline function finishGroup(g: i32, s: i32): void {
  const st = ST + <usize>s * 256;
  const zero = f32x4.splat(0);
  const flat = v128.load(st + S_FLAT);
  const o = <usize>g * 16;
  v128.store(SCALES + o, select4(zero, v128.load(st + S_SCALE), flat));
  v128.store(MINS + o, f32x4.neg(select4(v128.load(st + S_FLATMIN), v128.load(st + S_MIN), flat)));
  v128.store(WIN_ISCALE + o, v128.load(st + S_WISC));
  v128.store(WIN_MIN + o, v128.load(st + S_WMIN));
  v128.store(FLAT + o, flat);
}

/**
 * make_qkx2_quants(n, nmax, x, w, L, &min, Laux, rmin, rdelta, nstep, mad) on
 * sub-blocks 4g..4g+7 of n values, as two groups of four lanes (lane k of
 * group g: sub-block 4g + k). The weights are those at `w` (n per sub-block,
 * as x; weighted Q2_K), else Q4_K/Q5_K's `sqrt(mean x²) + |x|` (n = 32) or,
 * with `mad`, Q2_K's `|x|`.
 *
 * Each candidate's sums are three addition chains of n steps per group, and
 * the next candidate waits on them (it starts from the min they chose): one
 * group at a time leaves the core waiting on those chains, so the two
 * groups' chains run side by side, each in C's order.
 */
@inline export function searchPair(
  x: usize,
  g: i32,
  n: i32,
  nmax: i32,
  rmin: f32,
  rdelta: f32,
  nstep: i32,
  mad: bool,
  w: usize = 0,
): void {
  startGroup(x, g, 0, n, nmax, mad, w);
  startGroup(x, g + 1, 1, n, nmax, mad, w);
  const zero = f32x4.splat(0);
  const xtB = XT + 512;
  const wtB = WT + 512;
  const lfB = LF + 512;
  const stB = ST + 256;
  // nearest_int's constants and the top level, read from memory into locals:
  // as v128.const at each use, V8 rebuilds them in every iteration.
  store<i32>(CONSTS + 48, nmax);
  const magic = v128.load(CONSTS);
  const mant = v128.load(CONSTS + 16);
  const bias = v128.load(CONSTS + 32);
  const top = i32x4.splat(load<i32>(CONSTS + 48));
  // Where every value is finite, a candidate whose |iscale·(x − min)| stays
  // below 2^22 rounds in f32: f32x4.nearest rounds half to even as
  // nearest_int's 1.5·2^23 does there, and pmax(0, ·) makes a -0 (or a NaN)
  // the bit trick's +0 (three operations fewer per value).
  const topF = f32x4.convert_i32x4_s(top);
  const big = f32x4.splat(<f32>4194304.0); // 2^22
  let bad = zero;
  for (let i = 0; i < n; i++) {
    bad = v128.or(bad, f32x4.ne(f32x4.sub(v128.load(XT + <usize>i * 16), v128.load(XT + <usize>i * 16)), zero));
    bad = v128.or(bad, f32x4.ne(f32x4.sub(v128.load(xtB + <usize>i * 16), v128.load(xtB + <usize>i * 16)), zero));
  }
  const finite = !v128.any_true(bad);
  for (let is = 0; is <= nstep; is++) {
    // (rmin + rdelta*is + nmax) / (max - min), with C's current min.
    const c: f32 = (rmin + rdelta * <f32>is) + <f32>nmax;
    const minA = v128.load(ST + S_MIN);
    const minB = v128.load(stB + S_MIN);
    const iscaleA = f32x4.div(f32x4.splat(c), f32x4.sub(v128.load(ST + S_MAX), minA));
    const iscaleB = f32x4.div(f32x4.splat(c), f32x4.sub(v128.load(stB + S_MAX), minB));
    v128.store(ST + S_ISCALE, iscaleA);
    v128.store(stB + S_ISCALE, iscaleB);
    let sLA = zero;
    let sL2A = zero;
    let sXLA = zero;
    let sLB = zero;
    let sL2B = zero;
    let sXLB = zero;
    // Rounded differences and products are monotonic: each lane's
    // iscale·(x − min) lies between those of its lowest value and of max
    // (a NaN fails the test).
    const small = v128.and(
      v128.and(
        f32x4.lt(f32x4.abs(f32x4.mul(iscaleA, f32x4.sub(v128.load(ST + S_LOW), minA))), big),
        f32x4.lt(f32x4.abs(f32x4.mul(iscaleA, f32x4.sub(v128.load(ST + S_MAX), minA))), big),
      ),
      v128.and(
        f32x4.lt(f32x4.abs(f32x4.mul(iscaleB, f32x4.sub(v128.load(stB + S_LOW), minB))), big),
        f32x4.lt(f32x4.abs(f32x4.mul(iscaleB, f32x4.sub(v128.load(stB + S_MAX), minB))), big),
      ),
    );
    // The loop is written twice, for the two roundings: one loop choosing
    // by a flag (an inlined helper with the flag constant) measured 15–20%
    // slower.
    if (finite && i32x4.all_true(small)) {
      for (let i = 0; i < n; i++) {
        const o = <usize>i * 16;
        const vA = v128.load(XT + o);
        const vB = v128.load(xtB + o);
        const lA = f32x4.pmin(
          f32x4.pmax(zero, f32x4.nearest(f32x4.mul(iscaleA, f32x4.sub(vA, minA)))),
          topF,
        );
        const lB = f32x4.pmin(
          f32x4.pmax(zero, f32x4.nearest(f32x4.mul(iscaleB, f32x4.sub(vB, minB)))),
          topF,
        );
        v128.store(LF + o, lA);
        v128.store(lfB + o, lB);
        const wlA = f32x4.mul(v128.load(WT + o), lA);
        const wlB = f32x4.mul(v128.load(wtB + o), lB);
        sLA = f32x4.add(sLA, wlA);
        sLB = f32x4.add(sLB, wlB);
        sL2A = f32x4.add(sL2A, f32x4.mul(wlA, lA));
        sL2B = f32x4.add(sL2B, f32x4.mul(wlB, lB));
        sXLA = f32x4.add(sXLA, f32x4.mul(wlA, vA));
        sXLB = f32x4.add(sXLB, f32x4.mul(wlB, vB));
      }
    } else {
      for (let i = 0; i < n; i++) {
        const o = <usize>i * 16;
        const vA = v128.load(XT + o);
        const vB = v128.load(xtB + o);
        const tA = f32x4.add(f32x4.mul(iscaleA, f32x4.sub(vA, minA)), magic);
        const tB = f32x4.add(f32x4.mul(iscaleB, f32x4.sub(vB, minB)), magic);
        const lA = f32x4.convert_i32x4_s(
          i32x4.min_s(i32x4.max_s(i32x4.sub(v128.and(tA, mant), bias), zero), top),
        );
        const lB = f32x4.convert_i32x4_s(
          i32x4.min_s(i32x4.max_s(i32x4.sub(v128.and(tB, mant), bias), zero), top),
        );
        v128.store(LF + o, lA);
        v128.store(lfB + o, lB);
        const wlA = f32x4.mul(v128.load(WT + o), lA);
        const wlB = f32x4.mul(v128.load(wtB + o), lB);
        sLA = f32x4.add(sLA, wlA);
        sLB = f32x4.add(sLB, wlB);
        sL2A = f32x4.add(sL2A, f32x4.mul(wlA, lA));
        sL2B = f32x4.add(sL2B, f32x4.mul(wlB, lB));
        sXLA = f32x4.add(sXLA, f32x4.mul(wlA, vA));
        sXLB = f32x4.add(sXLB, f32x4.mul(wlB, vB));
      }
    }
    fitCandidate(0, sLA, sL2A, sXLA);
    fitCandidate(1, sLB, sL2B, sXLB);
    // C skips a candidate with D <= 0: its lanes cannot win below.
    if (!v128.any_true(v128.or(v128.load(ST + S_DPOS), v128.load(stB + S_DPOS)))) continue;
    const scaleA = v128.load(ST + S_TSCALE);
    const scaleB = v128.load(stB + S_TSCALE);
    const tminA = v128.load(ST + S_TMIN);
    const tminB = v128.load(stB + S_TMIN);
    let curA = zero;
    let curB = zero;
    for (let i = 0; i < n; i++) {
      const o = <usize>i * 16;
      const dA = errorOf(
        f32x4.sub(f32x4.add(f32x4.mul(scaleA, v128.load(LF + o)), tminA), v128.load(XT + o)),
        mad,
      );
      const dB = errorOf(
        f32x4.sub(f32x4.add(f32x4.mul(scaleB, v128.load(lfB + o)), tminB), v128.load(xtB + o)),
        mad,
      );
      curA = f32x4.add(curA, f32x4.mul(v128.load(WT + o), dA));
      curB = f32x4.add(curB, f32x4.mul(v128.load(wtB + o), dB));
    }
    takeCandidate(0, curA);
    takeCandidate(1, curB);
  }
  finishGroup(g, 0);
  finishGroup(g + 1, 1);
}

/**
 * C keeps the search's levels for sub-block `j` (n values at `xs`) when its
 * stored scale is 0: recompute the winning candidate's into `out`.
 */
@inline export function winnerLevels(xs: usize, j: i32, n: i32, nmax: i32, out: usize): void {
  const flat = load<i32>(FLAT + <usize>j * 4);
  const wi = load<f32>(WIN_ISCALE + <usize>j * 4);
  const wm = load<f32>(WIN_MIN + <usize>j * 4);
  for (let i = 0; i < n; i++) {
    let l = nearestInt(wi * (load<f32>(xs + <usize>i * 4) - wm));
    l = l < 0 ? 0 : l > nmax ? nmax : l;
    store<u8>(out + i, flat != 0 ? 0 : <u8>l);
  }
}

/**
 * Fit the super-block of f32 at `x`: bytes 0..15 of the block at `y`, levels
 * 0..nmax to `L`. The search is make_qkx2_quants(32, nmax, …, rmin, rdelta, nstep).
 */
@inline export function fitScaleMinSuperBlock(
  x: usize,
  y: usize,
  nmax: i32,
  rmin: f32,
  rdelta: f32,
  nstep: i32,
): void {
  searchPair(x, 0, 32, nmax, rmin, rdelta, nstep, false);
  let maxScale: f32 = 0;
  let maxMin: f32 = 0;
  for (let j = 0; j < 8; j++) {
    const s = load<f32>(SCALES + <usize>j * 4);
    const m = load<f32>(MINS + <usize>j * 4);
    if (s > maxScale) maxScale = s;
    if (m > maxMin) maxMin = m;
  }
  const invScale: f32 = maxScale > 0 ? <f32>63.0 / maxScale : 0;
  const invMin: f32 = maxMin > 0 ? <f32>63.0 / maxMin : 0;
  for (let j = 0; j < 8; j++) {
    // uint8_t truncation, then MIN(63, ·), as C does.
    let ls = nearestInt(invScale * load<f32>(SCALES + <usize>j * 4)) & 255;
    let lm = nearestInt(invMin * load<f32>(MINS + <usize>j * 4)) & 255;
    store<u8>(LS + <usize>j, <u8>(ls > 63 ? 63 : ls));
    store<u8>(LM + <usize>j, <u8>(lm > 63 ? 63 : lm));
  }
  packAndLevels(x, y, nmax, f32ToF16(maxScale / <f32>63.0), f32ToF16(maxMin / <f32>63.0));
}

// The weighted fit's weights (256) and each sub-block's total, and the 6-bit
// scales and mins (both fits) before they are packed.
const WEIGHTS: usize = memory.data(256 * 4, 16);
const SW: usize = memory.data(8 * 4, 16);
const LS: usize = memory.data(8, 16);
const LM: usize = memory.data(8, 16);

/**
 * quantize_row_q{4,5}_K_impl's fit of the super-block at `x` with the
 * importance weights at `qw` (its 256 columns): weights `qw·sqrt(σ² + x²)`
 * (σ² twice the mean square), make_qkx3_quants(32, nmax, …, -0.9, 0.05, 36)
 * per sub-block (the same search as make_qkx2_quants given weights), then
 * the scales and mins by make_qp_quants weighted by each sub-block's total.
 */
@inline export function fitScaleMinWeighted(x: usize, y: usize, nmax: i32, qw: usize): void {
  superBlockWeights(x, qw, WEIGHTS, SW, 32, true);
  searchPair(x, 0, 32, nmax, <f32>-0.9, <f32>0.05, 36, false, WEIGHTS);
  const dBlock = makeQpQuants(8, 63, SCALES, SW, LS);
  const mBlock = makeQpQuants(8, 63, MINS, SW, LM);
  for (let j = 0; j < 8; j++) {
    if (load<u8>(LS + <usize>j) > 63) store<u8>(LS + <usize>j, 63);
    if (load<u8>(LM + <usize>j) > 63) store<u8>(LM + <usize>j, 63);
  }
  packAndLevels(x, y, nmax, f32ToF16(dBlock), f32ToF16(mBlock));
}

/**
 * Both fits: f16 d and dmin, the 6-bit scales and mins in `LS`/`LM` packed
 * into bytes 4..15, and each value's level from them to `L`.
 */
@inline function packAndLevels(x: usize, y: usize, nmax: i32, dBits: i32, mBits: i32): void {
  store<u16>(y, <u16>dBits);
  store<u16>(y + 2, <u16>mBits);
  const dF = f16ToF32(dBits);
  const mF = f16ToF32(mBits);
  const sp = y + 4;
  for (let j = 0; j < 8; j++) {
    const ls = <i32>load<u8>(LS + <usize>j);
    const lm = <i32>load<u8>(LM + <usize>j);
    if (j < 4) {
      store<u8>(sp + j, <u8>ls);
      store<u8>(sp + j + 4, <u8>lm);
    } else {
      store<u8>(sp + j + 4, <u8>((ls & 15) | ((lm & 15) << 4)));
      store<u8>(sp + j - 4, load<u8>(sp + j - 4) | <u8>((ls >>> 4) << 6));
      store<u8>(sp + j, load<u8>(sp + j) | <u8>((lm >>> 4) << 6));
    }
    const d = dF * <f32>ls;
    const xs = x + <usize>j * 128;
    const ls8 = L + <usize>j * 32;
    if (d == 0) {
      winnerLevels(xs, j, 32, nmax, ls8);
      continue;
    }
    const dm = f32x4.splat(mF * <f32>lm);
    const dv = f32x4.splat(d);
    for (let i = 0; i < 32; i += 4) {
      const v = v128.load(xs + <usize>i * 4);
      const l = clamp4(nearestInt4(f32x4.div(f32x4.add(v, dm), dv)), 0, nmax);
      store<u8>(ls8 + i, <u8>i32x4.extract_lane(l, 0));
      store<u8>(ls8 + i + 1, <u8>i32x4.extract_lane(l, 1));
      store<u8>(ls8 + i + 2, <u8>i32x4.extract_lane(l, 2));
      store<u8>(ls8 + i + 3, <u8>i32x4.extract_lane(l, 3));
    }
  }
}
