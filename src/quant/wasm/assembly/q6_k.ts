// AssemblyScript: Q6_K encoder, byte-identical with llama.cpp's
// quantize_row_q6_K_ref (and aprkit's TypeScript port in ../../q6_k.ts).
//
// As in q4_k.ts, lanes run whole 16-value groups (C sums each group
// sequentially in f32): lane k of XT[i] is value i of group 4g + k.
// With an importance matrix (quantize_row_q6_K_impl) its weights replace x²
// in make_qx_quants; nothing else changes.

import { clamp4, f16ToF32, f32ToF16, gather4, nearestInt, nearestInt4, select4 } from "./common";

const GROUP_MAX_EPS: f32 = <f32>1e-15;

const XT: usize = memory.data(16 * 16, 16); // transposed values
const W: usize = memory.data(16 * 16, 16); // x²
const WX: usize = memory.data(16 * 16, 16); // x² · x
const SCALES: usize = memory.data(16 * 4, 16);
const WIN_ISCALE: usize = memory.data(16 * 4, 16); // the winning candidate's iscale
const SMALL: usize = memory.data(16 * 4, 16); // all-ones where amax < GROUP_MAX_EPS
const L: usize = memory.data(256, 16); // final levels (l + 32)
// Loop constants, read from memory into locals (see levelOf).
const CONSTS: usize = memory.data<i32>([
  0x4b400000, 0x4b400000, 0x4b400000, 0x4b400000, // 1.5·2^23 (nearest_int's magic)
  0x7fffff, 0x7fffff, 0x7fffff, 0x7fffff,
  0x400000, 0x400000, 0x400000, 0x400000,
  -32, -32, -32, -32,
  31, 31, 31, 31,
], 16);

/** make_qx_quants(16, 32, x, L, 1, qw) on groups 4g..4g+3 (`qw` 0: weights x²). */
function searchGroup(x: usize, g: i32, qw: usize): void {
  const base = x + <usize>(g * 4 * 16) * 4;
  const wbase = qw + <usize>(g * 4 * 16) * 4;
  const zero = f32x4.splat(0);
  let amax = zero;
  let max = zero;
  for (let i = 0; i < 16; i++) {
    const p = base + <usize>i * 4;
    const v = gather4(p, p + 64, p + 128, p + 192);
    v128.store(XT + <usize>i * 16, v);
    const ax = f32x4.abs(v);
    const m = f32x4.gt(ax, amax);
    amax = select4(ax, amax, m);
    max = select4(v, max, m);
    let w = f32x4.mul(v, v);
    if (qw != 0) {
      const q = wbase + <usize>i * 4;
      w = gather4(q, q + 64, q + 128, q + 192);
    }
    v128.store(W + <usize>i * 16, w);
    v128.store(WX + <usize>i * 16, f32x4.mul(w, v));
  }
  const small = f32x4.lt(amax, f32x4.splat(GROUP_MAX_EPS));
  let iscale = f32x4.div(f32x4.splat(<f32>-32.0), max);
  let sumlx = zero;
  let suml2 = zero;
  for (let i = 0; i < 16; i++) {
    const l = f32x4.convert_i32x4_s(
      clamp4(nearestInt4(f32x4.mul(iscale, v128.load(XT + <usize>i * 16))), -32, 31),
    );
    sumlx = f32x4.add(sumlx, f32x4.mul(v128.load(WX + <usize>i * 16), l));
    suml2 = f32x4.add(suml2, f32x4.mul(f32x4.mul(v128.load(W + <usize>i * 16), l), l));
  }
  // C: suml2 ? sumlx/suml2 : 0 (NaN counts as true).
  let scale = select4(f32x4.div(sumlx, suml2), zero, f32x4.ne(suml2, zero));
  let best = f32x4.mul(scale, sumlx);
  let winIscale = iscale;
  const magic = v128.load(CONSTS);
  const mant = v128.load(CONSTS + 16);
  const bias = v128.load(CONSTS + 32);
  const lo = v128.load(CONSTS + 48);
  const hi = v128.load(CONSTS + 64);
  for (let is = -9; is <= 9; is++) {
    if (is == 0) continue;
    const c: f32 = -(<f32>32.0 + <f32>0.1 * <f32>is);
    iscale = f32x4.div(f32x4.splat(c), max);
    sumlx = zero;
    suml2 = zero;
    for (let i = 0; i < 16; i++) {
      const t = f32x4.add(f32x4.mul(iscale, v128.load(XT + <usize>i * 16)), magic);
      const n = i32x4.sub(v128.and(t, mant), bias);
      const l = f32x4.convert_i32x4_s(i32x4.min_s(i32x4.max_s(n, lo), hi));
      sumlx = f32x4.add(sumlx, f32x4.mul(v128.load(WX + <usize>i * 16), l));
      suml2 = f32x4.add(suml2, f32x4.mul(f32x4.mul(v128.load(W + <usize>i * 16), l), l));
    }
    const take = v128.and(
      f32x4.gt(suml2, zero),
      f32x4.gt(f32x4.mul(sumlx, sumlx), f32x4.mul(best, suml2)),
    );
    const s = f32x4.div(sumlx, suml2);
    scale = select4(s, scale, take);
    best = select4(f32x4.mul(s, sumlx), best, take);
    winIscale = select4(iscale, winIscale, take);
  }
  const o = <usize>g * 16;
  v128.store(SCALES + o, select4(zero, scale, small));
  v128.store(WIN_ISCALE + o, winIscale);
  v128.store(SMALL + o, small);
}

