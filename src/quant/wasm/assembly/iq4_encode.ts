// AssemblyScript: IQ4_NL and IQ4_XS encoders, byte-identical with llama.cpp's
// quantize_iq4_nl / quantize_iq4_xs (quantize_row_iq4_nl_impl, ntry = 7) and
// aprkit's TypeScript port in ../../iq4_encode.ts.
//
// Lanes run four independent 32-value blocks (IQ4_NL's blocks, IQ4_XS's
// sub-blocks): C sums each block sequentially in f32, and so does each lane.
// Importance weights are optional: `qw` is 0 without them, else one weight per
// column of rows of `cols` values (the values given start at a row).

import { f32ToF16, nearestInt } from "./common";
import { KVALUES_IQ4NL } from "./ggml_grids";

const GROUP_MAX_EPS: f32 = <f32>1e-15;

const XT: usize = memory.data(32 * 16, 16); // values, transposed: lane k = block k
const WT: usize = memory.data(32 * 16, 16); // weights, transposed
const SCALES: usize = memory.data(8 * 4, 16);
const L: usize = memory.data(256, 16); // levels

/** The int8 table entries at four i32 indices (0..15), as f32. */
@inline function tableF(idx: v128): v128 {
  const b = i8x16.swizzle(v128.load(KVALUES_IQ4NL), idx);
  return f32x4.convert_i32x4_s(i32x4.shr_s(i32x4.shl(b, 24), 24));
}

/** ggml's best_index_int8(16, kvalues_iq4nl, x) on four lanes (a NaN gives 15, as C's search). */
function bestIndex4(x: v128): v128 {
  const v0 = <f32>load<i8>(KVALUES_IQ4NL);
  const v15 = <f32>load<i8>(KVALUES_IQ4NL + 15);
  // The binary search ends at the first entry above x: one plus the count of entries 1..14 ≤ x.
  let mu = i32x4.splat(1);
  for (let i = 1; i < 15; i++) {
    mu = i32x4.sub(mu, f32x4.le(f32x4.splat(<f32>load<i8>(KVALUES_IQ4NL + i)), x));
  }
  const lo = i32x4.sub(mu, i32x4.splat(1));
  const nearer = f32x4.lt(f32x4.sub(x, tableF(lo)), f32x4.sub(tableF(mu), x));
  let r = v128.bitselect(lo, mu, nearer);
  r = v128.bitselect(i32x4.splat(15), r, f32x4.ge(x, f32x4.splat(v15)));
  r = v128.bitselect(i32x4.splat(15), r, f32x4.ne(x, x));
  return v128.bitselect(i32x4.splat(0), r, f32x4.le(x, f32x4.splat(v0)));
}

/**
 * The weighted sums of the levels `id·x` snaps to, per lane:
 * Σ w·q·x into `sumqx`, Σ w·q² returned (both sequential over j, as C).
 */
let sumqxOut: v128 = i32x4.splat(0);
function sums(id: v128): v128 {
  let sumqx = f32x4.splat(0);
  let sumq2 = f32x4.splat(0);
  for (let j = 0; j < 32; j++) {
    const x = v128.load(XT + <usize>j * 16);
    const w = v128.load(WT + <usize>j * 16);
    const q = tableF(bestIndex4(f32x4.mul(id, x)));
    const wq = f32x4.mul(w, q);
    sumqx = f32x4.add(sumqx, f32x4.mul(wq, x));
    sumq2 = f32x4.add(sumq2, f32x4.mul(wq, q));
  }
  sumqxOut = sumqx;
  return sumq2;
}

