// AssemblyScript: the IQ1_S and IQ1_M encoders, byte-identical with llama.cpp's
// quantize_iq1_s / quantize_iq1_m and aprkit's TypeScript port in
// ../../iq1_encode.ts (the comments there say why each step is as it is).
// Scalar f32 arithmetic in C's order. Importance weights: `qw` is 0 without
// them (IQ1_M only), else one per column of rows of `cols` values.

import { f32ToF16 } from "./common";
import { initGrid, levOf, mapOf, neighbours } from "./iq_grids";
import { scaleCode, sumSquares } from "./iq_grid_encode";

const FLT_MAX: f32 = <f32>3.4028234663852886e38;
const G = 5; // the IQ1 grid in iq_grids.ts

// x_p = (-1, 0, 1) + 0.125, x_m = (-1, 0, 1) - 0.125.
const XP: usize = memory.data<f32>([-0.875, 0.125, 1.125]);
const XM: usize = memory.data<f32>([-1.125, -0.125, 0.875]);

const WEIGHT: usize = memory.data(32 * 4, 16);
const L: usize = memory.data(32, 16);
const IDX: usize = memory.data(32 * 4, 16);
// Prefix sums, padded to 36 for four-lane loads past the end.
const SUMX: usize = memory.data(36 * 4, 16);
const SUMW: usize = memory.data(36 * 4, 16);
const INDEX: usize = memory.data(4 * 4, 16);
const SCALES: usize = memory.data(16 * 4, 16);
const SHIFTS: usize = memory.data(16 * 4, 16);
// Per-half prefix sums (17 each), padded for four-lane loads past the end.
const PX: usize = memory.data(2 * 17 * 4 + 16, 16);
const PW: usize = memory.data(2 * 17 * 4 + 16, 16);

@inline function xx(p: usize, l: i32): f32 {
  return load<f32>(p + <usize>l * 4);
}

function weights(x: usize, first: i32, n: i32, sigma2: f32, qw: usize, cols: i32): void {
  for (let i = 0; i < n; i++) {
    const v = load<f32>(x + <usize>i * 4);
    const w = qw != 0
      ? load<f32>(qw + <usize>((first + i) % cols) * 4) * sqrt<f32>(sigma2 + v * v)
      : v * v;
    store<f32>(WEIGHT + <usize>i * 4, w);
  }
}

function absMax(x: usize, n: i32): f32 {
  let m = abs<f32>(load<f32>(x));
  for (let i = 1; i < n; i++) {
    const a = abs<f32>(load<f32>(x + <usize>i * 4));
    m = m > a ? m : a;
  }
  return m;
}

/** IDX = 0..n-1 by value, ties in index order (glibc's stable qsort). */
function sortIndices(x: usize, n: i32): void {
  for (let j = 0; j < n; j++) {
    const v = load<f32>(x + <usize>j * 4);
    let k = j;
    while (k > 0) {
      const p = load<i32>(IDX + <usize>(k - 1) * 4);
      if (!(load<f32>(x + <usize>p * 4) > v)) break;
      store<i32>(IDX + <usize>k * 4, p);
      k--;
    }
    store<i32>(IDX + <usize>k * 4, j);
  }
}

function splitLevels(n: i32, i1: i32, i2: i32): void {
  for (let j = 0; j < n; j++) {
    store<i8>(L + <usize>load<i32>(IDX + <usize>j * 4), <i8>(j < i1 ? 0 : j < i2 ? 1 : 2));
  }
}

/** iq1_find_best_neighbour2 on group k (values at x + 8k). */
function bestNeighbour(u: i32, x: usize, k: i32, scale: f32, p: usize): i32 {
  const list = neighbours(G, u);
  const n = <i32>load<u16>(list);
  const lev = levOf(G);
  let best = FLT_MAX;
  let index = -1;
  for (let j = 1; j <= n; j++) {
    const gi = <i32>load<u16>(list + <usize>j * 2);
    let d2: f32 = 0;
    for (let i = 0; i < 8; i++) {
      const diff = scale * xx(p, <i32>load<u8>(lev + <usize>(gi * 8 + i))) -
        load<f32>(x + <usize>(8 * k + i) * 4);
      d2 += load<f32>(WEIGHT + <usize>(8 * k + i) * 4) * diff * diff;
      if (d2 >= best) break; // the terms are ≥ 0: this one cannot win
    }
    if (d2 < best) {
      best = d2;
      index = gi;
    }
  }
  if (index < 0) index = <i32>load<u16>(list + 2); // non-finite distances (the TypeScript kernel throws)
  for (let i = 0; i < 8; i++) store<i8>(L + <usize>(8 * k + i), load<i8>(lev + <usize>(index * 8 + i)));
  return index;
}

