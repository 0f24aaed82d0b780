// AssemblyScript: Q3_K encoder, byte-identical with llama.cpp's
// quantize_row_q3_K_ref and, with importance weights, quantize_row_q3_K_impl
// (and aprkit's TypeScript port in ../../q3_k.ts). The weighted fit is
// make_qx_quants (qx_quants.ts'): nmax 4 on each sub-block, then nmax 32 on
// the sixteen scales.
//
// The reference fit, make_q3_quants, is q3_quants.ts'. After either fit the
// sixteen scales' 6-bit levels sit in LS, from which the scale bytes, each
// sub-block's d and the requantized levels follow.

import { f16ToF32, f32ToF16, superBlockWeights } from "./common";
import { packTwoBits } from "./k_pack";
import { loadGroups, SCALES, searchQx, winnerLevels } from "./qx_quants";
import { Q3_SCALES, q3Group, q3Levels } from "./q3_quants";
import { widenBf16 } from "./bf16_widen";

// Scratch (static memory, 16-byte aligned).
const L: usize = memory.data(256, 16); // levels 0..7 of the super-block
const WEIGHTS: usize = memory.data(256 * 4, 16); // the weighted fit's qw·sqrt(σ² + x²)
const SW: usize = memory.data(16 * 4, 16); // each sub-block's total weight
const LS: usize = memory.data(16, 16); // the scales' levels (0..63)
const DV: usize = memory.data(16 * 4, 16); // each sub-block's d
// The sixteen scales as group 0 of four (the others zero), then their weights.
const SCALES_GROUP: usize = memory.data(2 * 64 * 4, 16);

/**
 * The sixteen 6-bit scale levels in LS (0..63) packed into the 12 scale bytes
 * at `s`, as ggml: byte j < 8 holds level j's low four bits and level
 * j + 8's above them; byte 8 + k holds bits 4..5 of levels k, k + 4, k + 8,
 * k + 12 as its bit pairs 0..3.
 */
@inline function packScales(s: usize): void {
  const a = load<u64>(LS);
  const b = load<u64>(LS + 8);
  const nibbles: u64 = 0x0f0f0f0f0f0f0f0f;
  store<u64>(s, (a & nibbles) | ((b & nibbles) << 4));
  const ha = (a >> 4) & 0x0303030303030303;
  const hb = (b >> 4) & 0x0303030303030303;
  const hi = (ha & 0xffffffff) | ((ha >> 32) << 2) | ((hb & 0xffffffff) << 4) | ((hb >> 32) << 6);
  store<u32>(s + 8, <u32>hi);
}

/** Each sub-block's d, `dAll · (level − 32)` as C computes it from the stored scale, to DV. */
@inline function scaleDs(dAll: f32): void {
  const v = v128.load(LS);
  const lo = i16x8.extend_low_i8x16_u(v);
  const hi = i16x8.extend_high_i8x16_u(v);
  const d = f32x4.splat(dAll);
  const off = i32x4.splat(32);
  v128.store(DV, f32x4.mul(d, f32x4.convert_i32x4_s(i32x4.sub(i32x4.extend_low_i16x8_u(lo), off))));
  v128.store(DV + 16, f32x4.mul(d, f32x4.convert_i32x4_s(i32x4.sub(i32x4.extend_high_i16x8_u(lo), off))));
  v128.store(DV + 32, f32x4.mul(d, f32x4.convert_i32x4_s(i32x4.sub(i32x4.extend_low_i16x8_u(hi), off))));
  v128.store(DV + 48, f32x4.mul(d, f32x4.convert_i32x4_s(i32x4.sub(i32x4.extend_high_i16x8_u(hi), off))));
}

/** Scales i..i+3 at `p` as int8_t(nearest_int(iscale·scale)), clamped to -32..31, plus 32. */
@inline function scaleLevels4(p: usize, iscale: v128): v128 {
  const t = f32x4.add(f32x4.mul(iscale, v128.load(p)), f32x4.splat(<f32>12582912.0));
  const n = i32x4.sub(v128.and(t, i32x4.splat(0x7fffff)), i32x4.splat(0x400000));
  const l = i32x4.shr_s(i32x4.shl(n, 24), 24);
  return i32x4.add(i32x4.min_s(i32x4.max_s(l, i32x4.splat(-32)), i32x4.splat(31)), i32x4.splat(32));
}