/** The scales of the four blocks in XT/WT (0 where |x| < GROUP_MAX_EPS). */
function fitBlocks(): v128 {
  const zero = f32x4.splat(0);
  let amax = zero;
  let max = zero;
  for (let j = 0; j < 32; j++) {
    const v = v128.load(XT + <usize>j * 16);
    const ax = f32x4.abs(v);
    const m = f32x4.gt(ax, amax);
    amax = v128.bitselect(ax, amax, m);
    max = v128.bitselect(v, max, m);
  }
  const v0 = <f32>load<i8>(KVALUES_IQ4NL);
  let d = f32x4.div(f32x4.neg(max), f32x4.splat(v0));
  let sumq2 = sums(f32x4.div(f32x4.splat(1), d));
  let sumqx = sumqxOut;
  d = v128.bitselect(f32x4.div(sumqx, sumq2), zero, f32x4.gt(sumq2, zero));
  let best = f32x4.mul(d, sumqx);
  for (let itry = -7; itry <= 7; itry++) {
    sumq2 = sums(f32x4.div(f32x4.splat(<f32>(itry + <i32>v0)), max));
    sumqx = sumqxOut;
    const better = v128.and(
      f32x4.gt(sumq2, zero),
      f32x4.gt(f32x4.mul(sumqx, sumqx), f32x4.mul(best, sumq2)),
    );
    const dn = f32x4.div(sumqx, sumq2);
    d = v128.bitselect(dn, d, better);
    best = v128.bitselect(f32x4.mul(dn, sumqx), best, better);
  }
  return v128.bitselect(zero, d, f32x4.lt(amax, f32x4.splat(GROUP_MAX_EPS)));
}

/**
 * Load four 32-value blocks at `x + starts[k]` (byte offsets) into XT and their
 * weights into WT: `qw·√(σ²_k + x²)` with importance weights (column of value i
 * is `(first + i) % cols`), else `x²`.
 */
function loadBlocks(
  x: usize,
  s0: i32,
  s1: i32,
  s2: i32,
  s3: i32,
  sigma2: v128,
  qw: usize,
  cols: i32,
): void {
  for (let j = 0; j < 32; j++) {
    let v = f32x4.splat(load<f32>(x + <usize>(s0 + j) * 4));
    v = f32x4.replace_lane(v, 1, load<f32>(x + <usize>(s1 + j) * 4));
    v = f32x4.replace_lane(v, 2, load<f32>(x + <usize>(s2 + j) * 4));
    v = f32x4.replace_lane(v, 3, load<f32>(x + <usize>(s3 + j) * 4));
    v128.store(XT + <usize>j * 16, v);
    const v2 = f32x4.mul(v, v);
    if (qw == 0) {
      v128.store(WT + <usize>j * 16, v2);
    } else {
      let w = f32x4.splat(load<f32>(qw + <usize>((s0 + j) % cols) * 4));
      w = f32x4.replace_lane(w, 1, load<f32>(qw + <usize>((s1 + j) % cols) * 4));
      w = f32x4.replace_lane(w, 2, load<f32>(qw + <usize>((s2 + j) % cols) * 4));
      w = f32x4.replace_lane(w, 3, load<f32>(qw + <usize>((s3 + j) % cols) * 4));
      v128.store(WT + <usize>j * 16, f32x4.mul(w, f32x4.sqrt(f32x4.add(sigma2, v2))));
    }
  }
}

/** Levels of 32 values at `x` for inverse scale `id` into L + at (four at a time). */
function snap32(x: usize, id: f32, at: usize): void {
  for (let j = 0; j < 32; j += 4) {
    const l = bestIndex4(f32x4.mul(f32x4.splat(id), v128.load(x + <usize>j * 4)));
    store<u8>(L + at + j, <u8>i32x4.extract_lane(l, 0));
    store<u8>(L + at + j + 1, <u8>i32x4.extract_lane(l, 1));
    store<u8>(L + at + j + 2, <u8>i32x4.extract_lane(l, 2));
    store<u8>(L + at + j + 3, <u8>i32x4.extract_lane(l, 3));
  }
}

/** ggml's nibble order: element j and j + 16 of each 32 share byte j. */
function pack(n: i32, q: usize): void {
  for (let i = 0; i < n / 32; i++) {
    for (let j = 0; j < 16; j++) {
      const at = L + <usize>(32 * i + j);
      store<u8>(q + <usize>(16 * i + j), load<u8>(at) | (load<u8>(at + 16) << 4));
    }
  }
}

