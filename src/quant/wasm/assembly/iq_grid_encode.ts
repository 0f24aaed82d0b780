// AssemblyScript: the IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS and IQ2_S encoders,
// byte-identical with llama.cpp's quantize_iq3_xxs / quantize_iq3_s /
// quantize_iq2_xxs / quantize_iq2_xs / quantize_iq2_s and aprkit's TypeScript
// ports (../../iq3_encode.ts, ../../iq2_encode.ts, ../../_iq_grid_search.ts,
// ../../_iq_grids.ts: the comments there say why each step is as it is).
//
// f32 arithmetic in C's order (each wasm f32 operation rounds as C's float
// does); the scale search runs four sub-blocks at once, one per SIMD lane
// (iq_grid_search.ts), the rest scalar. The grids' maps and neighbour lists live in static memory and
// are filled on first use (a list when a block first needs it). Importance
// weights: `qw` is 0 without them, else one per column of rows of `cols`
// values (the values given start at a row).

import { makeQpQuants } from "./qp_quants";
import { f32ToF16, nearestInt } from "./common";
import { gridBits, gridDim, initGrid, mapOf } from "./iq_grids";
import { laneLevels, loadLane, searchGridScale4 } from "./iq_grid_search";

// Grids (iq_grids.ts): 0 IQ2_XXS, 1 IQ2_XS, 2 IQ2_S, 3 IQ3_XXS, 4 IQ3_S.

// One block's scratch (at most 32 values, 8 groups).
const XVAL: usize = memory.data(32 * 4, 16);
const WEIGHT: usize = memory.data(32 * 4, 16);
const WAUX: usize = memory.data(32 * 4, 16);
const L: usize = memory.data(32, 16);
const SIGNS: usize = memory.data(4, 16);
const SCALES: usize = memory.data(16 * 4, 16);

// Four sub-blocks' search inputs and signs (lane k: sub-block k of a quad).
const DENOM: usize = memory.data(16, 16);
const START: usize = memory.data(16, 16);
const SCALE4: usize = memory.data(16, 16);
const LANE_SIGNS: usize = memory.data(4 * 4, 16);

/** Lane `k` of the quad: its sub-block's scratch (XVAL, WEIGHT, WAUX, SIGNS) into the search. */
function toLane(k: i32, n: i32, denom: f32, start: f32): void {
  loadLane(k, n, XVAL, WEIGHT, WAUX);
  memory.copy(LANE_SIGNS + <usize>k * 4, SIGNS, 4);
  store<f32>(DENOM + <usize>k * 4, denom);
  store<f32>(START + <usize>k * 4, start);
}

/** Lane `k`'s result back into the scratch: levels to L, signs to SIGNS; returns its scale. */
function fromLane(k: i32, n: i32): f32 {
  laneLevels(k, n, L);
  memory.copy(SIGNS, LANE_SIGNS + <usize>k * 4, 4);
  return load<f32>(SCALE4 + <usize>k * 4);
}

