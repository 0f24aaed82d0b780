// AssemblyScript: the IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS and IQ2_S encoders,
// byte-identical with llama.cpp's quantize_iq3_xxs / quantize_iq3_s /
// quantize_iq2_xxs / quantize_iq2_xs / quantize_iq2_s and aprkit's TypeScript
// ports (../../iq3_encode.ts, ../../iq2_encode.ts, ../../_iq_grid_search.ts,
// ../../_iq_grids.ts: the comments there say why each step is as it is).
//
// Scalar f32 arithmetic in C's order (each wasm f32 operation rounds as C's
// float does). The grids' maps and neighbour lists live in static memory and
// are filled on first use (a list when a block first needs it). Importance
// weights: `qw` is 0 without them, else one per column of rows of `cols`
// values (the values given start at a row).

import { makeQpQuants } from "./qp_quants";
import { f32ToF16, nearestInt } from "./common";
import { gridBits, gridDim, initGrid, levOf, mapOf, neighbours, oddOf } from "./iq_grids";

const FLT_MAX: f32 = <f32>3.4028234663852886e38;

// Grids (iq_grids.ts): 0 IQ2_XXS, 1 IQ2_XS, 2 IQ2_S, 3 IQ3_XXS, 4 IQ3_S.

// One block's scratch (at most 32 values, 8 groups).
const XVAL: usize = memory.data(32 * 4, 16);
const WEIGHT: usize = memory.data(32 * 4, 16);
const WAUX: usize = memory.data(32 * 4, 16);
const L: usize = memory.data(32, 16);
const LAUX: usize = memory.data(32, 16);
const ON_GRID: usize = memory.data(8, 16);
const ON_GRID_AUX: usize = memory.data(8, 16);
const SIGNS: usize = memory.data(4, 16);
const SCALES: usize = memory.data(16 * 4, 16);

/** iq2/iq3_find_best_neighbour: writes the chosen point's levels to `lv + xo`. */
function findBestNeighbour(g: i32, u: i32, xo: i32, scale: f32, lv: usize): void {
  const dim = gridDim(g);
  const odd = oddOf(g);
  const list = neighbours(g, u);
  const n = <i32>load<u16>(list);
  let best = FLT_MAX;
  let index = -1;
  // Four neighbours at a time: four independent sums (each in C's order)
  // keep the CPU's adders busy; the first smallest in list order still wins.
  let j = 1;
  for (; j + 3 <= n; j += 4) {
    const pa = <i32>load<u16>(list + <usize>j * 2);
    const pb = <i32>load<u16>(list + <usize>(j + 1) * 2);
    const pc = <i32>load<u16>(list + <usize>(j + 2) * 2);
    const pd = <i32>load<u16>(list + <usize>(j + 3) * 2);
    const qa = odd + <usize>(pa * dim) * 4;
    const qb = odd + <usize>(pb * dim) * 4;
    const qc = odd + <usize>(pc * dim) * 4;
    const qd = odd + <usize>(pd * dim) * 4;
    let da: f32 = 0;
    let db: f32 = 0;
    let dc: f32 = 0;
    let dd: f32 = 0;
    for (let i = 0; i < dim; i++) {
      const x = load<f32>(XVAL + <usize>(xo + i) * 4);
      const w = load<f32>(WAUX + <usize>(xo + i) * 4);
      const o = <usize>i * 4;
      const diffA = scale * load<f32>(qa + o) - x;
      const diffB = scale * load<f32>(qb + o) - x;
      const diffC = scale * load<f32>(qc + o) - x;
      const diffD = scale * load<f32>(qd + o) - x;
      da += w * diffA * diffA;
      db += w * diffB * diffB;
      dc += w * diffC * diffC;
      dd += w * diffD * diffD;
    }
    if (da < best) {
      best = da;
      index = pa;
    }
    if (db < best) {
      best = db;
      index = pb;
    }
    if (dc < best) {
      best = dc;
      index = pc;
    }
    if (dd < best) {
      best = dd;
      index = pd;
    }
  }
  for (; j <= n; j++) {
    const p = <i32>load<u16>(list + <usize>j * 2);
    let d2: f32 = 0;
    for (let i = 0; i < dim; i++) {
      const diff = scale * load<f32>(odd + <usize>(p * dim + i) * 4) -
        load<f32>(XVAL + <usize>(xo + i) * 4);
      d2 += load<f32>(WAUX + <usize>(xo + i) * 4) * diff * diff;
    }
    if (d2 < best) {
      best = d2;
      index = p;
    }
  }
  if (index < 0) index = load<u16>(list + 2); // non-finite distances (the TypeScript kernel throws)
  const lev = levOf(g);
  for (let i = 0; i < dim; i++) store<i8>(lv + <usize>(xo + i), load<i8>(lev + <usize>(index * dim + i)));
}

