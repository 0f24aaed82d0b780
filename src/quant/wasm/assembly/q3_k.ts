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

import {
  clamp4, f16ToF32, f32ToF16, nearestInt, nearestInt4, select4, superBlockWeights,
} from "./common";
import { bytes16, packTwoBits } from "./k_pack";
import {
  loadGroups, MAX, SCALES, searchQx, tinyLanes, W, winnerLevels, WX, XT,
} from "./qx_quants";

// Scratch (static memory, 16-byte aligned).
const L: usize = memory.data(256, 16); // levels 0..7 of the super-block
const WEIGHTS: usize = memory.data(256 * 4, 16); // the weighted fit's qw·sqrt(σ² + x²)
const SW: usize = memory.data(16 * 4, 16); // each sub-block's total weight
const LS: usize = memory.data(16, 16); // the scales' levels (0..63)
// The sixteen scales as group 0 of four (the others zero), then their weights.
const SCALES_GROUP: usize = memory.data(2 * 64 * 4, 16);

// make_q3_quants' chains, one per group of four sub-blocks (lanes), side by
// side: each value's move waits on the one before it (a division and a dozen
// dependent operations), so one chain at a time leaves the core idle; the
// four chains of a super-block, stepped in turn, overlap. Each group's own
// sequence is C's.
const XT4: usize = memory.data(4 * 16 * 16, 16); // each group's XT
const W4: usize = memory.data(4 * 16 * 16, 16); // each group's W (x²)
const WX4: usize = memory.data(4 * 16 * 16, 16); // each group's W·x
const QT4: usize = memory.data(4 * 16 * 16, 16); // each group's levels (i32 lanes, -4..3)
const SUMS4: usize = memory.data(4 * 32, 16); // each group's sumlx, suml2
const MAX4: usize = memory.data(4 * 16, 16); // each group's max (loadGroups)
const CHANGED4: usize = memory.data(4 * 16, 16); // lanes changed in this pass, per group

/** make_q3_quants' first levels and sums for group `g` (sub-blocks 4g..4g+3 at `x`). */
@inline function q3Start(x: usize, g: i32): void {
  loadGroups(x + <usize>g * 256, 0);
  const o = <usize>g * 256;
  memory.copy(XT4 + o, XT, 256);
  memory.copy(W4 + o, W, 256);
  memory.copy(WX4 + o, WX, 256);
  const max = v128.load(MAX);
  v128.store(MAX4 + <usize>g * 16, max);
  const iscale = f32x4.div(f32x4.splat(<f32>-4.0), max);
  let sumlx = f32x4.splat(0);
  let suml2 = sumlx;
  for (let i = 0; i < 16; i++) {
    const v = v128.load(XT + <usize>i * 16);
    const l = clamp4(nearestInt4(f32x4.mul(iscale, v)), -4, 3);
    v128.store(QT4 + o + <usize>i * 16, l);
    const lf = f32x4.convert_i32x4_s(l);
    sumlx = f32x4.add(sumlx, f32x4.mul(v128.load(WX + <usize>i * 16), lf));
    suml2 = f32x4.add(suml2, f32x4.mul(f32x4.mul(v128.load(W + <usize>i * 16), lf), lf));
  }
  v128.store(SUMS4 + <usize>g * 32, sumlx);
  v128.store(SUMS4 + <usize>g * 32 + 16, suml2);
}

/** make_q3_quants' move of value `i` in group `g`'s pass. */
@inline function q3Move(g: i32, i: i32): void {
  const zero = f32x4.splat(0);
  const p = <usize>g * 256 + <usize>i * 16;
  const s = SUMS4 + <usize>g * 32;
  const sumlx = v128.load(s);
  const suml2 = v128.load(s + 16);
  const v = v128.load(XT4 + p);
  const w = v128.load(W4 + p);
  const wx = v128.load(WX4 + p);
  const li = v128.load(QT4 + p);
  const lf = f32x4.convert_i32x4_s(li);
  let slx = f32x4.sub(sumlx, f32x4.mul(wx, lf));
  const pos = f32x4.gt(slx, zero);
  let sl2 = f32x4.sub(suml2, f32x4.mul(f32x4.mul(w, lf), lf));
  const nl = clamp4(nearestInt4(f32x4.div(f32x4.mul(v, sl2), slx)), -4, 3);
  const nlf = f32x4.convert_i32x4_s(nl);
  slx = f32x4.add(slx, f32x4.mul(wx, nlf));
  sl2 = f32x4.add(sl2, f32x4.mul(f32x4.mul(w, nlf), nlf));
  const better = f32x4.gt(
    f32x4.mul(f32x4.mul(slx, slx), suml2),
    f32x4.mul(f32x4.mul(sumlx, sumlx), sl2),
  );
  const take = v128.and(
    v128.and(pos, i32x4.ne(nl, li)),
    v128.and(f32x4.gt(sl2, zero), better),
  );
  v128.store(QT4 + p, select4(nl, li, take));
  v128.store(s, select4(slx, sumlx, take));
  v128.store(s + 16, select4(sl2, suml2, take));
  const c = CHANGED4 + <usize>g * 16;
  v128.store(c, v128.or(v128.load(c), take));
}