/** IQ4_NL: `blocks` blocks of 32 values at `src`, 18 bytes each to `dst`. */
export function encodeIq4Nl(src: usize, dst: usize, blocks: i32, qw: usize, cols: i32): void {
  for (let b = 0; b < blocks; b += 4) {
    // A short last group repeats its last block in the spare lanes.
    const s0 = 32 * b;
    const s1 = 32 * min(b + 1, blocks - 1);
    const s2 = 32 * min(b + 2, blocks - 1);
    const s3 = 32 * min(b + 3, blocks - 1);
    let sigma2 = f32x4.splat(0);
    if (qw != 0) {
      for (let j = 0; j < 32; j++) {
        let v = f32x4.splat(load<f32>(src + <usize>(s0 + j) * 4));
        v = f32x4.replace_lane(v, 1, load<f32>(src + <usize>(s1 + j) * 4));
        v = f32x4.replace_lane(v, 2, load<f32>(src + <usize>(s2 + j) * 4));
        v = f32x4.replace_lane(v, 3, load<f32>(src + <usize>(s3 + j) * 4));
        sigma2 = f32x4.add(sigma2, f32x4.mul(v, v));
      }
      sigma2 = f32x4.mul(sigma2, f32x4.splat(<f32>0.0625));
    }
    loadBlocks(src, s0, s1, s2, s3, sigma2, qw, cols);
    v128.store(SCALES, fitBlocks());
    for (let k = 0; k < 4 && b + k < blocks; k++) {
      const s = load<f32>(SCALES + <usize>k * 4);
      const o = dst + <usize>(b + k) * 18;
      store<u16>(o, <u16>f32ToF16(s));
      snap32(src + <usize>(32 * (b + k)) * 4, s != 0 ? <f32>1 / s : <f32>0, 0);
      pack(32, o + 2);
    }
  }
}

/** IQ4_XS: `blocks` super-blocks of 256 values at `src`, 136 bytes each to `dst`. */
export function encodeIq4Xs(src: usize, dst: usize, blocks: i32, qw: usize, cols: i32): void {
  for (let ibl = 0; ibl < blocks; ibl++) {
    const x = src + <usize>ibl * 1024;
    const first = 256 * ibl;
    let s: f32 = 0;
    for (let j = 0; j < 256; j++) {
      const v = load<f32>(x + <usize>j * 4);
      s += v * v;
    }
    const sigma2 = f32x4.splat(s * <f32>0.0078125);
    for (let g = 0; g < 2; g++) {
      const b = first + 128 * g;
      loadBlocks(src, b, b + 32, b + 64, b + 96, sigma2, qw, cols);
      v128.store(SCALES + <usize>g * 16, fitBlocks());
    }
    let maxScale: f32 = 0;
    let amaxScale: f32 = 0;
    for (let ib = 0; ib < 8; ib++) {
      const d = load<f32>(SCALES + <usize>ib * 4);
      if (abs(d) > amaxScale) {
        amaxScale = abs(d);
        maxScale = d;
      }
    }
    const o = dst + <usize>ibl * 136;
    const d = -maxScale / <f32>32;
    store<u16>(o, <u16>f32ToF16(d));
    const id: f32 = d != 0 ? <f32>1 / d : <f32>0;
    let scalesH: u32 = 0;
    for (let ib = 0; ib < 8; ib++) {
      let l = nearestInt(id * load<f32>(SCALES + <usize>ib * 4));
      l = max(-32, min(31, l));
      const dl = d * <f32>l;
      snap32(x + <usize>ib * 128, dl != 0 ? <f32>1 / dl : <f32>0, <usize>ib * 32);
      l += 32;
      const at = o + 4 + <usize>(ib >> 1);
      if (ib % 2 == 0) store<u8>(at, l & 15);
      else store<u8>(at, load<u8>(at) | ((l & 15) << 4));
      scalesH |= <u32>(l >> 4) << (2 * (ib % 8));
    }
    store<u16>(o + 2, <u16>scalesH);
    pack(256, o + 8);
  }
}