/** The shifted levels of group k: IQ1_S's one shift (`m` = 1 or −1), or IQ1_M's pair (`m` = 0..3). */
@inline function levelsOf(m: i32, k: i32, iq1m: bool): usize {
  if (!iq1m) return m == 1 ? XP : XM;
  return (k == 0 ? m < 2 : m % 2 == 0) ? XP : XM;
}

/** Snap the groups of L to the grid into INDEX; refit the scale if one was off it. */
function snapGroups(x: usize, groups: i32, scale: f32, m: i32, iq1m: bool): f32 {
  const map = mapOf(G);
  let allOnGrid = true;
  for (let k = 0; k < groups; k++) {
    let u = 0;
    for (let j = 0; j < 8; j++) u |= <i32>load<i8>(L + <usize>(8 * k + j)) << (2 * j);
    let index = load<i32>(map + <usize>u * 4) - 1;
    if (index < 0) {
      allOnGrid = false;
      index = bestNeighbour(u, x, k, scale, levelsOf(m, k, iq1m));
    }
    store<i32>(INDEX + <usize>k * 4, index);
  }
  if (allOnGrid) return scale;
  const lev = levOf(G);
  let sumqx: f32 = 0;
  let sumq2: f32 = 0;
  for (let k = 0; k < groups; k++) {
    const p = levelsOf(m, k, iq1m);
    const gi = load<i32>(INDEX + <usize>k * 4);
    for (let j = 0; j < 8; j++) {
      const w = load<f32>(WEIGHT + <usize>(8 * k + j) * 4);
      const q = xx(p, <i32>load<u8>(lev + <usize>(gi * 8 + j)));
      sumqx += w * q * load<f32>(x + <usize>(8 * k + j) * 4);
      sumq2 += w * q * q;
    }
  }
  return sumqx > 0 && sumq2 > 0 ? sumqx / sumq2 : scale;
}

// IQ1_S's best split so far (C's best_score, scale, besti1, besti2, best_shift).
let bestScore: f32 = 0;
let bestScale: f32 = 0;
let besti1 = -1;
let besti2 = -1;
let bestShift = 0;

/** C's test of one split candidate, in its order. */
@inline function consider(sqx: f32, sq2: f32, i1: i32, i2: i32, shift: i32): void {
  if (sq2 > 0 && sqx * sqx > bestScore * sq2) {
    bestScale = sqx / sq2;
    bestScore = bestScale * sqx;
    besti1 = i1;
    besti2 = i2;
    bestShift = shift;
  }
}

/**
 * IQ1_S's exhaustive split search over the 32 sorted values: four i2 per lane
 * group (each lane's sums are C's expressions, elementwise), the candidates
 * then tested one by one in C's order (i2 ascending, x_p before x_m).
 */