/**
 * Encode `nb` super-blocks of f32 at `src` into Q6_K bytes at `dst`; with
 * importance weights (`qw` not 0: one per column of rows of `cols` values),
 * quantize_row_q6_K_impl.
 */
export function encodeQ6K(src: usize, dst: usize, nb: i32, qw: usize, cols: i32): void {
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 1024;
    const y = dst + <usize>b * 210;
    const w = qw == 0 ? 0 : qw + <usize>((b * 256) % cols) * 4;
    for (let g = 0; g < 4; g++) searchGroup(x, g, w);
    let maxScale: f32 = 0;
    let maxAbsScale: f32 = 0;
    for (let ib = 0; ib < 16; ib++) {
      const s = load<f32>(SCALES + <usize>ib * 4);
      const a = abs<f32>(s);
      if (a > maxAbsScale) {
        maxAbsScale = a;
        maxScale = s;
      }
    }
    if (maxAbsScale < GROUP_MAX_EPS) {
      memory.fill(y, 0, 210);
      continue;
    }
    const iscale: f32 = <f32>-128.0 / maxScale;
    const dBits = f32ToF16(<f32>1.0 / iscale);
    store<u16>(y + 208, <u16>dBits);
    const dF = f16ToF32(dBits);
    for (let ib = 0; ib < 16; ib++) {
      const q = nearestInt(iscale * load<f32>(SCALES + <usize>ib * 4));
      store<u8>(y + 192 + ib, <u8>(q > 127 ? 127 : q));
    }
    for (let j = 0; j < 16; j++) {
      const sc = <i32>load<i8>(y + 192 + j);
      const d = dF * <f32>sc;
      const xs = x + <usize>j * 64;
      const lj = L + <usize>j * 16;
      if (d == 0) {
        // C keeps the search's levels for this group: recompute the winner's.
        const small = load<i32>(SMALL + <usize>j * 4);
        const wi = load<f32>(WIN_ISCALE + <usize>j * 4);
        for (let i = 0; i < 16; i++) {
          let l = nearestInt(wi * load<f32>(xs + <usize>i * 4));
          l = l < -32 ? -32 : l > 31 ? 31 : l;
          store<u8>(lj + i, small != 0 ? 0 : <u8>(l + 32));
        }
        continue;
      }
      const dv = f32x4.splat(d);
      for (let i = 0; i < 16; i += 4) {
        const v = v128.load(xs + <usize>i * 4);
        const l = i32x4.add(clamp4(nearestInt4(f32x4.div(v, dv)), -32, 31), i32x4.splat(32));
        store<u8>(lj + i, <u8>i32x4.extract_lane(l, 0));
        store<u8>(lj + i + 1, <u8>i32x4.extract_lane(l, 1));
        store<u8>(lj + i + 2, <u8>i32x4.extract_lane(l, 2));
        store<u8>(lj + i + 3, <u8>i32x4.extract_lane(l, 3));
      }
    }
    // ql: low nibbles of (a, c) and (b, e); qh: the four high 2-bit pairs.
    let ql = y;
    let qh = y + 128;
    const m15 = i8x16.splat(15);
    for (let j = 0; j < 256; j += 128) {
      for (let l = 0; l < 32; l += 16) {
        const a = v128.load(L + <usize>(j + l));
        const b2 = v128.load(L + <usize>(j + l + 32));
        const c = v128.load(L + <usize>(j + l + 64));
        const e = v128.load(L + <usize>(j + l + 96));
        v128.store(ql + <usize>l, v128.or(v128.and(a, m15), i8x16.shl(v128.and(c, m15), 4)));
        v128.store(ql + <usize>(l + 32), v128.or(v128.and(b2, m15), i8x16.shl(v128.and(e, m15), 4)));
        const h = v128.or(
          v128.or(i8x16.shr_u(a, 4), i8x16.shl(i8x16.shr_u(b2, 4), 2)),
          v128.or(i8x16.shl(i8x16.shr_u(c, 4), 4), i8x16.shl(i8x16.shr_u(e, 4), 6)),
        );
        v128.store(qh + <usize>l, h);
      }
      ql += 64;
      qh += 32;
    }
  }
}
