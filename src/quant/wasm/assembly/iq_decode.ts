// AssemblyScript: decoders of the ggml types aprkit reads but does not
// write — i-quants, ternary, FP4, Q1_0/Q2_0 — bit-exact with llama.cpp's
// dequantize_row_* and with ../../i_quants.ts, ../../ternary.ts,
// ../../fp4_blocks.ts. Every product C rounds to f32 is one f32 multiply here,
// in the same order; a sign applied after a product is applied to the integer
// before it (round-to-nearest is symmetric, so the result is the same).

import { f16ToF32 } from "./common";
import { storeScaled } from "./legacy_decode";
import {
  IQ1S_GRID,
  IQ2S_GRID,
  IQ2XS_GRID,
  IQ2XXS_GRID,
  IQ3S_GRID,
  IQ3XXS_GRID,
  KSIGNS_IQ2XS,
  KVALUES_FP4,
  KVALUES_IQ4NL,
} from "./ggml_grids";

/** Bit j of the byte splatted in `s` (j = lane & 7) set: a lane mask. */
@inline function signMask(lo: i32, hi: i32): v128 {
  const s = i8x16.replace_lane(i8x16.splat(<i8>lo), 8, <i8>hi);
  const bytes = i8x16.shuffle(s, s, 0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8);
  const bit = v128.and(bytes, i8x16(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128));
  return v128.not(i8x16.eq(bit, i8x16.splat(0)));
}

/** Sixteen grid bytes (two 8-byte entries) with the sign bits applied, times `d`. */
@inline function storeSigned16(p: usize, g1: usize, g2: usize, s1: i32, s2: i32, d: v128): void {
  const g = i64x2.replace_lane(i64x2.splat(load<i64>(g1)), 1, load<i64>(g2));
  storeScaled(p, v128.bitselect(i8x16.neg(g), g, signMask(s1, s2)), d);
}

/** Sixteen bytes of four 4-byte grid entries, sign bits applied, times `d`. */
@inline function storeSigned4x4(
  p: usize, a: usize, b: usize, c: usize, e: usize, s1: i32, s2: i32, d: v128,
): void {
  let g = i32x4.splat(load<i32>(a));
  g = i32x4.replace_lane(g, 1, load<i32>(b));
  g = i32x4.replace_lane(g, 2, load<i32>(c));
  g = i32x4.replace_lane(g, 3, load<i32>(e));
  storeScaled(p, v128.bitselect(i8x16.neg(g), g, signMask(s1, s2)), d);
}

/** Decode `nb` IQ2_XXS blocks (66 bytes) at `src` into f32 at `dst`. */
export function decodeIq2Xxs(src: usize, dst: usize, nb: i32): void {
  for (let i = 0; i < nb; i++) {
    const x = src + <usize>i * 66;
    const d = f16ToF32(<i32>load<u16>(x));
    for (let ib = 0; ib < 8; ib++) {
      const q = x + 2 + <usize>ib * 8;
      const aux1 = load<u32>(q + 4);
      const db = f32x4.splat(d * (<f32>0.5 + <f32>(aux1 >> 28)) * <f32>0.25);
      const y = dst + (<usize>i * 256 + <usize>ib * 32) * 4;
      for (let l = 0; l < 4; l += 2) {
        storeSigned16(
          y + <usize>l * 32,
          IQ2XXS_GRID + <usize>load<u8>(q + l) * 8,
          IQ2XXS_GRID + <usize>load<u8>(q + l + 1) * 8,
          load<u8>(KSIGNS_IQ2XS + ((aux1 >> (7 * l)) & 127)),
          load<u8>(KSIGNS_IQ2XS + ((aux1 >> (7 * (l + 1))) & 127)),
          db,
        );
      }
    }
  }
}