function splitSearch32(): void {
  const sx0 = load<f32>(SUMX);
  const sw0 = load<f32>(SUMW);
  const sxn = f32x4.splat(load<f32>(SUMX + 128));
  const swn = f32x4.splat(load<f32>(SUMW + 128));
  const pp0 = xx(XP, 0);
  const pp1 = f32x4.splat(xx(XP, 1));
  const pp2 = f32x4.splat(xx(XP, 2));
  const mm0 = xx(XM, 0);
  const mm1 = f32x4.splat(xx(XM, 1));
  const mm2 = f32x4.splat(xx(XM, 2));
  for (let i1 = 0; i1 <= 32; i1++) {
    const sx1s = load<f32>(SUMX + <usize>i1 * 4);
    const sw1s = load<f32>(SUMW + <usize>i1 * 4);
    const sx1 = f32x4.splat(sx1s);
    const sw1 = f32x4.splat(sw1s);
    const ap = f32x4.splat((sx1s - sx0) * pp0);
    const am = f32x4.splat((sx1s - sx0) * mm0);
    const bp = f32x4.splat((sw1s - sw0) * pp0 * pp0);
    const bm = f32x4.splat((sw1s - sw0) * mm0 * mm0);
    for (let i2 = i1; i2 <= 32; i2 += 4) {
      const sx2 = v128.load(SUMX + <usize>i2 * 4);
      const sw2 = v128.load(SUMW + <usize>i2 * 4);
      const dx12 = f32x4.sub(sx2, sx1);
      const dxn2 = f32x4.sub(sxn, sx2);
      const dw12 = f32x4.sub(sw2, sw1);
      const dwn2 = f32x4.sub(swn, sw2);
      const qxp = f32x4.add(f32x4.add(ap, f32x4.mul(dx12, pp1)), f32x4.mul(dxn2, pp2));
      const q2p = f32x4.add(
        f32x4.add(bp, f32x4.mul(f32x4.mul(dw12, pp1), pp1)),
        f32x4.mul(f32x4.mul(dwn2, pp2), pp2),
      );
      const qxm = f32x4.add(f32x4.add(am, f32x4.mul(dx12, mm1)), f32x4.mul(dxn2, mm2));
      const q2m = f32x4.add(
        f32x4.add(bm, f32x4.mul(f32x4.mul(dw12, mm1), mm1)),
        f32x4.mul(f32x4.mul(dwn2, mm2), mm2),
      );
      consider(f32x4.extract_lane(qxp, 0), f32x4.extract_lane(q2p, 0), i1, i2, 1);
      consider(f32x4.extract_lane(qxm, 0), f32x4.extract_lane(q2m, 0), i1, i2, -1);
      if (i2 + 1 > 32) break;
      consider(f32x4.extract_lane(qxp, 1), f32x4.extract_lane(q2p, 1), i1, i2 + 1, 1);
      consider(f32x4.extract_lane(qxm, 1), f32x4.extract_lane(q2m, 1), i1, i2 + 1, -1);
      if (i2 + 2 > 32) break;
      consider(f32x4.extract_lane(qxp, 2), f32x4.extract_lane(q2p, 2), i1, i2 + 2, 1);
      consider(f32x4.extract_lane(qxm, 2), f32x4.extract_lane(q2m, 2), i1, i2 + 2, -1);
      if (i2 + 3 > 32) break;
      consider(f32x4.extract_lane(qxp, 3), f32x4.extract_lane(q2p, 3), i1, i2 + 3, 1);
      consider(f32x4.extract_lane(qxm, 3), f32x4.extract_lane(q2m, 3), i1, i2 + 3, -1);
    }
  }
}

/** IQ1_S (importance weights required): 50 bytes per 256 values. */
export function encodeIq1S(src: usize, dst: usize, blocks: i32, qw: usize, cols: i32): void {
  initGrid(G);
  for (let ibl = 0; ibl < blocks; ibl++) {
    const o = dst + <usize>ibl * 50;
    const x0 = src + <usize>ibl * 1024;
    memory.fill(o, 0, 50);
    const sigma2 = <f32>2 * sumSquares(x0) / <f32>256;
    let maxScale: f32 = 0;
    for (let ib = 0; ib < 8; ib++) {
      const x = x0 + <usize>ib * 128;
      weights(x, 256 * ibl + 32 * ib, 32, sigma2, qw, cols);
      const mx = absMax(x, 32);
      store<f32>(SCALES + <usize>ib * 4, 0);
      store<i32>(SHIFTS + <usize>ib * 4, 1);
      if (mx < <f32>1e-12) continue;
      sortIndices(x, 32);
      store<f32>(SUMX, 0);
      store<f32>(SUMW, 0);
      for (let j = 0; j < 32; j++) {
        const i = load<i32>(IDX + <usize>j * 4);
        const w = load<f32>(WEIGHT + <usize>i * 4);
        store<f32>(SUMX + <usize>(j + 1) * 4, load<f32>(SUMX + <usize>j * 4) + w * load<f32>(x + <usize>i * 4));
        store<f32>(SUMW + <usize>(j + 1) * 4, load<f32>(SUMW + <usize>j * 4) + w);
      }
      bestScore = -FLT_MAX;
      bestScale = mx;
      besti1 = -1;
      besti2 = -1;
      bestShift = 0;
      splitSearch32();
      let scale = bestScale;
      let shift = bestShift;
      if (besti1 < 0 || besti2 < 0 || shift == 0) continue;
      splitLevels(32, besti1, besti2);
      if (scale < 0) {
        for (let j = 0; j < 32; j++) store<i8>(L + <usize>j, <i8>(2 - <i32>load<i8>(L + <usize>j)));
        scale = -scale;
        shift = -shift;
      }
      scale = snapGroups(x, 4, scale, shift, false);
      let h = 0;
      for (let k = 0; k < 4; k++) {
        const index = load<i32>(INDEX + <usize>k * 4);
        store<u8>(o + 2 + <usize>(4 * ib + k), <u8>(index & 255));
        h |= (index >> 8) << (3 * k);
      }
      store<u16>(o + 34 + <usize>ib * 2, <u16>h);
      store<f32>(SCALES + <usize>ib * 4, scale);
      store<i32>(SHIFTS + <usize>ib * 4, shift);
      maxScale = maxScale > scale ? maxScale : scale;
    }
    if (maxScale == 0) continue;
    const d = maxScale / <f32>15;
    store<u16>(o, <u16>f32ToF16(d * <f32>1.125));
    const id = <f32>1 / d;
    for (let ib = 0; ib < 8; ib++) {
      let l = scaleCode(id, load<f32>(SCALES + <usize>ib * 4), 7);
      if (load<i32>(SHIFTS + <usize>ib * 4) == -1) l |= 8;
      const at = o + 35 + <usize>ib * 2;
      store<u8>(at, load<u8>(at) | <u8>(l << 4));
    }
  }
}