/** Snap the groups to levels at `id` and onto the grid (`only`: skip groups flagged 1 there). */
function snap(g: i32, kMaxQ: i32, n: i32, id: f32, scale: f32, lv: usize, onGrid: usize, only: usize): void {
  const dim = gridDim(g);
  const bits = gridBits(g);
  const map = mapOf(g);
  for (let k = 0; k < n / dim; k++) {
    if (only != 0 && load<u8>(only + k) == 1) continue;
    let u = 0;
    for (let i = 0; i < dim; i++) {
      let l = nearestInt(<f32>0.5 * (id * load<f32>(XVAL + <usize>(dim * k + i) * 4) - <f32>1));
      l = max(0, min(kMaxQ - 1, l));
      store<i8>(lv + <usize>(dim * k + i), <i8>l);
      u |= l << (bits * i);
    }
    const m = load<i32>(map + <usize>u * 4);
    if (onGrid != 0) store<u8>(onGrid + k, m > 0 ? 1 : 0);
    if (m <= 0) findBestNeighbour(g, u, dim * k, scale, lv);
  }
}

let fitQx: f32 = 0;
/** Σ w·x·q (into fitQx) and Σ w·q² (returned) over the levels at `lv`. */
function fit(n: i32, lv: usize): f32 {
  let sumqx: f32 = 0;
  let sumq2: f32 = 0;
  for (let i = 0; i < n; i++) {
    const w = load<f32>(WEIGHT + <usize>i * 4);
    const qi: i32 = 2 * <i32>load<i8>(lv + <usize>i) + 1;
    const q = <f32>qi;
    sumqx += w * load<f32>(XVAL + <usize>i * 4) * q;
    sumq2 += w * q * q;
  }
  fitQx = sumqx;
  return sumq2;
}

// refine: 0 off-grid groups, 1 all groups if any off-grid (IQ3_S), 2 always all (IQ2_XXS).
function searchGridScale(
  g: i32,
  kMaxQ: i32,
  isMax: i32,
  step: f32,
  onGridStart: bool,
  refine: i32,
  n: i32,
  denom: f32,
  startScale: f32,
): f32 {
  const groups = n / gridDim(g);
  let best: f32 = 0;
  let scale = startScale;
  memory.fill(ON_GRID, onGridStart ? 1 : 0, groups);
  const topI: i32 = 2 * kMaxQ - 1;
  const top = <f32>topI;
  for (let is = -isMax; is <= isMax; is++) {
    const id = (top + <f32>is * step) / denom;
    const thisScale = <f32>1 / id;
    snap(g, kMaxQ, n, id, thisScale, LAUX, ON_GRID_AUX, 0);
    const sumq2 = fit(n, LAUX);
    const sumqx = fitQx;
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      scale = sumqx / sumq2;
      best = scale * sumqx;
      memory.copy(L, LAUX, n);
      memory.copy(ON_GRID, ON_GRID_AUX, groups);
    }
  }
  let offGrid = 0;
  for (let k = 0; k < groups; k++) if (load<u8>(ON_GRID + k) == 0) offGrid++;
  if (scale > 0 && (refine == 2 || offGrid > 0)) {
    snap(g, kMaxQ, n, <f32>1 / scale, scale, L, 0, refine == 0 ? ON_GRID : 0);
    const sumq2 = fit(n, L);
    if (sumq2 > 0) scale = fitQx / sumq2;
  }
  return scale;
}

function gridIndexOf(g: i32, lo: i32): i32 {
  const dim = gridDim(g);
  const bits = gridBits(g);
  let u = 0;
  for (let i = 0; i < dim; i++) u |= <i32>load<i8>(L + <usize>(lo + i)) << (bits * i);
  return load<i32>(mapOf(g) + <usize>u * 4) - 1; // always on the grid here
}

export function sumSquares(x: usize): f32 {
  let s: f32 = 0;
  for (let i = 0; i < 256; i++) {
    const v = load<f32>(x + <usize>i * 4);
    s += v * v;
  }
  return s;
}