/** Decode `nb` IQ2_XS blocks (74 bytes) at `src` into f32 at `dst`. */
export function decodeIq2Xs(src: usize, dst: usize, nb: i32): void {
  for (let i = 0; i < nb; i++) {
    const x = src + <usize>i * 74;
    const d = f16ToF32(<i32>load<u16>(x));
    for (let ib = 0; ib < 8; ib++) {
      const sc = <i32>load<u8>(x + 66 + ib);
      const y = dst + (<usize>i * 256 + <usize>ib * 32) * 4;
      for (let l = 0; l < 4; l += 2) {
        const s = l == 0 ? sc & 15 : sc >> 4;
        const db = f32x4.splat(d * (<f32>0.5 + <f32>s) * <f32>0.25);
        const q1 = <i32>load<u16>(x + 2 + (<usize>(4 * ib + l)) * 2);
        const q2 = <i32>load<u16>(x + 2 + (<usize>(4 * ib + l + 1)) * 2);
        storeSigned16(
          y + <usize>l * 32,
          IQ2XS_GRID + <usize>(q1 & 511) * 8,
          IQ2XS_GRID + <usize>(q2 & 511) * 8,
          load<u8>(KSIGNS_IQ2XS + (q1 >> 9)),
          load<u8>(KSIGNS_IQ2XS + (q2 >> 9)),
          db,
        );
      }
    }
  }
}

/** Decode `nb` IQ2_S blocks (82 bytes) at `src` into f32 at `dst`. */
export function decodeIq2S(src: usize, dst: usize, nb: i32): void {
  for (let i = 0; i < nb; i++) {
    const x = src + <usize>i * 82;
    const d = f16ToF32(<i32>load<u16>(x));
    for (let ib = 0; ib < 8; ib++) {
      const sc = <i32>load<u8>(x + 74 + ib);
      const h = <i32>load<u8>(x + 66 + ib);
      const qs = x + 2 + <usize>ib * 4;
      const signs = x + 34 + <usize>ib * 4;
      const y = dst + (<usize>i * 256 + <usize>ib * 32) * 4;
      for (let l = 0; l < 4; l += 2) {
        const s = l == 0 ? sc & 15 : sc >> 4;
        const db = f32x4.splat(d * (<f32>0.5 + <f32>s) * <f32>0.25);
        const i1 = <i32>load<u8>(qs + l) | ((h << (8 - 2 * l)) & 0x300);
        const i2 = <i32>load<u8>(qs + l + 1) | ((h << (6 - 2 * l)) & 0x300);
        storeSigned16(
          y + <usize>l * 32,
          IQ2S_GRID + <usize>i1 * 8,
          IQ2S_GRID + <usize>i2 * 8,
          load<u8>(signs + l),
          load<u8>(signs + l + 1),
          db,
        );
      }
    }
  }
}

/** Decode `nb` IQ3_XXS blocks (98 bytes) at `src` into f32 at `dst`. */
export function decodeIq3Xxs(src: usize, dst: usize, nb: i32): void {
  for (let i = 0; i < nb; i++) {
    const x = src + <usize>i * 98;
    const d = f16ToF32(<i32>load<u16>(x));
    for (let ib = 0; ib < 8; ib++) {
      const aux = load<u32>(x + 66 + <usize>ib * 4);
      const db = f32x4.splat(d * (<f32>0.5 + <f32>(aux >> 28)) * <f32>0.5);
      const q = x + 2 + <usize>ib * 8;
      const y = dst + (<usize>i * 256 + <usize>ib * 32) * 4;
      for (let l = 0; l < 4; l += 2) {
        storeSigned4x4(
          y + <usize>l * 32,
          IQ3XXS_GRID + <usize>load<u8>(q + 2 * l) * 4,
          IQ3XXS_GRID + <usize>load<u8>(q + 2 * l + 1) * 4,
          IQ3XXS_GRID + <usize>load<u8>(q + 2 * l + 2) * 4,
          IQ3XXS_GRID + <usize>load<u8>(q + 2 * l + 3) * 4,
          load<u8>(KSIGNS_IQ2XS + ((aux >> (7 * l)) & 127)),
          load<u8>(KSIGNS_IQ2XS + ((aux >> (7 * (l + 1))) & 127)),
          db,
        );
      }
    }
  }
}