/**
 * quantize_row_q3_K_ref's scales: the sixteen of make_q3_quants as 6-bit
 * fractions of the largest in magnitude (the first of equals), their levels
 * to LS. Returns d's f16 bits.
 */
@inline function referenceScales(x: usize): i32 {
  q3Group(x, 0);
  q3Group(x, 1);
  q3Group(x, 2);
  q3Group(x, 3);
  let maxScale: f32 = 0;
  let amax: f32 = 0;
  for (let j = 0; j < 16; j++) {
    const sc = load<f32>(Q3_SCALES + <usize>j * 4);
    const more = Mathf.abs(sc) > amax;
    amax = select<f32>(Mathf.abs(sc), amax, more);
    maxScale = select<f32>(sc, maxScale, more);
  }
  if (maxScale == 0) {
    v128.store(LS, i8x16.splat(0));
    return 0;
  }
  const iscale = <f32>-32.0 / maxScale;
  const is = f32x4.splat(iscale);
  const l01 = i16x8.narrow_i32x4_u(scaleLevels4(Q3_SCALES, is), scaleLevels4(Q3_SCALES + 16, is));
  const l23 = i16x8.narrow_i32x4_u(
    scaleLevels4(Q3_SCALES + 32, is),
    scaleLevels4(Q3_SCALES + 48, is),
  );
  v128.store(LS, i8x16.narrow_i16x8_u(l01, l23));
  return f32ToF16(<f32>1.0 / iscale);
}

/**
 * quantize_row_q3_K_impl's scales: each sub-block by make_qx_quants(16, 4)
 * weighted by `qw·sqrt(σ² + x²)` (σ² twice the block's mean square), then
 * the sixteen scales by make_qx_quants(16, 32) weighted by each sub-block's
 * total weight, their levels to LS. Returns d's f16 bits; the sub-blocks'
 * levels are winnerLevels' (C's L where d is 0).
 */
@inline function weightedScales(x: usize, qw: usize): i32 {
  superBlockWeights(x, qw, WEIGHTS, SW, 16, true);
  for (let g = 0; g < 4; g++) {
    const o = <usize>g * 256; // sub-blocks 4g..4g+3
    loadGroups(x + o, WEIGHTS + o);
    searchQx(4, <usize>g * 16);
  }
  // The scales as one group (lane 0; the other lanes all zero), in slot 16.
  memory.copy(SCALES_GROUP, SCALES, 64);
  memory.copy(SCALES_GROUP + 64 * 4, SW, 64);
  loadGroups(SCALES_GROUP, SCALES_GROUP + 64 * 4);
  searchQx(32, 64);
  winnerLevels(SCALES_GROUP, 16, 32, LS);
  return f32ToF16(load<f32>(SCALES + 64));
}

// The requantization's constants: nearest_int's 1.5·2^23 and mantissa mask,
// its bias less 4 (so the level comes out as l + 4), and the bytes' top 7.
const RQ: usize = memory.data<i32>([
  0x4b400000, 0x4b400000, 0x4b400000, 0x4b400000,
  0x7fffff, 0x7fffff, 0x7fffff, 0x7fffff,
  0x3ffffc, 0x3ffffc, 0x3ffffc, 0x3ffffc,
  0x07070707, 0x07070707, 0x07070707, 0x07070707,
], 16);

/**
 * The sixteen values at `x` as levels clamp(nearest_int(x / d), -4, 3) + 4,
 * bytes to `out`: the narrowings saturate (to i16, then to 0..255), so below
 * 0 gives 0, and the byte minimum clamps above 7.
 */
@inline function requantize(x: usize, d: f32, out: usize): void {
  const dv = f32x4.splat(d);
  const magic = v128.load(RQ);
  const mant = v128.load(RQ + 16);
  const bias = v128.load(RQ + 32);
  const l0 = i32x4.sub(v128.and(f32x4.add(f32x4.div(v128.load(x), dv), magic), mant), bias);
  const l1 = i32x4.sub(v128.and(f32x4.add(f32x4.div(v128.load(x + 16), dv), magic), mant), bias);
  const l2 = i32x4.sub(v128.and(f32x4.add(f32x4.div(v128.load(x + 32), dv), magic), mant), bias);
  const l3 = i32x4.sub(v128.and(f32x4.add(f32x4.div(v128.load(x + 48), dv), magic), mant), bias);
  const b = i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_s(l0, l1), i16x8.narrow_i32x4_s(l2, l3));
  v128.store(out, i8x16.min_u(b, v128.load(RQ + 48)));
}