/** Weights (`qw·√(σ²+x²)`, else x², or σ²/4 + x² with `quarter` ≥ 0), and waux = √w. */
function weights(x: usize, first: i32, n: i32, sigma2: f32, qw: usize, cols: i32, quarter: f32): void {
  for (let i = 0; i < n; i++) {
    const v = load<f32>(x + <usize>i * 4);
    let w: f32;
    if (qw != 0) w = load<f32>(qw + <usize>((first + i) % cols) * 4) * sqrt<f32>(sigma2 + v * v);
    else if (quarter >= 0) w = quarter + v * v;
    else w = v * v;
    store<f32>(WEIGHT + <usize>i * 4, w);
    store<f32>(WAUX + <usize>i * 4, sqrt<f32>(w));
  }
}

function foldSigns(x: usize, n: i32, parity: bool): void {
  for (let k = 0; k < n / 8; k++) {
    let nflip = 0;
    let sgn = 0;
    for (let i = 0; i < 8; i++) {
      const v = load<f32>(x + <usize>(8 * k + i) * 4);
      if (v >= 0) {
        store<f32>(XVAL + <usize>(8 * k + i) * 4, v);
      } else {
        store<f32>(XVAL + <usize>(8 * k + i) * 4, -v);
        nflip++;
        sgn |= 1 << i;
      }
    }
    if (parity && nflip % 2 == 1) {
      let imin = 0;
      const v0 = load<f32>(x + <usize>(8 * k) * 4);
      let mn = load<f32>(WEIGHT + <usize>(8 * k) * 4) * v0 * v0;
      for (let i = 1; i < 8; i++) {
        const v = load<f32>(x + <usize>(8 * k + i) * 4);
        const ax = load<f32>(WEIGHT + <usize>(8 * k + i) * 4) * v * v;
        if (ax < mn) {
          mn = ax;
          imin = i;
        }
      }
      const at = XVAL + <usize>(8 * k + imin) * 4;
      store<f32>(at, -load<f32>(at));
      sgn ^= 1 << imin;
    }
    store<u8>(SIGNS + k, <u8>(parity ? sgn & 127 : sgn));
  }
}

function maxOf(n: i32): f32 {
  let m = load<f32>(XVAL);
  for (let i = 1; i < n; i++) {
    const v = load<f32>(XVAL + <usize>i * 4);
    m = m > v ? m : v;
  }
  return m;
}

@inline export function scaleCode(id: f32, s: f32, mx: i32): i32 {
  return max(0, min(mx, nearestInt(<f32>0.5 * (id * s - <f32>1))));
}

/** IQ3_XXS: `blocks` super-blocks of 256 values at `src`, 98 bytes each to `dst`. */
export function encodeIq3Xxs(src: usize, dst: usize, blocks: i32, qw: usize, cols: i32): void {
  initGrid(3);
  for (let ibl = 0; ibl < blocks; ibl++) {
    const o = dst + <usize>ibl * 98;
    const x = src + <usize>ibl * 1024;
    memory.fill(o, 0, 98);
    const sigma2 = <f32>2 * sumSquares(x) / <f32>256;
    let maxScale: f32 = 0;
    for (let ib = 0; ib < 8; ib++) {
      const xb = x + <usize>ib * 128;
      weights(xb, 256 * ibl + 32 * ib, 32, sigma2, qw, cols, -1);
      foldSigns(xb, 32, true);
      const mx = maxOf(32);
      memory.fill(L, 0, 32);
      if (mx < <f32>1e-8) {
        store<f32>(SCALES + <usize>ib * 4, 0);
        continue;
      }
      let scale = searchGridScale(3, 8, 15, <f32>0.2, true, 0, 32, mx, mx / <f32>15);
      if (scale < 0) {
        scale = -scale;
        for (let k = 0; k < 4; k++) store<u8>(SIGNS + k, ~load<u8>(SIGNS + k) & 127);
      }
      for (let k = 0; k < 8; k++) store<u8>(o + 2 + <usize>(8 * ib + k), <u8>gridIndexOf(3, 4 * k));
      const signs = <u32>load<u8>(SIGNS) | (<u32>load<u8>(SIGNS + 1) << 7) |
        (<u32>load<u8>(SIGNS + 2) << 14) | (<u32>load<u8>(SIGNS + 3) << 21);
      store<u32>(o + 66 + <usize>ib * 4, signs);
      store<f32>(SCALES + <usize>ib * 4, scale);
      maxScale = maxScale > scale ? maxScale : scale;
    }
    if (maxScale == 0) {
      memory.fill(o, 0, 98);
      continue;
    }
    const d = maxScale / <f32>31;
    store<u16>(o, <u16>f32ToF16(d * <f32>1.0125));
    const id = <f32>1 / d;
    for (let ib = 0; ib < 8; ib++) {
      const at = o + 66 + <usize>ib * 4 + 3;
      store<u8>(at, load<u8>(at) | <u8>(scaleCode(id, load<f32>(SCALES + <usize>ib * 4), 15) << 4));
    }
  }
}