/** Group `g`'s scales to SCALES and its levels + 4 (0 where all zero, as C) to L. */
@inline function q3Finish(g: i32): void {
  const zero = f32x4.splat(0);
  const sumlx = v128.load(SUMS4 + <usize>g * 32);
  const suml2 = v128.load(SUMS4 + <usize>g * 32 + 16);
  const tiny = tinyLanes(v128.load(MAX4 + <usize>g * 16));
  const scale = select4(f32x4.div(sumlx, suml2), zero, f32x4.gt(suml2, zero));
  v128.store(SCALES + <usize>g * 16, select4(zero, scale, tiny));
  const four = i32x4.splat(4);
  const out = L + <usize>g * 64;
  const q = QT4 + <usize>g * 256;
  for (let i = 0; i < 16; i++) {
    const l = select4(i32x4.splat(0), i32x4.add(v128.load(q + <usize>i * 16), four), tiny);
    store<u8>(out + <usize>i, <u8>i32x4.extract_lane(l, 0));
    store<u8>(out + <usize>(16 + i), <u8>i32x4.extract_lane(l, 1));
    store<u8>(out + <usize>(32 + i), <u8>i32x4.extract_lane(l, 2));
    store<u8>(out + <usize>(48 + i), <u8>i32x4.extract_lane(l, 3));
  }
}

/**
 * make_q3_quants(16, 4, x, L, do_rmse = true) on the sixteen sub-blocks at
 * `x`, as four groups of four lanes. A group whose pass changed nothing
 * would change nothing again (its state is what the pass started from), so
 * it sits out the later passes; passes run until none changes (at most five,
 * as C).
 */
function q3Groups(x: usize): void {
  for (let g = 0; g < 4; g++) q3Start(x, g);
  let live = 15; // bit g: group g changed in its last pass
  for (let itry = 0; itry < 5 && live != 0; itry++) {
    memory.fill(CHANGED4, 0, 64);
    if (live == 15) {
      for (let i = 0; i < 16; i++) {
        q3Move(0, i);
        q3Move(1, i);
        q3Move(2, i);
        q3Move(3, i);
      }
    } else {
      for (let i = 0; i < 16; i++) {
        for (let g = 0; g < 4; g++) {
          if ((live & (1 << g)) != 0) q3Move(g, i);
        }
      }
    }
    let next = 0;
    for (let g = 0; g < 4; g++) {
      if (v128.any_true(v128.load(CHANGED4 + <usize>g * 16))) next |= 1 << g;
    }
    live = next;
  }
  for (let g = 0; g < 4; g++) q3Finish(g);
}

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
  q3Groups(x);
  let maxScale: f32 = 0;
  let amax: f32 = 0;
  for (let j = 0; j < 16; j++) {
    const sc = load<f32>(SCALES + <usize>j * 4);
    if (Mathf.abs(sc) > amax) {
      amax = Mathf.abs(sc);
      maxScale = sc;
    }
  }
  if (maxScale == 0) return 0;
  const iscale = <f32>-32.0 / maxScale;
  for (let j = 0; j < 16; j++) {
    // int8_t l = nearest_int(…); MAX(-32, MIN(31, l)) + 32.
    let l = (nearestInt(iscale * load<f32>(SCALES + <usize>j * 4)) << 24) >> 24;
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
      const xs = x + <usize>j * 64;
      if (d == 0) {
        // C keeps make_q3_quants' levels (already in L), or make_qx_quants'.
        if (qw != 0) winnerLevels(xs, j, 4, L + <usize>j * 16);
        continue;
      }
      const dv = f32x4.splat(d);
      const four = i32x4.splat(4);
      const l0 = i32x4.add(clamp4(nearestInt4(f32x4.div(v128.load(xs), dv)), -4, 3), four);
      const l1 = i32x4.add(clamp4(nearestInt4(f32x4.div(v128.load(xs + 16), dv)), -4, 3), four);
      const l2 = i32x4.add(clamp4(nearestInt4(f32x4.div(v128.load(xs + 32), dv)), -4, 3), four);
      const l3 = i32x4.add(clamp4(nearestInt4(f32x4.div(v128.load(xs + 48), dv)), -4, 3), four);
      v128.store(L + <usize>j * 16, bytes16(l0, l1, l2, l3));
    }
    // High bits: value j's in bit j / 32 of byte j % 32; the low two bits stay.
    const three = i8x16.splat(3);
    for (let l = 0; l < 32; l += 16) {
      let hm = i8x16.splat(0);
      for (let k = 0; k < 8; k++) {
        const p = L + <usize>(32 * k + l);
        const v = v128.load(p);
        hm = v128.or(hm, v128.and(i8x16.gt_u(v, three), i8x16.splat(<i8>(<i32>1 << k))));
        v128.store(p, v128.and(v, three));
      }
      v128.store(y + <usize>l, hm);
    }
    packTwoBits(L, y + 32);
  }
}
