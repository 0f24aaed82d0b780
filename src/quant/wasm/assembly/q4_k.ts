// AssemblyScript: Q4_K encoder, byte-identical with llama.cpp's
// quantize_row_q4_K_ref (and aprkit's TypeScript port in ../../q4_k.ts).
// The fit is k_scale_min.ts'; this packs the levels as nibbles.

import { fitScaleMinSuperBlock, fitScaleMinWeighted, L } from "./k_scale_min";

/**
 * Encode `nb` super-blocks of f32 at `src` into Q4_K bytes at `dst`; with
 * importance weights (`qw` not 0: one per column of rows of `cols` values),
 * quantize_row_q4_K_impl.
 */
export function encodeQ4K(src: usize, dst: usize, nb: i32, qw: usize, cols: i32): void {
  for (let b = 0; b < nb; b++) {
    const y = dst + <usize>b * 144;
    const x = src + <usize>b * 1024;
    // make_qkx2_quants(32, 15, …, -1, 0.1, 20) as quantize_row_q4_K_ref, or _impl's weighted fit.
    if (qw != 0) fitScaleMinWeighted(x, y, 15, qw + <usize>((b * 256) % cols) * 4);
    else fitScaleMinSuperBlock(x, y, 15, <f32>-1.0, <f32>0.1, 20);
    // 128 bytes of nibbles: sub-block 2k in the low half, 2k + 1 in the high half.
    let q = y + 16;
    for (let j = 0; j < 256; j += 64) {
      for (let l = 0; l < 32; l += 16) {
        const lo = v128.load(L + <usize>(j + l));
        const hi = v128.load(L + <usize>(j + l + 32));
        v128.store(q + <usize>l, v128.or(lo, i8x16.shl(hi, 4)));
      }
      q += 32;
    }
  }
}