/** IQ3_S: `blocks` super-blocks of 256 values at `src`, 110 bytes each to `dst`. */
export function encodeIq3S(src: usize, dst: usize, blocks: i32, qw: usize, cols: i32): void {
  initGrid(4);
  for (let ibl = 0; ibl < blocks; ibl++) {
    const o = dst + <usize>ibl * 110;
    const x = src + <usize>ibl * 1024;
    memory.fill(o, 0, 110);
    const sigma2 = <f32>2 * sumSquares(x) / <f32>256;
    let maxScale: f32 = 0;
    let qs = o + 2;
    let signs = o + 74;
    for (let ib = 0; ib < 8; ib++) {
      const xb = x + <usize>ib * 128;
      weights(xb, 256 * ibl + 32 * ib, 32, sigma2, qw, cols, -1);
      foldSigns(xb, 32, false);
      const mx = maxOf(32);
      memory.fill(L, 0, 32);
      if (mx == 0) {
        store<f32>(SCALES + <usize>ib * 4, 0);
        continue;
      }
      let scale = searchGridScale(4, 8, 9, <f32>0.2, false, 1, 32, mx, mx / <f32>15);
      if (scale < 0) {
        scale = -scale;
        for (let k = 0; k < 4; k++) store<u8>(SIGNS + k, ~load<u8>(SIGNS + k));
      }
      for (let k = 0; k < 8; k++) {
        const index = gridIndexOf(4, 4 * k);
        store<u8>(qs + k, <u8>(index & 255));
        const at = o + 66 + <usize>ib;
        store<u8>(at, load<u8>(at) | <u8>((index >> 8) << k));
      }
      qs += 8;
      memory.copy(signs, SIGNS, 4);
      signs += 4;
      store<f32>(SCALES + <usize>ib * 4, scale);
      maxScale = maxScale > scale ? maxScale : scale;
    }
    if (maxScale == 0) continue;
    const d = maxScale / <f32>31;
    store<u16>(o, <u16>f32ToF16(d * <f32>1.033));
    const id = <f32>1 / d;
    for (let ib = 0; ib < 8; ib += 2) {
      const l1 = scaleCode(id, load<f32>(SCALES + <usize>ib * 4), 15);
      const l2 = scaleCode(id, load<f32>(SCALES + <usize>(ib + 1) * 4), 15);
      store<u8>(o + 106 + <usize>(ib >> 1), <u8>(l1 | (l2 << 4)));
    }
  }
}

/** IQ2_XXS (importance weights required): 66 bytes per 256 values. */
export function encodeIq2Xxs(src: usize, dst: usize, blocks: i32, qw: usize, cols: i32): void {
  initGrid(0);
  for (let ibl = 0; ibl < blocks; ibl++) {
    const o = dst + <usize>ibl * 66;
    const x = src + <usize>ibl * 1024;
    memory.fill(o, 0, 66);
    const sigma2 = sumSquares(x) / <f32>256;
    let maxScale: f32 = 0;
    for (let ib = 0; ib < 8; ib++) {
      const xb = x + <usize>ib * 128;
      weights(xb, 256 * ibl + 32 * ib, 32, sigma2, qw, cols, -1);
      foldSigns(xb, 32, true);
      const mx = maxOf(32);
      store<f32>(SCALES + <usize>ib * 4, 0);
      if (mx < <f32>1e-15) continue;
      let scale = makeQpQuants(32, 4, XVAL, WEIGHT, L);
      const effMax = scale * <f32>3;
      if (effMax <= 0) continue;
      scale = searchGridScale(0, 3, 6, <f32>0.1, true, 2, 32, effMax, scale);
      if (scale < 0) {
        scale = -scale;
        for (let k = 0; k < 4; k++) store<u8>(SIGNS + k, ~load<u8>(SIGNS + k) & 127);
      }
      let idx: u32 = 0;
      let sg: u32 = 0;
      for (let k = 0; k < 4; k++) {
        idx |= <u32>gridIndexOf(0, 8 * k) << (8 * k);
        sg |= <u32>load<u8>(SIGNS + k) << (7 * k);
      }
      store<u32>(o + 2 + <usize>ib * 8, idx);
      store<u32>(o + 6 + <usize>ib * 8, sg);
      store<f32>(SCALES + <usize>ib * 4, scale);
      maxScale = maxScale > scale ? maxScale : scale;
    }
    if (maxScale == 0) {
      memory.fill(o, 0, 66);
      continue;
    }
    const d = maxScale / <f32>31;
    store<u16>(o, <u16>f32ToF16(d));
    const id = <f32>1 / d;
    for (let ib = 0; ib < 8; ib++) {
      const at = o + 6 + <usize>ib * 8;
      store<u32>(at, load<u32>(at) | (<u32>scaleCode(id, load<f32>(SCALES + <usize>ib * 4), 15) << 28));
    }
  }
}

