// This module is browser compatible.

/**
 * Encoders for ggml's 4-bit non-linear quants, IQ4_NL (blocks of 32: f16
 * scale, 16 bytes of indices into `kvalues_iq4nl`) and IQ4_XS (super-blocks of
 * 256: f16 scale, 6-bit sub-block scales, indices), ports of llama.cpp's
 * `quantize_iq4_nl` / `quantize_iq4_xs` (`quantize_row_iq4_nl_impl` with
 * `ntry = 7`, what `llama-quantize` runs), in f32 arithmetic rounded after
 * every operation as C does, so the bytes are ggml's. Importance weights are
 * optional for both (ggml weights by `x²` without them).
 *
 * @module
 */

import { KVALUES_IQ4NL } from "./_ggml_grids.ts";
import { f32ToF16 } from "./f16.ts";
import { nearestInt } from "./_round.ts";
import { countBlocks } from "./_count_blocks.ts";

const fr = Math.fround;
/** ggml's GROUP_MAX_EPS. */
const GROUP_MAX_EPS = fr(1e-15);
/** Scale candidates either side of the first fit (`ntry`). */
const NTRY = 7;
const V0 = KVALUES_IQ4NL[0]!;

/** ggml's `best_index_int8(16, kvalues_iq4nl, x)`: the nearest value's index, ties upward. */
function bestIndex(x: number): number {
  const val = KVALUES_IQ4NL;
  if (x <= V0) return 0;
  if (x >= val[15]!) return 15;
  let ml = 0;
  let mu = 15;
  while (mu - ml > 1) {
    const mav = (ml + mu) >> 1;
    if (x < val[mav]!) mu = mav;
    else ml = mav;
  }
  return fr(x - val[mu - 1]!) < fr(val[mu]! - x) ? mu - 1 : mu;
}

const L = new Uint8Array(256);
const WEIGHT = new Float32Array(32);
const SCALES = new Float32Array(8);

/**
 * One super-block of `sbs` values at `x[xo]` (`quantize_row_iq4_nl_impl`):
 * writes the levels to `L` and the sub-block scales to `SCALES`, returns the
 * super-block's f16 scale bits, and for IQ4_XS packs the 6-bit scales at `y[so]`.
 */
function quantizeSuperBlock(
  sbs: number,
  x: Float32Array,
  xo: number,
  qw: Float32Array | undefined,
  qo: number,
  y: Uint8Array,
  so: number,
): number {
  let sigma2 = 0;
  for (let j = 0; j < sbs; j++) sigma2 = fr(sigma2 + fr(x[xo + j]! * x[xo + j]!));
  sigma2 = fr(sigma2 * (2 / sbs));
  const nb = sbs / 32;
  let maxScale = 0;
  let amaxScale = 0;
  for (let ib = 0; ib < nb; ib++) {
    const xb = xo + ib * 32;
    for (let j = 0; j < 32; j++) {
      const v = x[xb + j]!;
      WEIGHT[j] = qw === undefined
        ? fr(v * v)
        : fr(qw[qo + ib * 32 + j]! * fr(Math.sqrt(fr(sigma2 + fr(v * v)))));
    }
    let amax = 0;
    let max = 0;
    for (let j = 0; j < 32; j++) {
      const ax = Math.abs(x[xb + j]!);
      if (ax > amax) {
        amax = ax;
        max = x[xb + j]!;
      }
    }
    if (amax < GROUP_MAX_EPS) {
      SCALES[ib] = 0;
      continue;
    }
    let d = fr(-max / V0);
    let id = fr(1 / d);
    let sumqx = 0;
    let sumq2 = 0;
    for (let j = 0; j < 32; j++) {
      const v = x[xb + j]!;
      const l = bestIndex(fr(id * v));
      L[ib * 32 + j] = l;
      const q = KVALUES_IQ4NL[l]!;
      const w = WEIGHT[j]!;
      sumqx = fr(sumqx + fr(fr(w * q) * v));
      sumq2 = fr(sumq2 + fr(fr(w * q) * q));
    }
    d = sumq2 > 0 ? fr(sumqx / sumq2) : 0;
    let best = fr(d * sumqx);
    for (let itry = -NTRY; itry <= NTRY; itry++) {
      id = fr((itry + V0) / max);
      sumqx = 0;
      sumq2 = 0;
      for (let j = 0; j < 32; j++) {
        const v = x[xb + j]!;
        const q = KVALUES_IQ4NL[bestIndex(fr(id * v))]!;
        const w = WEIGHT[j]!;
        sumqx = fr(sumqx + fr(fr(w * q) * v));
        sumq2 = fr(sumq2 + fr(fr(w * q) * q));
      }
      if (sumq2 > 0 && fr(sumqx * sumqx) > fr(best * sumq2)) {
        d = fr(sumqx / sumq2);
        best = fr(d * sumqx);
      }
    }
    SCALES[ib] = d;
    const absD = Math.abs(d);
    if (absD > amaxScale) {
      amaxScale = absD;
      maxScale = d;
    }
  }
  if (nb === 1) {
    const s = SCALES[0]!;
    const id = s !== 0 ? fr(1 / s) : 0;
    for (let j = 0; j < 32; j++) L[j] = bestIndex(fr(id * x[xo + j]!));
    return f32ToF16(s);
  }
  // IQ4_XS: 6-bit scales of one f16 step; the levels are refit to them.
  y.fill(0, so, so + 2 + nb / 2);
  const d = fr(-maxScale / 32);
  const id = d !== 0 ? fr(1 / d) : 0;
  for (let ib = 0; ib < nb; ib++) {
    let l = nearestInt(fr(id * SCALES[ib]!));
    l = Math.max(-32, Math.min(31, l));
    const dl = fr(d * l);
    const idl = dl !== 0 ? fr(1 / dl) : 0;
    for (let j = 0; j < 32; j++) L[ib * 32 + j] = bestIndex(fr(idl * x[xo + ib * 32 + j]!));
    l += 32;
    y[so + 2 + (ib >> 1)]! |= (l & 15) << (4 * (ib & 1));
    // scales_h: a little-endian u16, two bits per sub-block.
    const h = (l >> 4) << (2 * (ib % 8));
    y[so]! |= h & 255;
    y[so + 1]! |= h >> 8;
  }
  return f32ToF16(d);
}