/** Decode `nb` IQ3_S blocks (110 bytes) at `src` into f32 at `dst`. */
export function decodeIq3S(src: usize, dst: usize, nb: i32): void {
  for (let i = 0; i < nb; i++) {
    const x = src + <usize>i * 110;
    const d = f16ToF32(<i32>load<u16>(x));
    for (let ib = 0; ib < 8; ib++) {
      const sc = <i32>load<u8>(x + 106 + (ib >> 1));
      const k: i32 = 1 + 2 * ((ib & 1) == 0 ? sc & 15 : sc >> 4);
      const db = f32x4.splat(d * <f32>k);
      const h = <i32>load<u8>(x + 66 + ib);
      const q = x + 2 + <usize>ib * 8;
      const signs = x + 74 + <usize>ib * 4;
      const y = dst + (<usize>i * 256 + <usize>ib * 32) * 4;
      for (let l = 0; l < 4; l += 2) {
        storeSigned4x4(
          y + <usize>l * 32,
          IQ3S_GRID + <usize>(<i32>load<u8>(q + 2 * l) | ((h << (8 - 2 * l)) & 256)) * 4,
          IQ3S_GRID + <usize>(<i32>load<u8>(q + 2 * l + 1) | ((h << (7 - 2 * l)) & 256)) * 4,
          IQ3S_GRID + <usize>(<i32>load<u8>(q + 2 * l + 2) | ((h << (6 - 2 * l)) & 256)) * 4,
          IQ3S_GRID + <usize>(<i32>load<u8>(q + 2 * l + 3) | ((h << (5 - 2 * l)) & 256)) * 4,
          load<u8>(signs + l),
          load<u8>(signs + l + 1),
          db,
        );
      }
    }
  }
}

/** Eight signed grid values plus `delta`, times `dl`: `dl * (grid[j] + delta)`. */
@inline function storeIq1(p: usize, idx: i32, dl: v128, delta: v128): void {
  const g = i16x8.extend_low_i8x16_s(v128.load64_zero(IQ1S_GRID + <usize>idx * 8));
  const lo = f32x4.add(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(g)), delta);
  const hi = f32x4.add(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(g)), delta);
  v128.store(p, f32x4.mul(dl, lo));
  v128.store(p + 16, f32x4.mul(dl, hi));
}

/** Decode `nb` IQ1_S blocks (50 bytes) at `src` into f32 at `dst`. */
export function decodeIq1S(src: usize, dst: usize, nb: i32): void {
  for (let i = 0; i < nb; i++) {
    const x = src + <usize>i * 50;
    const d = f16ToF32(<i32>load<u16>(x));
    for (let ib = 0; ib < 8; ib++) {
      const qh = <i32>load<u16>(x + 34 + <usize>ib * 2);
      const k: i32 = 2 * ((qh >> 12) & 7) + 1;
      const dl = f32x4.splat(d * <f32>k);
      const delta = f32x4.splat((qh & 0x8000) != 0 ? <f32>-0.125 : <f32>0.125);
      const y = dst + (<usize>i * 256 + <usize>ib * 32) * 4;
      for (let l = 0; l < 4; l++) {
        const idx = <i32>load<u8>(x + 2 + <usize>(4 * ib + l)) | (((qh >> (3 * l)) & 7) << 8);
        storeIq1(y + <usize>l * 32, idx, dl, delta);
      }
    }
  }
}

