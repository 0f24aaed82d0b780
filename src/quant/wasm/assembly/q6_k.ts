// AssemblyScript: Q6_K encoder, byte-identical with llama.cpp's
// quantize_row_q6_K_ref (and aprkit's TypeScript port in ../../q6_k.ts).
//
// make_qx_quants on four groups at a time is qx_quants.ts'. With an
// importance matrix (quantize_row_q6_K_impl) its weights replace x² in
// make_qx_quants; nothing else changes.

import { f16ToF32, f32ToF16, nearestInt } from "./common";
import { loadGroups, SCALES, searchQx, winnerLevels } from "./qx_quants";
import { bytes16 } from "./k_pack";

const GROUP_MAX_EPS: f32 = <f32>1e-15;

const L: usize = memory.data(256, 16); // final levels (l + 32)
// The level loop's and the packing's constant vectors, loaded once per call:
// V8 rebuilds a v128.const at each use inside a loop (three instructions; six
// constants in the level loop were ~30% of encodeQ6K's samples outside the
// search). Rows: nearest_int's 1.5·2^23, its mantissa mask, its bias less 32
// (the level's l + 32 straight from the mantissa), i32 63, bytes 15, bytes 0x30.
const CONST: usize = memory.data<i32>([
  0x4b400000, 0x4b400000, 0x4b400000, 0x4b400000,
  0x7fffff, 0x7fffff, 0x7fffff, 0x7fffff,
  0x400000 - 32, 0x400000 - 32, 0x400000 - 32, 0x400000 - 32,
  63, 63, 63, 63,
  0x0f0f0f0f, 0x0f0f0f0f, 0x0f0f0f0f, 0x0f0f0f0f,
  0x30303030, 0x30303030, 0x30303030, 0x30303030,
], 16);

/**
 * nearest_int(x / d) clamped to −32..31, plus 32: the mantissa trick less
 * (bias − 32), then clamped to 0..63 (the same integers: the sum cannot
 * overflow); the lower clamp is left to bytes16's unsigned saturation.
 */
@inline function level6(x: v128, dv: v128, magic: v128, mant: v128, bias: v128, top: v128): v128 {
  const t = f32x4.add(f32x4.div(x, dv), magic);
  return i32x4.min_s(i32x4.sub(v128.and(t, mant), bias), top);
}

/**
 * Encode `nb` super-blocks of f32 at `src` into Q6_K bytes at `dst`; with
 * importance weights (`qw` not 0: one per column of rows of `cols` values),
 * quantize_row_q6_K_impl.
 */
export function encodeQ6K(src: usize, dst: usize, nb: i32, qw: usize, cols: i32): void {
  const magic = v128.load(CONST);
  const mant = v128.load(CONST + 16);
  const bias = v128.load(CONST + 32);
  const top = v128.load(CONST + 48);
  const m15 = v128.load(CONST + 64);
  const m30 = v128.load(CONST + 80);
  for (let b = 0; b < nb; b++) {
    const x = src + <usize>b * 1024;
    const y = dst + <usize>b * 210;
    const w: usize = qw == 0 ? 0 : qw + <usize>((b * 256) % cols) * 4;
    for (let g = 0; g < 4; g++) {
      const o = <usize>g * 256; // groups 4g..4g+3
      loadGroups(x + o, w == 0 ? 0 : w + o);
      searchQx(32, <usize>g * 16);
    }
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
        // C keeps the search's levels for this group.
        winnerLevels(xs, j, 32, lj);
        continue;
      }
      const dv = f32x4.splat(d);
      const l0 = level6(v128.load(xs), dv, magic, mant, bias, top);
      const l1 = level6(v128.load(xs + 16), dv, magic, mant, bias, top);
      const l2 = level6(v128.load(xs + 32), dv, magic, mant, bias, top);
      const l3 = level6(v128.load(xs + 48), dv, magic, mant, bias, top);
      v128.store(lj, bytes16(l0, l1, l2, l3));
    }
    // ql: low nibbles of (a, c) and (b, e); qh: the four high 2-bit pairs.
    // Levels are 0..63, so 16-bit shifts of masked bytes move no bit across
    // a byte (V8 builds i8x16 shifts from a 16-bit shift and a mask).
    let ql = y;
    let qh = y + 128;
    for (let j = 0; j < 256; j += 128) {
      for (let l = 0; l < 32; l += 16) {
        const a = v128.load(L + <usize>(j + l));
        const b2 = v128.load(L + <usize>(j + l + 32));
        const c = v128.load(L + <usize>(j + l + 64));
        const e = v128.load(L + <usize>(j + l + 96));
        v128.store(ql + <usize>l, v128.or(v128.and(a, m15), i16x8.shl(v128.and(c, m15), 4)));
        v128.store(ql + <usize>(l + 32), v128.or(v128.and(b2, m15), i16x8.shl(v128.and(e, m15), 4)));
        const h = v128.or(
          v128.or(i16x8.shr_u(v128.and(a, m30), 4), i16x8.shr_u(v128.and(b2, m30), 2)),
          v128.or(v128.and(c, m30), i16x8.shl(v128.and(e, m30), 2)),
        );
        v128.store(qh + <usize>l, h);
      }
      ql += 64;
      qh += 32;
    }
  }
}
