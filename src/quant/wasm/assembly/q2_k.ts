// AssemblyScript: Q2_K encoder, byte-identical with llama.cpp's
// quantize_row_q2_K_ref (and aprkit's TypeScript port in ../../q2_k.ts). The
// search is k_scale_min.ts' (sixteen 16-value sub-blocks, |x| weights,
// absolute errors); this stores 4-bit scales and mins and packs the levels.

import { clamp4, f16ToF32, f32ToF16, nearestInt, nearestInt4, superBlockWeights } from "./common";
import { L, MINS, SCALES, searchPair, winnerLevels } from "./k_scale_min";
import { bytes16, packTwoBits } from "./k_pack";
import { makeQpQuants } from "./qp_quants";

// Scratch (static memory, 16-byte aligned): the weighted quantizer's weights.
const W: usize = memory.data(256 * 4, 16); // each value's
const SW: usize = memory.data(16 * 4, 16); // each sub-block's total
const LS: usize = memory.data(16, 16); // scale levels
const LM: usize = memory.data(16, 16); // min levels

/**
 * Encode `nb` super-blocks of f32 at `src` into Q2_K bytes at `dst`; with
 * importance weights (`qw`, one per column of `cols`-value rows), as
 * quantize_row_q2_K_impl.
 */
export function encodeQ2K(src: usize, dst: usize, nb: i32, qw: usize, cols: i32): void {
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 1024;
    const y = dst + <usize>b * 84;
    if (qw != 0) {
      weightedScales(x, y, qw + <usize>((b * 256) % cols) * 4);
    } else {
      referenceScales(x, y);
    }
    requantize(x, y);
  }
}

/**
 * quantize_row_q2_K_impl's scales: make_qkx3_quants(16, 3, …, -0.9, 0.05, 36)
 * with `qw·sqrt(σ² + x²)` weights (σ² the mean square), then the scales and
 * mins by make_qp_quants weighted by each sub-block's total weight.
 */
@inline function weightedScales(x: usize, y: usize, qw: usize): void {
  superBlockWeights(x, qw, W, SW, 16, false);
  for (let g = 0; g < 4; g += 2) searchPair(x, g, 16, 3, <f32>-0.9, <f32>0.05, 36, false, W);
  const dm = makeQpQuants(16, 15, SCALES, SW, LS);
  const mm = makeQpQuants(16, 15, MINS, SW, LM);
  for (let j = 0; j < 16; j++) {
    store<u8>(y + j, load<u8>(LS + j) | <u8>(load<u8>(LM + j) << 4));
  }
  store<u16>(y + 80, <u16>f32ToF16(dm));
  store<u16>(y + 82, <u16>f32ToF16(mm));
}

/**
 * quantize_row_q2_K_ref's scales: make_qkx2_quants(16, 3, x, |x|, …, -0.5,
 * 0.1, 15, use_mad = true), then 4-bit fractions of the largest scale and min.
 */
@inline function referenceScales(x: usize, y: usize): void {
  for (let g = 0; g < 4; g += 2) searchPair(x, g, 16, 3, <f32>-0.5, <f32>0.1, 15, true);
  let maxScale: f32 = 0;
  let maxMin: f32 = 0;
  for (let j = 0; j < 16; j++) {
    const s = load<f32>(SCALES + <usize>j * 4);
    const m = load<f32>(MINS + <usize>j * 4);
    if (s > maxScale) maxScale = s;
    if (m > maxMin) maxMin = m;
  }
  let dBits = 0;
  let mBits = 0;
  if (maxScale > 0) {
    const iscale = <f32>15.0 / maxScale;
    for (let j = 0; j < 16; j++) {
      store<u8>(y + j, <u8>nearestInt(iscale * load<f32>(SCALES + <usize>j * 4)));
    }
    dBits = f32ToF16(maxScale / <f32>15.0);
  } else {
    v128.store(y, i8x16.splat(0));
  }
  if (maxMin > 0) {
    const iscale = <f32>15.0 / maxMin;
    for (let j = 0; j < 16; j++) {
      const l = nearestInt(iscale * load<f32>(MINS + <usize>j * 4));
      store<u8>(y + j, load<u8>(y + j) | <u8>(l << 4));
    }
    mBits = f32ToF16(maxMin / <f32>15.0);
  }
  store<u16>(y + 80, <u16>dBits);
  store<u16>(y + 82, <u16>mBits);
}

/** Both quantizers: every value's level from the stored scales, then packed. */
@inline function requantize(x: usize, y: usize): void {
  const dm = f16ToF32(<i32>load<u16>(y + 80));
  const mm = f16ToF32(<i32>load<u16>(y + 82));
  for (let j = 0; j < 16; j++) {
    const sc = <i32>load<u8>(y + j);
    const d = dm * <f32>(sc & 15);
    const xs = x + <usize>j * 64;
    const ls = L + <usize>j * 16;
    if (d == 0) {
      winnerLevels(xs, j, 16, 3, ls);
      continue;
    }
    const m = f32x4.splat(mm * <f32>(sc >>> 4));
    const dv = f32x4.splat(d);
    const l0 = clamp4(nearestInt4(f32x4.div(f32x4.add(v128.load(xs), m), dv)), 0, 3);
    const l1 = clamp4(nearestInt4(f32x4.div(f32x4.add(v128.load(xs + 16), m), dv)), 0, 3);
    const l2 = clamp4(nearestInt4(f32x4.div(f32x4.add(v128.load(xs + 32), m), dv)), 0, 3);
    const l3 = clamp4(nearestInt4(f32x4.div(f32x4.add(v128.load(xs + 48), m), dv)), 0, 3);
    v128.store(ls, bytes16(l0, l1, l2, l3));
  }
  packTwoBits(L, y + 16);
}