/** Decode `nb` IQ1_M blocks (56 bytes) at `src` into f32 at `dst`. */
export function decodeIq1M(src: usize, dst: usize, nb: i32): void {
  const pos = f32x4.splat(<f32>0.125);
  const neg = f32x4.splat(<f32>-0.125);
  for (let i = 0; i < nb; i++) {
    const x = src + <usize>i * 56;
    const s0 = <i32>load<u16>(x + 48);
    const s1 = <i32>load<u16>(x + 50);
    const s2 = <i32>load<u16>(x + 52);
    const s3 = <i32>load<u16>(x + 54);
    const d = f16ToF32((s0 >> 12) | ((s1 >> 8) & 0x00f0) | ((s2 >> 4) & 0x0f00) | (s3 & 0xf000));
    for (let ib = 0; ib < 8; ib++) {
      const s = <i32>load<u16>(x + 48 + <usize>(ib >> 1) * 2);
      const shift = 6 * (ib & 1);
      const k1: i32 = 2 * ((s >> shift) & 7) + 1;
      const k2: i32 = 2 * ((s >> (shift + 3)) & 7) + 1;
      const dl1 = f32x4.splat(d * <f32>k1);
      const dl2 = f32x4.splat(d * <f32>k2);
      const qs = x + <usize>ib * 4;
      const h0 = <i32>load<u8>(x + 32 + <usize>ib * 2);
      const h1 = <i32>load<u8>(x + 33 + <usize>ib * 2);
      const y = dst + (<usize>i * 256 + <usize>ib * 32) * 4;
      storeIq1(y, <i32>load<u8>(qs) | ((h0 << 8) & 0x700), dl1, (h0 & 0x08) != 0 ? neg : pos);
      storeIq1(y + 32, <i32>load<u8>(qs + 1) | ((h0 << 4) & 0x700), dl1, (h0 & 0x80) != 0 ? neg : pos);
      storeIq1(y + 64, <i32>load<u8>(qs + 2) | ((h1 << 8) & 0x700), dl2, (h1 & 0x08) != 0 ? neg : pos);
      storeIq1(y + 96, <i32>load<u8>(qs + 3) | ((h1 << 4) & 0x700), dl2, (h1 & 0x80) != 0 ? neg : pos);
    }
  }
}

/** Sixteen 4-bit indices (low nibbles of `q`, or high) looked up in a 16-entry i8 table. */
@inline function lookup16(table: v128, q: v128, high: bool): v128 {
  const idx = high ? i8x16.shr_u(q, 4) : v128.and(q, i8x16.splat(15));
  return i8x16.swizzle(table, idx);
}

/** Decode `nb` IQ4_NL blocks (18 bytes) at `src` into f32 at `dst`. */
export function decodeIq4Nl(src: usize, dst: usize, nb: i32): void {
  const table = v128.load(KVALUES_IQ4NL);
  for (let i = 0; i < nb; i++) {
    const x = src + <usize>i * 18;
    const y = dst + <usize>i * 128;
    const d = f32x4.splat(f16ToF32(<i32>load<u16>(x)));
    const q = v128.load(x + 2);
    storeScaled(y, lookup16(table, q, false), d);
    storeScaled(y + 64, lookup16(table, q, true), d);
  }
}

/** Decode `nb` IQ4_XS blocks (136 bytes) at `src` into f32 at `dst`. */
export function decodeIq4Xs(src: usize, dst: usize, nb: i32): void {
  const table = v128.load(KVALUES_IQ4NL);
  for (let i = 0; i < nb; i++) {
    const x = src + <usize>i * 136;
    const d = f16ToF32(<i32>load<u16>(x));
    const scalesH = <i32>load<u16>(x + 2);
    for (let ib = 0; ib < 8; ib++) {
      const ls = ((<i32>load<u8>(x + 4 + (ib >> 1)) >> (4 * (ib & 1))) & 15) |
        (((scalesH >> (2 * ib)) & 3) << 4);
      const dl = f32x4.splat(d * <f32>(ls - 32));
      const q = v128.load(x + 8 + <usize>ib * 16);
      const y = dst + (<usize>i * 256 + <usize>ib * 32) * 4;
      storeScaled(y, lookup16(table, q, false), dl);
      storeScaled(y + 64, lookup16(table, q, true), dl);
    }
  }
}