/** High bits of the levels at L + `l` + 32k (k = 0..7) to `y`; the low two bits stay in L. */
@inline function highBits16(y: usize, l: usize, three: v128): void {
  let hm = v128.and(i8x16.gt_u(v128.load(L + l), three), v128.load(BITS));
  v128.store(L + l, v128.and(v128.load(L + l), three));
  for (let k = 1; k < 8; k++) {
    const p = L + l + <usize>k * 32;
    const v = v128.load(p);
    hm = v128.or(hm, v128.and(i8x16.gt_u(v, three), v128.load(BITS + <usize>k * 16)));
    v128.store(p, v128.and(v, three));
  }
  v128.store(y + l, hm);
}

// Byte k·16..k·16+15: bit k (the high-bit masks of highBits16), then 3s.
const BITS: usize = memory.data<u8>([
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
  2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
  4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
  8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
  16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
  32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32,
  64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
  128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128,
  3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
], 16);

/** High bits: value j's in bit j / 32 of byte j % 32 of `y`; the low two bits stay in L. */
function highBits(y: usize): void {
  const three = v128.load(BITS + 128);
  highBits16(y, 0, three);
  highBits16(y, 16, three);
}

/**
 * Sub-block j's levels + 4 to L: requantized with its d, or where d is 0 the
 * fit's own levels, as C keeps them.
 */
@inline function subBlockLevels(x: usize, j: i32, qw: usize): void {
  const d = load<f32>(DV + <usize>j * 4);
  const out = L + <usize>j * 16;
  if (d != 0) requantize(x + <usize>j * 64, d, out);
  else if (qw != 0) winnerLevels(x + <usize>j * 64, j, 4, out);
  else q3Levels(x, j, out);
}

/**
 * The super-block of f32 at `x` into Q3_K bytes at `y`; with importance
 * weights (`qw` not 0: the block's), quantize_row_q3_K_impl.
 */
@inline function encodeBlock(x: usize, y: usize, qw: usize): void {
  const dBits = qw == 0 ? referenceScales(x) : weightedScales(x, qw);
  packScales(y + 96);
  store<u16>(y + 108, <u16>dBits);
  // Requantize every value with the stored scales.
  scaleDs(f16ToF32(dBits));
  subBlockLevels(x, 0, qw);
  subBlockLevels(x, 1, qw);
  subBlockLevels(x, 2, qw);
  subBlockLevels(x, 3, qw);
  subBlockLevels(x, 4, qw);
  subBlockLevels(x, 5, qw);
  subBlockLevels(x, 6, qw);
  subBlockLevels(x, 7, qw);
  subBlockLevels(x, 8, qw);
  subBlockLevels(x, 9, qw);
  subBlockLevels(x, 10, qw);
  subBlockLevels(x, 11, qw);
  subBlockLevels(x, 12, qw);
  subBlockLevels(x, 13, qw);
  subBlockLevels(x, 14, qw);
  subBlockLevels(x, 15, qw);
  highBits(y);
  packTwoBits(L, y + 32);
}

/**
 * Encode `nb` super-blocks of f32 at `src` into Q3_K bytes at `dst`; with
 * importance weights (`qw` not 0: one per column of rows of `cols` values),
 * quantize_row_q3_K_impl.
 */
export function encodeQ3K(src: usize, dst: usize, nb: i32, qw: usize, cols: i32): void {
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 1024;
    const y = dst + <usize>b * 110;
    encodeBlock(x, y, qw == 0 ? 0 : qw + <usize>((b * 256) % cols) * 4);
  }
}

// One super-block widened from bf16.
const XB: usize = memory.data(256 * 4, 16);

/**
 * Encode `nb` super-blocks of bf16 at `src` (512 bytes each) into Q3_K
 * bytes at `dst`, as widening them to f32 and running encodeQ3K without
 * importance weights: each super-block is widened into a static scratch,
 * which stays in cache, and whose loads V8 checks at compile time.
 */
export function encodeQ3KBf16(src: usize, dst: usize, nb: i32): void {
  for (let b = 0; b < nb; b++) {
    widenBf16(src + <usize>b * 512, XB, 256);
    encodeBlock(XB, dst + <usize>b * 110, 0);
  }
}
