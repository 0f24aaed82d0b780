// AssemblyScript: Q5_K encoder, byte-identical with llama.cpp's
// quantize_row_q5_K_ref (and aprkit's TypeScript port in ../../q5_k.ts).
// The fit is k_scale_min.ts' (levels 0..31); this splits each level into a
// nibble and a fifth bit.

import { fitScaleMinSuperBlock, fitScaleMinWeighted, L } from "./k_scale_min";

/** Lanes holding 0 or 16 (bit 4) with that bit moved to bit `to`. */
@inline function moveBit4(v: v128, to: i32): v128 {
  return to >= 4 ? i8x16.shl(v, to - 4) : i8x16.shr_u(v, 4 - to);
}

/**
 * Encode `nb` super-blocks of f32 at `src` into Q5_K bytes at `dst`; with
 * importance weights (`qw` not 0: one per column of rows of `cols` values),
 * quantize_row_q5_K_impl.
 */
export function encodeQ5K(src: usize, dst: usize, nb: i32, qw: usize, cols: i32): void {
  const m15 = i8x16.splat(15);
  const m16 = i8x16.splat(16);
  for (let b = 0; b < nb; b++) {
    const y = dst + <usize>b * 176;
    const x = src + <usize>b * 1024;
    // make_qkx2_quants(32, 31, …, -0.5, 0.1, 15) as quantize_row_q5_K_ref, or _impl's weighted fit.
    if (qw != 0) fitScaleMinWeighted(x, y, 31, qw + <usize>((b * 256) % cols) * 4);
    else fitScaleMinSuperBlock(x, y, 31, <f32>-0.5, <f32>0.1, 15);
    // qh (y + 16, 32 bytes): bit 2k (2k + 1) of byte j is the fifth bit of
    // value j (j + 32) of the k-th 64-value pair; ql (y + 48): nibbles as Q4_K.
    for (let l = 0; l < 32; l += 16) {
      let qh = i8x16.splat(0);
      for (let k = 0; k < 4; k++) {
        const lo = v128.load(L + <usize>(64 * k + l));
        const hi = v128.load(L + <usize>(64 * k + l + 32));
        qh = v128.or(qh, moveBit4(v128.and(lo, m16), 2 * k));
        qh = v128.or(qh, moveBit4(v128.and(hi, m16), 2 * k + 1));
        v128.store(
          y + 48 + <usize>(32 * k + l),
          v128.or(v128.and(lo, m15), i8x16.shl(v128.and(hi, m15), 4)),
        );
      }
      v128.store(y + 16 + <usize>l, qh);
    }
  }
}