/** ggml_e8m0_to_fp32_half: 2^(e − 128) from its bits (subnormal below e = 2). */
@inline export function e8m0Half(e: i32): f32 {
  return reinterpret<f32>(e < 2 ? <u32>0x00200000 << e : <u32>(e - 1) << 23);
}

/** Decode `nb` MXFP4 blocks (17 bytes) at `src` into f32 at `dst`. */
export function decodeMxfp4(src: usize, dst: usize, nb: i32): void {
  const table = v128.load(KVALUES_FP4);
  for (let i = 0; i < nb; i++) {
    const x = src + <usize>i * 17;
    const y = dst + <usize>i * 128;
    const d = f32x4.splat(e8m0Half(<i32>load<u8>(x)));
    const q = v128.load(x + 1);
    storeScaled(y, lookup16(table, q, false), d);
    storeScaled(y + 64, lookup16(table, q, true), d);
  }
}

/** ggml_ue4m3_to_fp32: the sign bit ignored, 0x7F reads as 0, halved. */
@inline function ue4m3Half(x: i32): f32 {
  if (x == 0 || x == 0x7f) return <f32>0;
  const exp = (x >> 3) & 15;
  const man = x & 7;
  const raw = exp == 0
    ? <f32>man * reinterpret<f32>(<u32>(127 - 9) << 23)
    : (<f32>1 + <f32>man / <f32>8) * reinterpret<f32>(<u32>(127 + exp - 7) << 23);
  return raw * <f32>0.5;
}

/** Decode `nb` NVFP4 blocks (36 bytes) at `src` into f32 at `dst`. */
export function decodeNvfp4(src: usize, dst: usize, nb: i32): void {
  const table = v128.load(KVALUES_FP4);
  for (let i = 0; i < nb; i++) {
    const x = src + <usize>i * 36;
    for (let s = 0; s < 4; s++) {
      const d = f32x4.splat(ue4m3Half(<i32>load<u8>(x + s)));
      const q = v128.load64_zero(x + 4 + <usize>s * 8);
      // Low nibbles are values 0–7 of the sub-block, high nibbles 8–15.
      const idx = i8x16.shuffle(
        v128.and(q, i8x16.splat(15)), i8x16.shr_u(q, 4),
        0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23,
      );
      storeScaled(dst + (<usize>i * 64 + <usize>s * 16) * 4, i8x16.swizzle(table, idx), d);
    }
  }
}

/** One base-3 digit of each byte as ggml extracts it, minus 1: `(((q * pow) mod 256) * 3 >> 8) - 1`. */
@inline function trits(q: v128, pow: i32): v128 {
  const p = i16x8.splat(<i16>pow);
  const m = i16x8.splat(255);
  const three = i16x8.splat(3);
  const lo = i16x8.shr_u(i16x8.mul(v128.and(i16x8.mul(i16x8.extend_low_i8x16_u(q), p), m), three), 8);
  const hi = i16x8.shr_u(i16x8.mul(v128.and(i16x8.mul(i16x8.extend_high_i8x16_u(q), p), m), three), 8);
  return i8x16.sub(i8x16.narrow_i16x8_u(lo, hi), i8x16.splat(1));
}

/** Decode `nb` TQ1_0 blocks (54 bytes) at `src` into f32 at `dst`. */
export function decodeTq1_0(src: usize, dst: usize, nb: i32): void {
  for (let i = 0; i < nb; i++) {
    const x = src + <usize>i * 54;
    const d = f16ToF32(<i32>load<u16>(x + 52));
    const dv = f32x4.splat(d);
    let y = dst + <usize>i * 1024;
    const a = v128.load(x);
    const b = v128.load(x + 16);
    const c = v128.load(x + 32);
    let pow: i32 = 1;
    // 32 bytes × 5 trits, then 16 bytes × 5 trits.
    for (let n = 0; n < 5; n++) {
      storeScaled(y, trits(a, pow), dv);
      storeScaled(y + 64, trits(b, pow), dv);
      y += 128;
      pow *= 3;
    }
    pow = 1;
    for (let n = 0; n < 5; n++) {
      storeScaled(y, trits(c, pow), dv);
      y += 64;
      pow *= 3;
    }
    // The 4 qh bytes × 4 trits.
    pow = 1;
    for (let n = 0; n < 4; n++) {
      for (let j = 0; j < 4; j++) {
        store<f32>(y, <f32>(((((<i32>load<u8>(x + 48 + j) * pow) & 255) * 3) >> 8) - 1) * d);
        y += 4;
      }
      pow *= 3;
    }
  }
}