function search4(g: i32, kMaxQ: i32, isMax: i32, step: f32, onGridStart: bool, refine: i32, n: i32): void {
  searchGridScale4(g, kMaxQ, isMax, step, onGridStart, refine, n, DENOM, START, SCALE4);
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

/**
 * Fill the quad's lanes with sub-blocks q…q+3 of `n` values at `x` (the
 * first's column `first`): weights, folded signs, and the search's
 * denominator (the largest value) and first scale (it / `div`). Returns the
 * lanes with values: max ≥ `eps`, or > 0 when `eps` is 0 (a lane without is
 * searched, not used).
 */
function fillQuad(
  x: usize,
  q: i32,
  first: i32,
  n: i32,
  sigma2: f32,
  qw: usize,
  cols: i32,
  quarter: f32,
  parity: bool,
  eps: f32,
  div: f32,
): i32 {
  let active = 0;
  for (let k = 0; k < 4; k++) {
    const xb = x + <usize>((q + k) * n) * 4;
    weights(xb, first + n * (q + k), n, sigma2, qw, cols, quarter);
    foldSigns(xb, n, parity);
    const mx = maxOf(n);
    if (eps == 0 ? mx == 0 : mx < eps) {
      toLane(k, n, 1, 1);
      continue;
    }
    active |= 1 << k;
    toLane(k, n, mx, mx / div);
  }
  return active;
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
    for (let q = 0; q < 8; q += 4) {
      const active = fillQuad(x, q, 256 * ibl, 32, sigma2, qw, cols, -1, true, <f32>1e-8, 15);
      if (active != 0) search4(3, 8, 15, <f32>0.2, true, 0, 32);
      for (let k = 0; k < 4; k++) {
        const ib = q + k;
        if (((active >> k) & 1) == 0) {
          store<f32>(SCALES + <usize>ib * 4, 0);
          continue;
        }
        let scale = fromLane(k, 32);
        if (scale < 0) {
          scale = -scale;
          for (let j = 0; j < 4; j++) store<u8>(SIGNS + j, ~load<u8>(SIGNS + j) & 127);
        }
        for (let j = 0; j < 8; j++) store<u8>(o + 2 + <usize>(8 * ib + j), <u8>gridIndexOf(3, 4 * j));
        const signs = <u32>load<u8>(SIGNS) | (<u32>load<u8>(SIGNS + 1) << 7) |
          (<u32>load<u8>(SIGNS + 2) << 14) | (<u32>load<u8>(SIGNS + 3) << 21);
        store<u32>(o + 66 + <usize>ib * 4, signs);
        store<f32>(SCALES + <usize>ib * 4, scale);
        maxScale = maxScale > scale ? maxScale : scale;
      }
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
    for (let q = 0; q < 8; q += 4) {
      const active = fillQuad(x, q, 256 * ibl, 32, sigma2, qw, cols, -1, false, 0, 15);
      if (active != 0) search4(4, 8, 9, <f32>0.2, false, 1, 32);
      for (let k = 0; k < 4; k++) {
        const ib = q + k;
        if (((active >> k) & 1) == 0) {
          store<f32>(SCALES + <usize>ib * 4, 0);
          continue;
        }
        let scale = fromLane(k, 32);
        if (scale < 0) {
          scale = -scale;
          for (let j = 0; j < 4; j++) store<u8>(SIGNS + j, ~load<u8>(SIGNS + j));
        }
        for (let j = 0; j < 8; j++) {
          const index = gridIndexOf(4, 4 * j);
          store<u8>(qs + <usize>j, <u8>(index & 255));
          const at = o + 66 + <usize>ib;
          store<u8>(at, load<u8>(at) | <u8>((index >> 8) << j));
        }
        qs += 8; // as C: only a sub-block with values moves on (zero ones leave their bytes at the end)
        memory.copy(signs, SIGNS, 4);
        signs += 4;
        store<f32>(SCALES + <usize>ib * 4, scale);
        maxScale = maxScale > scale ? maxScale : scale;
      }
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
    for (let q = 0; q < 8; q += 4) {
      let active = 0;
      for (let k = 0; k < 4; k++) {
        const xb = x + <usize>(q + k) * 128;
        weights(xb, 256 * ibl + 32 * (q + k), 32, sigma2, qw, cols, -1);
        foldSigns(xb, 32, true);
        const mx = maxOf(32);
        const start = mx < <f32>1e-15 ? <f32>0 : makeQpQuants(32, 4, XVAL, WEIGHT, L);
        const effMax = start * <f32>3;
        if (mx < <f32>1e-15 || effMax <= 0) {
          toLane(k, 32, 1, 1); // searched, not used
          continue;
        }
        active |= 1 << k;
        toLane(k, 32, effMax, start);
      }
      if (active != 0) search4(0, 3, 6, <f32>0.1, true, 2, 32);
      for (let k = 0; k < 4; k++) {
        const ib = q + k;
        store<f32>(SCALES + <usize>ib * 4, 0);
        if (((active >> k) & 1) == 0) continue;
        let scale = fromLane(k, 32);
        if (scale < 0) {
          scale = -scale;
          for (let j = 0; j < 4; j++) store<u8>(SIGNS + j, ~load<u8>(SIGNS + j) & 127);
        }
        let idx: u32 = 0;
        let sg: u32 = 0;
        for (let j = 0; j < 4; j++) {
          idx |= <u32>gridIndexOf(0, 8 * j) << (8 * j);
          sg |= <u32>load<u8>(SIGNS + j) << (7 * j);
        }
        store<u32>(o + 2 + <usize>ib * 8, idx);
        store<u32>(o + 6 + <usize>ib * 8, sg);
        store<f32>(SCALES + <usize>ib * 4, scale);
        maxScale = maxScale > scale ? maxScale : scale;
      }
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
  for (let q = 0; q < 16; q += 4) {
    const active = fillQuad(x, q, first, 16, sigma2, qw, cols, quarter, parity, eps, 5);
    if (active != 0) search4(g, 3, 9, <f32>0.1, true, 0, 16);
    for (let k = 0; k < 4; k++) {
      const ib = q + k;
      store<f32>(SCALES + <usize>ib * 4, 0);
      if (((active >> k) & 1) == 0) continue;
      let scale = fromLane(k, 16);
      if (scale < 0) {
        scale = -scale;
        for (let j = 0; j < 2; j++) store<u8>(SIGNS + j, ~load<u8>(SIGNS + j) & (parity ? 127 : 255));
      }
      for (let j = 0; j < 2; j++) {
        const i8 = 2 * ib + j;
        const index = gridIndexOf(g, 8 * j);
        const sg = <i32>load<u8>(SIGNS + j);
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