/** IQ1_M's four sign pairs of one split (lane values), tested in C's order (k = 0..3). */
@inline function considerPairs(
  qxp0: f32, qxm0: f32, qxp1: f32, qxm1: f32, q2p0: f32, q2m0: f32, q2p1: f32, q2m1: f32,
  i1: i32, i2: i32,
): void {
  consider(qxp0 + qxp1, q2p0 + q2p1, i1, i2, 0);
  consider(qxp0 + qxm1, q2p0 + q2m1, i1, i2, 1);
  consider(qxm0 + qxp1, q2m0 + q2p1, i1, i2, 2);
  consider(qxm0 + qxm1, q2m0 + q2m1, i1, i2, 3);
}

/**
 * IQ1_M's exhaustive split search over the 16 sorted values, per half (PX,
 * PW): four i2 per lane group, each lane C's expressions, the candidates then
 * tested in C's order.
 */
function splitSearch16(
  txs0: f32, txs1: f32, tws0: f32, tws1: f32, p2: f32, m2: f32, cp1: f32, cp2: f32, cm1: f32, cm2: f32,
): void {
  const tp0 = f32x4.splat(txs0 * p2);
  const tm0 = f32x4.splat(txs0 * m2);
  const tp1 = f32x4.splat(txs1 * p2);
  const tm1 = f32x4.splat(txs1 * m2);
  const wp0 = f32x4.splat(tws0 * p2 * p2);
  const wm0 = f32x4.splat(tws0 * m2 * m2);
  const wp1 = f32x4.splat(tws1 * p2 * p2);
  const wm1 = f32x4.splat(tws1 * m2 * m2);
  const vcp1 = f32x4.splat(cp1);
  const vcp2 = f32x4.splat(cp2);
  const vcm1 = f32x4.splat(cm1);
  const vcm2 = f32x4.splat(cm2);
  for (let i1 = 0; i1 <= 16; i1++) {
    const a1 = <usize>i1 * 4;
    const x10 = f32x4.splat(load<f32>(PX + a1));
    const x11 = f32x4.splat(load<f32>(PX + 68 + a1));
    const w10 = f32x4.splat(load<f32>(PW + a1));
    const w11 = f32x4.splat(load<f32>(PW + 68 + a1));
    const w10p = f32x4.mul(w10, vcp1);
    const w10m = f32x4.mul(w10, vcm1);
    const w11p = f32x4.mul(w11, vcp1);
    const w11m = f32x4.mul(w11, vcm1);
    for (let i2 = i1; i2 <= 16; i2 += 4) {
      const a2 = <usize>i2 * 4;
      const sxa = f32x4.add(x10, v128.load(PX + a2));
      const sxb = f32x4.add(x11, v128.load(PX + 68 + a2));
      const w20 = v128.load(PW + a2);
      const w21 = v128.load(PW + 68 + a2);
      const qxp0 = f32x4.sub(tp0, sxa);
      const qxm0 = f32x4.sub(tm0, sxa);
      const qxp1 = f32x4.sub(tp1, sxb);
      const qxm1 = f32x4.sub(tm1, sxb);
      const q2p0 = f32x4.add(f32x4.add(wp0, w10p), f32x4.mul(w20, vcp2));
      const q2m0 = f32x4.add(f32x4.add(wm0, w10m), f32x4.mul(w20, vcm2));
      const q2p1 = f32x4.add(f32x4.add(wp1, w11p), f32x4.mul(w21, vcp2));
      const q2m1 = f32x4.add(f32x4.add(wm1, w11m), f32x4.mul(w21, vcm2));
      considerPairs(
        f32x4.extract_lane(qxp0, 0), f32x4.extract_lane(qxm0, 0), f32x4.extract_lane(qxp1, 0),
        f32x4.extract_lane(qxm1, 0), f32x4.extract_lane(q2p0, 0), f32x4.extract_lane(q2m0, 0),
        f32x4.extract_lane(q2p1, 0), f32x4.extract_lane(q2m1, 0), i1, i2,
      );
      if (i2 + 1 > 16) break;
      considerPairs(
        f32x4.extract_lane(qxp0, 1), f32x4.extract_lane(qxm0, 1), f32x4.extract_lane(qxp1, 1),
        f32x4.extract_lane(qxm1, 1), f32x4.extract_lane(q2p0, 1), f32x4.extract_lane(q2m0, 1),
        f32x4.extract_lane(q2p1, 1), f32x4.extract_lane(q2m1, 1), i1, i2 + 1,
      );
      if (i2 + 2 > 16) break;
      considerPairs(
        f32x4.extract_lane(qxp0, 2), f32x4.extract_lane(qxm0, 2), f32x4.extract_lane(qxp1, 2),
        f32x4.extract_lane(qxm1, 2), f32x4.extract_lane(q2p0, 2), f32x4.extract_lane(q2m0, 2),
        f32x4.extract_lane(q2p1, 2), f32x4.extract_lane(q2m1, 2), i1, i2 + 2,
      );
      if (i2 + 3 > 16) break;
      considerPairs(
        f32x4.extract_lane(qxp0, 3), f32x4.extract_lane(qxm0, 3), f32x4.extract_lane(qxp1, 3),
        f32x4.extract_lane(qxm1, 3), f32x4.extract_lane(q2p0, 3), f32x4.extract_lane(q2m0, 3),
        f32x4.extract_lane(q2p1, 3), f32x4.extract_lane(q2m1, 3), i1, i2 + 3,
      );
    }
  }
}