/** Decode `nb` TQ2_0 blocks (66 bytes) at `src` into f32 at `dst`. */
export function decodeTq2_0(src: usize, dst: usize, nb: i32): void {
  const m3 = i8x16.splat(3);
  const one = i8x16.splat(1);
  for (let i = 0; i < nb; i++) {
    const x = src + <usize>i * 66;
    const d = f32x4.splat(f16ToF32(<i32>load<u16>(x + 64)));
    let y = dst + <usize>i * 1024;
    for (let j = 0; j < 64; j += 32) {
      const a = v128.load(x + j);
      const b = v128.load(x + j + 16);
      for (let l = 0; l < 4; l++) {
        storeScaled(y, i8x16.sub(v128.and(i8x16.shr_u(a, 2 * l), m3), one), d);
        storeScaled(y + 64, i8x16.sub(v128.and(i8x16.shr_u(b, 2 * l), m3), one), d);
        y += 128;
      }
    }
  }
}

/** Decode `nb` Q1_0 blocks (18 bytes: f16 d, 128 sign bits) at `src` into f32 at `dst`. */
export function decodeQ1_0(src: usize, dst: usize, nb: i32): void {
  for (let i = 0; i < nb; i++) {
    const x = src + <usize>i * 18;
    const d = f16ToF32(<i32>load<u16>(x));
    const y = dst + <usize>i * 512;
    for (let k = 0; k < 16; k += 2) {
      // Sixteen values: a 0 bit is -d, a 1 bit is d (±1 times d, exact).
      const ones = signMask(<i32>load<u8>(x + 2 + k), <i32>load<u8>(x + 3 + k));
      storeScaled(y + <usize>k * 32, v128.bitselect(i8x16.splat(1), i8x16.splat(-1), ones), f32x4.splat(d));
    }
  }
}

/** Decode `nb` Q2_0 blocks (18 bytes: f16 d, 64 2-bit values) at `src` into f32 at `dst`. */
export function decodeQ2_0(src: usize, dst: usize, nb: i32): void {
  // Value j is bits 2(j & 3) of byte j >> 2: each byte four times, then its two bits.
  const loBit = i8x16(1, 4, 16, 64, 1, 4, 16, 64, 1, 4, 16, 64, 1, 4, 16, 64);
  const hiBit = i8x16(2, 8, 32, -128, 2, 8, 32, -128, 2, 8, 32, -128, 2, 8, 32, -128);
  const zero = i8x16.splat(0);
  const one = i8x16.splat(1);
  for (let i = 0; i < nb; i++) {
    const x = src + <usize>i * 18;
    const d = f32x4.splat(f16ToF32(<i32>load<u16>(x)));
    const q = v128.load(x + 2);
    const y = dst + <usize>i * 256;
    for (let k = 0; k < 4; k++) {
      const base = <i8>(4 * k);
      const spread = i8x16.swizzle(q, i8x16.add(i8x16.splat(base), i8x16(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3)));
      // 0 − mask is 1 where a bit is set: q − 1 = 2·hi + lo − 1.
      const hi = i8x16.sub(zero, v128.not(i8x16.eq(v128.and(spread, hiBit), zero)));
      const lo = i8x16.sub(zero, v128.not(i8x16.eq(v128.and(spread, loBit), zero)));
      storeScaled(y + <usize>k * 64, i8x16.sub(i8x16.add(i8x16.add(hi, hi), lo), one), d);
    }
  }
}
