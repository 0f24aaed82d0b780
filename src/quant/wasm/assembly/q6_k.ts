// AssemblyScript: Q6_K encoder, byte-identical with llama.cpp's
// quantize_row_q6_K_ref (and aprkit's TypeScript port in ../../q6_k.ts).
//
// make_qx_quants on four groups at a time is qx_quants.ts'. With an
// importance matrix (quantize_row_q6_K_impl) its weights replace x² in
// make_qx_quants; nothing else changes.

import { clamp4, f16ToF32, f32ToF16, nearestInt, nearestInt4 } from "./common";
import { loadGroups, SCALES, searchQx, winnerLevels } from "./qx_quants";
import { bytes16 } from "./k_pack";

const GROUP_MAX_EPS: f32 = <f32>1e-15;

const L: usize = memory.data(256, 16); // final levels (l + 32)

/**
 * Encode `nb` super-blocks of f32 at `src` into Q6_K bytes at `dst`; with
 * importance weights (`qw` not 0: one per column of rows of `cols` values),
 * quantize_row_q6_K_impl.
 */
export function encodeQ6K(src: usize, dst: usize, nb: i32, qw: usize, cols: i32): void {
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
      const l0 = i32x4.add(clamp4(nearestInt4(f32x4.div(v128.load(xs), dv)), -32, 31), i32x4.splat(32));
      const l1 = i32x4.add(clamp4(nearestInt4(f32x4.div(v128.load(xs + 16), dv)), -32, 31), i32x4.splat(32));
      const l2 = i32x4.add(clamp4(nearestInt4(f32x4.div(v128.load(xs + 32), dv)), -32, 31), i32x4.splat(32));
      const l3 = i32x4.add(clamp4(nearestInt4(f32x4.div(v128.load(xs + 48), dv)), -32, 31), i32x4.splat(32));
      v128.store(lj, bytes16(l0, l1, l2, l3));
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