/** IQ2_XS's and IQ2_S's 16-value sub-blocks; returns the largest scale. */
function sixteens(g: i32, x: usize, first: i32, sigma2: f32, qw: usize, cols: i32, quarter: f32, eps: f32, o: usize): f32 {
  const parity = g == 1;
  let maxScale: f32 = 0;
  for (let ib = 0; ib < 16; ib++) {
    const xb = x + <usize>ib * 64;
    weights(xb, first + 16 * ib, 16, sigma2, qw, cols, quarter);
    foldSigns(xb, 16, parity);
    const mx = maxOf(16);
    memory.fill(L, 0, 16);
    store<f32>(SCALES + <usize>ib * 4, 0);
    if (mx < eps) continue;
    let scale = searchGridScale(g, 3, 9, <f32>0.1, true, 0, 16, mx, mx / <f32>5);
    if (scale < 0) {
      scale = -scale;
      for (let k = 0; k < 2; k++) store<u8>(SIGNS + k, ~load<u8>(SIGNS + k) & (parity ? 127 : 255));
    }
    for (let k = 0; k < 2; k++) {
      const i8 = 2 * ib + k;
      const index = gridIndexOf(g, 8 * k);
      const sg = <i32>load<u8>(SIGNS + k);
      if (g == 1) {
        store<u16>(o + 2 + <usize>i8 * 2, <u16>(index | (sg << 9)));
      } else {
        store<u8>(o + 2 + <usize>i8, <u8>(index & 255));
        const at = o + 66 + <usize>(i8 >> 2);
        store<u8>(at, load<u8>(at) | <u8>((index >> 8) << (2 * (i8 % 4))));
        store<u8>(o + 34 + <usize>i8, <u8>sg);
      }
    }
    store<f32>(SCALES + <usize>ib * 4, scale);
    maxScale = maxScale > scale ? maxScale : scale;
  }
  return maxScale;
}

function packScales(at: usize, maxScale: f32): void {
  const d = maxScale / <f32>31;
  const id = <f32>1 / d;
  for (let ib = 0; ib < 16; ib += 2) {
    const l1 = scaleCode(id, load<f32>(SCALES + <usize>ib * 4), 15);
    const l2 = scaleCode(id, load<f32>(SCALES + <usize>(ib + 1) * 4), 15);
    store<u8>(at + <usize>(ib >> 1), <u8>(l1 | (l2 << 4)));
  }
}

/** IQ2_XS (importance weights required): 74 bytes per 256 values. */
export function encodeIq2Xs(src: usize, dst: usize, blocks: i32, qw: usize, cols: i32): void {
  initGrid(1);
  for (let ibl = 0; ibl < blocks; ibl++) {
    const o = dst + <usize>ibl * 74;
    const x = src + <usize>ibl * 1024;
    memory.fill(o, 0, 74);
    const sigma2 = sumSquares(x) / <f32>256;
    const maxScale = sixteens(1, x, 256 * ibl, sigma2, qw, cols, -1, <f32>1e-15, o);
    if (maxScale == 0) {
      memory.fill(o + 2, 0, 64);
      continue;
    }
    store<u16>(o, <u16>f32ToF16(maxScale / <f32>31));
    packScales(o + 66, maxScale);
  }
}

/** IQ2_S: 82 bytes per 256 values. */
export function encodeIq2S(src: usize, dst: usize, blocks: i32, qw: usize, cols: i32): void {
  initGrid(2);
  for (let ibl = 0; ibl < blocks; ibl++) {
    const o = dst + <usize>ibl * 82;
    const x = src + <usize>ibl * 1024;
    memory.fill(o, 0, 82);
    const sigma2 = <f32>2 * sumSquares(x) / <f32>256;
    const quarter = <f32>0.25 * sigma2;
    const maxScale = sixteens(2, x, 256 * ibl, sigma2, qw, cols, quarter, <f32>1e-8, o);
    if (maxScale == 0) continue;
    store<u16>(o, <u16>f32ToF16(maxScale / <f32>31 * <f32>0.9875));
    packScales(o + 74, maxScale);
  }
}