/** IQ1_M: 56 bytes per 256 values. */
export function encodeIq1M(src: usize, dst: usize, blocks: i32, qw: usize, cols: i32): void {
  initGrid(G);
  const p2 = xx(XP, 2);
  const m2 = xx(XM, 2);
  const cp1 = xx(XP, 0) * xx(XP, 0) - xx(XP, 1) * xx(XP, 1);
  const cp2 = xx(XP, 1) * xx(XP, 1) - xx(XP, 2) * xx(XP, 2);
  const cm1 = xx(XM, 0) * xx(XM, 0) - xx(XM, 1) * xx(XM, 1);
  const cm2 = xx(XM, 1) * xx(XM, 1) - xx(XM, 2) * xx(XM, 2);
  const lev = levOf(G);
  for (let ibl = 0; ibl < blocks; ibl++) {
    const o = dst + <usize>ibl * 56;
    const x0 = src + <usize>ibl * 1024;
    memory.fill(o, 0, 56);
    const sigma2 = <f32>2 * sumSquares(x0) / <f32>256;
    let maxScale: f32 = 0;
    for (let ib = 0; ib < 16; ib++) {
      const x = x0 + <usize>ib * 64;
      weights(x, 256 * ibl + 16 * ib, 16, sigma2, qw, cols);
      const mx = absMax(x, 16);
      store<f32>(SCALES + <usize>ib * 4, 0);
      store<i32>(SHIFTS + <usize>ib * 4, 0);
      if (mx < <f32>1e-7) continue;
      sortIndices(x, 16);
      store<f32>(PX, 0);
      store<f32>(PX + 68, 0);
      store<f32>(PW, 0);
      store<f32>(PW + 68, 0);
      for (let j = 0; j < 16; j++) {
        const i = load<i32>(IDX + <usize>j * 4);
        const h: usize = i < 8 ? 0 : 68;
        const hn: usize = 68 - h;
        const w = load<f32>(WEIGHT + <usize>i * 4);
        const at = <usize>j * 4;
        store<f32>(PX + h + at + 4, load<f32>(PX + h + at) + w * load<f32>(x + <usize>i * 4));
        store<f32>(PX + hn + at + 4, load<f32>(PX + hn + at));
        store<f32>(PW + h + at + 4, load<f32>(PW + h + at) + w);
        store<f32>(PW + hn + at + 4, load<f32>(PW + hn + at));
      }
      const txs0 = load<f32>(PX + 64);
      const txs1 = load<f32>(PX + 68 + 64);
      const tws0 = load<f32>(PW + 64);
      const tws1 = load<f32>(PW + 68 + 64);
      bestScore = -FLT_MAX;
      bestScale = mx;
      besti1 = -1;
      besti2 = -1;
      bestShift = -1;
      splitSearch16(txs0, txs1, tws0, tws1, p2, m2, cp1, cp2, cm1, cm2);
      let scale = bestScale;
      let bestK = bestShift;
      if (besti1 < 0 || besti2 < 0 || bestK < 0) continue;
      splitLevels(16, besti1, besti2);
      if (scale < 0) {
        for (let j = 0; j < 16; j++) store<i8>(L + <usize>j, <i8>(2 - <i32>load<i8>(L + <usize>j)));
        scale = -scale;
        bestK = 3 - bestK;
      }
      scale = snapGroups(x, 2, scale, bestK, true);
      const i0 = load<i32>(INDEX);
      const i1x = load<i32>(INDEX + 4);
      store<u8>(o + <usize>(2 * ib), <u8>(i0 & 255));
      store<u8>(o + <usize>(2 * ib + 1), <u8>(i1x & 255));
      store<u8>(o + 32 + <usize>ib, <u8>((i0 >> 8) | ((i1x >> 8) << 4)));
      store<f32>(SCALES + <usize>ib * 4, scale);
      store<i32>(SHIFTS + <usize>ib * 4, bestK);
      maxScale = maxScale > scale ? maxScale : scale;
    }
    if (maxScale == 0) continue;
    let d = maxScale / <f32>15;
    const id = <f32>1 / d;
    let sc0: u32 = 0;
    let sc1: u32 = 0;
    let sc2: u32 = 0;
    let sc3: u32 = 0;
    let sumqx: f32 = 0;
    let sumq2: f32 = 0;
    for (let ib = 0; ib < 16; ib++) {
      const l = scaleCode(id, load<f32>(SCALES + <usize>ib * 4), 7);
      const part = <u32>l << (3 * (ib % 4));
      if (ib < 4) sc0 |= part;
      else if (ib < 8) sc1 |= part;
      else if (ib < 12) sc2 |= part;
      else sc3 |= part;
      const shift = load<i32>(SHIFTS + <usize>ib * 4);
      const mask = shift == 0 ? 0x00 : shift == 1 ? 0x80 : shift == 2 ? 0x08 : 0x88;
      const qhAt = o + 32 + <usize>ib;
      const qh = <i32>load<u8>(qhAt) | mask;
      store<u8>(qhAt, <u8>qh);
      const x = x0 + <usize>ib * 64;
      weights(x, 256 * ibl + 16 * ib, 16, sigma2, qw, cols);
      const odd: i32 = 2 * l + 1;
      for (let k = 0; k < 2; k++) {
        const p = levelsOf(shift, k, true);
        const gi = <i32>load<u8>(o + <usize>(2 * ib + k)) + ((qh << (8 - 4 * k)) & 0x700);
        for (let j = 0; j < 8; j++) {
          const w = load<f32>(WEIGHT + <usize>(8 * k + j) * 4);
          const q = xx(p, <i32>load<u8>(lev + <usize>(gi * 8 + j))) * <f32>odd;
          sumqx += w * q * load<f32>(x + <usize>(8 * k + j) * 4);
          sumq2 += w * q * q;
        }
      }
    }
    if (sumq2 > 0) d = sumqx / sumq2;
    const s = <u32>f32ToF16(d * <f32>1.1125);
    store<u16>(o + 48, <u16>(sc0 | ((s & 0x000f) << 12)));
    store<u16>(o + 50, <u16>(sc1 | ((s & 0x00f0) << 8)));
    store<u16>(o + 52, <u16>(sc2 | ((s & 0x0f00) << 4)));
    store<u16>(o + 54, <u16>(sc3 | (s & 0xf000)));
  }
}