/** Pack `n` levels (from `L`) as ggml does: element j and j + 16 of each 32 share a byte. */
function packNibbles(n: number, y: Uint8Array, o: number): void {
  for (let i = 0; i < n / 32; i++) {
    for (let j = 0; j < 16; j++) y[o + 16 * i + j] = L[32 * i + j]! | (L[32 * i + 16 + j]! << 4);
  }
}

function writeF16(y: Uint8Array, o: number, h: number): void {
  y[o] = h & 255;
  y[o + 1] = h >> 8;
}

/**
 * Quantize values to IQ4_NL blocks (18 bytes per 32 values), as llama.cpp's
 * `quantize_iq4_nl`.
 *
 * @param values Whole 32-value blocks; with `importance`, whole rows of `importance.length`.
 * @param out Destination of `values.length / 32 * 18` bytes.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values` is not whole blocks (or rows).
 *
 * @example Usage
 * ```ts
 * import { encodeIq4Nl } from "./iq4_encode.ts";
 * import { decodeIq4Nl } from "./i_quants.ts";
 * const values = new Float32Array(64).map((_, i) => Math.sin(i));
 * const back = decodeIq4Nl(encodeIq4Nl(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.2));
 * ```
 */
export function encodeIq4Nl(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const nb = countBlocks("IQ4_NL", values, importance);
  const y = out ?? new Uint8Array(nb * 18);
  const cols = importance?.length ?? 32;
  for (let i = 0; i < nb; i++) {
    const o = i * 18;
    writeF16(y, o, quantizeSuperBlock(32, values, i * 32, importance, (i * 32) % cols, y, o));
    packNibbles(32, y, o + 2);
  }
  return y;
}

/**
 * Quantize values to IQ4_XS super-blocks (136 bytes per 256 values), as
 * llama.cpp's `quantize_iq4_xs`.
 *
 * @param values Whole 256-value super-blocks; with `importance`, whole rows of `importance.length`.
 * @param out Destination of `values.length / 256 * 136` bytes.
 * @param importance One weight per column of a row (an importance matrix entry).
 * @returns `out`, or a new array when `out` is not given.
 * @throws {RangeError} When `values` is not whole super-blocks (or rows).
 *
 * @example Usage
 * ```ts
 * import { encodeIq4Xs } from "./iq4_encode.ts";
 * import { decodeIq4Xs } from "./i_quants.ts";
 * const values = new Float32Array(256).map((_, i) => Math.sin(i));
 * const back = decodeIq4Xs(encodeIq4Xs(values));
 * console.assert(back.every((v, i) => Math.abs(v - values[i]!) < 0.2));
 * ```
 */
export function encodeIq4Xs(
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
): Uint8Array {
  const nb = countBlocks("IQ4_XS", values, importance);
  const y = out ?? new Uint8Array(nb * 136);
  const cols = importance?.length ?? 256;
  for (let i = 0; i < nb; i++) {
    const o = i * 136;
    // d (2), scales_h (2), scales_l (4), qs (128).
    writeF16(
      y,
      o,
      quantizeSuperBlock(256, values, i * 256, importance, (i * 256) % cols, y, o + 2),
    );
    packNibbles(256, y, o + 8);
  }
  return y;
}
