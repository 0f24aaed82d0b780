// AssemblyScript: Q3_K encoder, byte-identical with llama.cpp's
// quantize_row_q3_K_ref and, with importance weights, quantize_row_q3_K_impl
// (and aprkit's TypeScript port in ../../q3_k.ts). The weighted fit is
// make_qx_quants (qx_quants.ts'): nmax 4 on each sub-block, then nmax 32 on
// the sixteen scales.
//
// make_q3_quants refines each 16-value sub-block by sequential per-value
// moves, so lanes cannot split a sub-block: as in k_scale_min.ts the
// super-block is transposed (lane k of XT[i] is value i of sub-block 4g + k)
// and each lane runs C's sequence with its branches as lane masks. A lane
// whose pass changed nothing would change nothing again, so passes run until
// no lane changes (at most five, as C).

import { f16ToF32, f32ToF16, nearestInt, select4, superBlockWeights } from "./common";
import { packTwoBits } from "./k_pack";
import { loadGroups, SCALES, searchQx, winnerLevels } from "./qx_quants";
import { Q3_SCALES, q3Group, q3Levels } from "./q3_quants";

// Scratch (static memory, 16-byte aligned).
const L: usize = memory.data(256, 16); // levels 0..7 of the super-block
const WEIGHTS: usize = memory.data(256 * 4, 16); // the weighted fit's qw·sqrt(σ² + x²)
const SW: usize = memory.data(16 * 4, 16); // each sub-block's total weight
const LS: usize = memory.data(16, 16); // the scales' levels (0..63)
// The sixteen scales as group 0 of four (the others zero), then their weights.
const SCALES_GROUP: usize = memory.data(2 * 64 * 4, 16);

/** Sub-block j's 6-bit scale (0..63) from the 12 scale bytes at `s`. */
@inline function getScale(s: usize, j: i32): i32 {
  const lo = j < 8 ? <i32>load<u8>(s + j) & 15 : <i32>load<u8>(s + j - 8) >>> 4;
  return lo | (((<i32>load<u8>(s + 8 + (j & 3)) >>> (2 * (j >> 2))) & 3) << 4);
}

/** Store sub-block j's 6-bit scale `l` in the 12 (zeroed) scale bytes at `s`. */
@inline function putScale(s: usize, j: i32, l: i32): void {
  if (j < 8) store<u8>(s + j, <u8>(l & 15));
  else store<u8>(s + j - 8, load<u8>(s + j - 8) | <u8>((l & 15) << 4));
  store<u8>(s + 8 + (j & 3), load<u8>(s + 8 + (j & 3)) | <u8>((l >> 4) << (2 * (j >> 2))));
}

/**
 * quantize_row_q3_K_ref's scales: the sixteen of make_q3_quants as 6-bit
 * fractions of the largest in magnitude (the first of equals), packed into
 * the 12 (zeroed) bytes at `s`, each value's level to L. Returns d's f16 bits.
 */
@inline function referenceScales(x: usize, s: usize): i32 {
  for (let g = 0; g < 4; g++) q3Group(x, g);
  let maxScale: f32 = 0;
  let amax: f32 = 0;
  for (let j = 0; j < 16; j++) {
    const sc = load<f32>(Q3_SCALES + <usize>j * 4);
    if (Mathf.abs(sc) > amax) {
      amax = Mathf.abs(sc);
      maxScale = sc;
    }
  }
  if (maxScale == 0) return 0;
  const iscale = <f32>-32.0 / maxScale;
  for (let j = 0; j < 16; j++) {
    // int8_t l = nearest_int(…); MAX(-32, MIN(31, l)) + 32.
    let l = (nearestInt(iscale * load<f32>(Q3_SCALES + <usize>j * 4)) << 24) >> 24;
    l = (l < -32 ? -32 : l > 31 ? 31 : l) + 32;
    putScale(s, j, l);
  }
  return f32ToF16(<f32>1.0 / iscale);
}

/**
 * quantize_row_q3_K_impl's scales: each sub-block by make_qx_quants(16, 4)
 * weighted by `qw·sqrt(σ² + x²)` (σ² twice the block's mean square), then
 * the sixteen scales by make_qx_quants(16, 32) weighted by each sub-block's
 * total weight, packed into the 12 (zeroed) bytes at `s`. Returns d's f16
 * bits; the sub-blocks' levels are winnerLevels' (C's L where d is 0).
 */
@inline function weightedScales(x: usize, s: usize, qw: usize): i32 {
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
  for (let j = 0; j < 16; j++) putScale(s, j, <i32>load<u8>(LS + <usize>j));
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
function requantize(x: usize, d: f32, out: usize): void {
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
 * Encode `nb` super-blocks of f32 at `src` into Q3_K bytes at `dst`; with
 * importance weights (`qw` not 0: one per column of rows of `cols` values),
 * quantize_row_q3_K_impl.
 */
export function encodeQ3K(src: usize, dst: usize, nb: i32, qw: usize, cols: i32): void {
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 1024;
    const y = dst + <usize>b * 110;
    const s = y + 96;
    store<u64>(s, 0);
    store<u32>(s + 8, 0);
    const dBits = qw == 0
      ? referenceScales(x, s)
      : weightedScales(x, s, qw + <usize>((b * 256) % cols) * 4);
    store<u16>(y + 108, <u16>dBits);
    // Requantize every value with the stored scales.
    const dAll = f16ToF32(dBits);
    for (let j = 0; j < 16; j++) {
      const d = dAll * <f32>(getScale(s, j) - 32);
      if (d == 0) {
        // C keeps make_q3_quants' levels, or make_qx_quants'.
        if (qw != 0) winnerLevels(x + <usize>j * 64, j, 4, L + <usize>j * 16);
        else q3Levels(x, j, L + <usize>j * 16);
        continue;
      }
      requantize(x + <usize>j * 64, d, L + <usize>j * 16);
    }
    highBits(y);
    packTwoBits(L, y + 32);
  }
}
