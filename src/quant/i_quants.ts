// This module is browser compatible.

/**
 * Dequantizers for ggml's i-quants (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS), bit-exact ports of llama.cpp's
 * `dequantize_row_iq*` in `ggml-quants.c` (pinned commit in `_ggml_grids.ts`).
 *
 * Every intermediate that C rounds to f32 is rounded here with `Math.fround`
 * in the same order; the final product is rounded once on store. The grids
 * and sign tables are generated from `ggml-common.h` (`_ggml_grids.ts`).
 * aprkit reads these types; it does not write them (no encoder).
 *
 * Each function decodes `floor(bytes.length / blockBytes)` whole blocks into
 * `out`; `bytes` may start at any offset.
 *
 * @module
 */

import { f16Table } from "./f16.ts";
import {
  IQ1S_GRID,
  IQ2S_GRID,
  IQ2XS_GRID,
  IQ2XXS_GRID,
  IQ3S_GRID,
  IQ3XXS_GRID,
  KMASK_IQ2XS,
  KSIGNS_IQ2XS,
  KVALUES_IQ4NL,
} from "./_ggml_grids.ts";

const fr = Math.fround;
/** ggml's IQ1S_DELTA and IQ1M_DELTA. */
const IQ1_DELTA = 0.125;

function u16(b: Uint8Array, o: number): number {
  return b[o]! | (b[o + 1]! << 8);
}

function u32(b: Uint8Array, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
}

function blocks(bytes: Uint8Array, blockBytes: number): number {
  return Math.floor(bytes.length / blockBytes);
}

/** Eight grid bytes times `dl`, sign bit j of `signs` negating element j (ggml's iq2 inner loop). */
function signedGrid8(
  y: Float32Array,
  at: number,
  dl: number,
  grid: Uint8Array,
  g: number,
  signs: number,
): void {
  for (let j = 0; j < 8; j++) {
    const v = fr(dl * grid[g + j]!);
    y[at + j] = signs & KMASK_IQ2XS[j]! ? -v : v;
  }
}

/**
 * Dequantize IQ2_XXS blocks (66 bytes: f16 d, 32 × u16 of grid indices, signs and scales).
 *
 * @param bytes Whole blocks.
 * @param dest Destination of 256 values per block.
 * @returns `dest`, or a new array.
 */
export function decodeIq2Xxs(bytes: Uint8Array, dest?: Float32Array): Float32Array {
  const out = dest ?? new Float32Array(Math.floor(bytes.length / 66) * 256);
  const t = f16Table();
  const nb = blocks(bytes, 66);
  for (let i = 0; i < nb; i++) {
    const o = i * 66;
    const d = t[u16(bytes, o)]!;
    for (let ib = 0; ib < 8; ib++) {
      const q = o + 2 + 8 * ib;
      const aux1 = u32(bytes, q + 4);
      const db = fr(fr(d * fr(0.5 + (aux1 >>> 28))) * 0.25);
      for (let l = 0; l < 4; l++) {
        const signs = KSIGNS_IQ2XS[(aux1 >>> (7 * l)) & 127]!;
        signedGrid8(out, i * 256 + ib * 32 + l * 8, db, IQ2XXS_GRID, 8 * bytes[q + l]!, signs);
      }
    }
  }
  return out;
}

/**
 * Dequantize IQ2_XS blocks (74 bytes: f16 d, 32 × u16 (9-bit grid index, 7-bit sign index), 8 scale bytes).
 *
 * @param bytes Whole blocks.
 * @param dest Destination of 256 values per block.
 * @returns `dest`, or a new array.
 */
export function decodeIq2Xs(bytes: Uint8Array, dest?: Float32Array): Float32Array {
  const out = dest ?? new Float32Array(Math.floor(bytes.length / 74) * 256);
  const t = f16Table();
  const nb = blocks(bytes, 74);
  for (let i = 0; i < nb; i++) {
    const o = i * 74;
    const d = t[u16(bytes, o)]!;
    for (let ib = 0; ib < 8; ib++) {
      const sc = bytes[o + 66 + ib]!;
      const db0 = fr(fr(d * fr(0.5 + (sc & 0xf))) * 0.25);
      const db1 = fr(fr(d * fr(0.5 + (sc >>> 4))) * 0.25);
      for (let l = 0; l < 4; l++) {
        const q = u16(bytes, o + 2 + 2 * (4 * ib + l));
        const signs = KSIGNS_IQ2XS[q >>> 9]!;
        const at = i * 256 + ib * 32 + l * 8;
        signedGrid8(out, at, l < 2 ? db0 : db1, IQ2XS_GRID, 8 * (q & 511), signs);
      }
    }
  }
  return out;
}

/**
 * Dequantize IQ2_S blocks (82 bytes: f16 d, 32 grid bytes, 32 sign bytes, 8 high-bit bytes, 8 scale bytes).
 *
 * @param bytes Whole blocks.
 * @param dest Destination of 256 values per block.
 * @returns `dest`, or a new array.
 */
export function decodeIq2S(bytes: Uint8Array, dest?: Float32Array): Float32Array {
  const out = dest ?? new Float32Array(Math.floor(bytes.length / 82) * 256);
  const t = f16Table();
  const nb = blocks(bytes, 82);
  for (let i = 0; i < nb; i++) {
    const o = i * 82;
    const d = t[u16(bytes, o)]!;
    const qs = o + 2;
    const signs = qs + 32;
    const qh = o + 66;
    const scales = o + 74;
    for (let ib = 0; ib < 8; ib++) {
      const sc = bytes[scales + ib]!;
      const db0 = fr(fr(d * fr(0.5 + (sc & 0xf))) * 0.25);
      const db1 = fr(fr(d * fr(0.5 + (sc >>> 4))) * 0.25);
      const h = bytes[qh + ib]!;
      for (let l = 0; l < 4; l++) {
        const idx = bytes[qs + 4 * ib + l]! | ((h << (8 - 2 * l)) & 0x300);
        const at = i * 256 + ib * 32 + l * 8;
        signedGrid8(out, at, l < 2 ? db0 : db1, IQ2S_GRID, 8 * idx, bytes[signs + 4 * ib + l]!);
      }
    }
  }
  return out;
}

/** Two 4-value grid entries times `db`, sign bits 0–7 of `signs` (ggml's iq3 inner loop). */
function signedGrid4x2(
  y: Float32Array,
  at: number,
  db: number,
  grid: Uint8Array,
  g1: number,
  g2: number,
  signs: number,
): void {
  for (let j = 0; j < 4; j++) {
    const a = fr(db * grid[g1 + j]!);
    const b = fr(db * grid[g2 + j]!);
    y[at + j] = signs & KMASK_IQ2XS[j]! ? -a : a;
    y[at + j + 4] = signs & KMASK_IQ2XS[j + 4]! ? -b : b;
  }
}

/**
 * Dequantize IQ3_XXS blocks (98 bytes: f16 d, 64 grid bytes, 8 × u32 of signs and scales).
 *
 * @param bytes Whole blocks.
 * @param dest Destination of 256 values per block.
 * @returns `dest`, or a new array.
 */
export function decodeIq3Xxs(bytes: Uint8Array, dest?: Float32Array): Float32Array {
  const out = dest ?? new Float32Array(Math.floor(bytes.length / 98) * 256);
  const t = f16Table();
  const nb = blocks(bytes, 98);
  for (let i = 0; i < nb; i++) {
    const o = i * 98;
    const d = t[u16(bytes, o)]!;
    const qs = o + 2;
    const ss = qs + 64;
    for (let ib = 0; ib < 8; ib++) {
      const aux = u32(bytes, ss + 4 * ib);
      const db = fr(fr(d * fr(0.5 + (aux >>> 28))) * 0.5);
      for (let l = 0; l < 4; l++) {
        const signs = KSIGNS_IQ2XS[(aux >>> (7 * l)) & 127]!;
        const q = qs + 8 * ib + 2 * l;
        const at = i * 256 + ib * 32 + l * 8;
        signedGrid4x2(out, at, db, IQ3XXS_GRID, 4 * bytes[q]!, 4 * bytes[q + 1]!, signs);
      }
    }
  }
  return out;
}

/**
 * Dequantize IQ3_S blocks (110 bytes: f16 d, 64 grid bytes, 8 high-bit bytes, 32 sign bytes, 4 scale bytes).
 *
 * @param bytes Whole blocks.
 * @param dest Destination of 256 values per block.
 * @returns `dest`, or a new array.
 */
export function decodeIq3S(bytes: Uint8Array, dest?: Float32Array): Float32Array {
  const out = dest ?? new Float32Array(Math.floor(bytes.length / 110) * 256);
  const t = f16Table();
  const nb = blocks(bytes, 110);
  for (let i = 0; i < nb; i++) {
    const o = i * 110;
    const d = t[u16(bytes, o)]!;
    const qs = o + 2;
    const qh = o + 66;
    const signs = o + 74;
    const scales = o + 106;
    for (let ib = 0; ib < 8; ib++) {
      // Pairs of 32-value groups share a scale byte: low nibble, then high.
      const sc = bytes[scales + (ib >>> 1)]!;
      const db = fr(d * (1 + 2 * ((ib & 1) === 0 ? sc & 0xf : sc >>> 4)));
      const h = bytes[qh + ib]!;
      for (let l = 0; l < 4; l++) {
        const q = qs + 8 * ib + 2 * l;
        const g1 = bytes[q]! | ((h << (8 - 2 * l)) & 256);
        const g2 = bytes[q + 1]! | ((h << (7 - 2 * l)) & 256);
        const at = i * 256 + ib * 32 + l * 8;
        signedGrid4x2(out, at, db, IQ3S_GRID, 4 * g1, 4 * g2, bytes[signs + 4 * ib + l]!);
      }
    }
  }
  return out;
}

/** Eight signed grid values plus `delta`, times `dl` (ggml's iq1 inner loop). */
function iq1Grid8(y: Float32Array, at: number, dl: number, idx: number, delta: number): void {
  const g = 8 * idx;
  for (let j = 0; j < 8; j++) y[at + j] = dl * fr(IQ1S_GRID[g + j]! + delta);
}

/**
 * Dequantize IQ1_S blocks (50 bytes: f16 d, 32 grid bytes, 8 × u16 of high bits, scale and delta sign).
 *
 * @param bytes Whole blocks.
 * @param dest Destination of 256 values per block.
 * @returns `dest`, or a new array.
 */
export function decodeIq1S(bytes: Uint8Array, dest?: Float32Array): Float32Array {
  const out = dest ?? new Float32Array(Math.floor(bytes.length / 50) * 256);
  const t = f16Table();
  const nb = blocks(bytes, 50);
  for (let i = 0; i < nb; i++) {
    const o = i * 50;
    const d = t[u16(bytes, o)]!;
    for (let ib = 0; ib < 8; ib++) {
      const qh = u16(bytes, o + 34 + 2 * ib);
      const dl = fr(d * (2 * ((qh >>> 12) & 7) + 1));
      const delta = qh & 0x8000 ? -IQ1_DELTA : IQ1_DELTA;
      for (let l = 0; l < 4; l++) {
        const idx = bytes[o + 2 + 4 * ib + l]! | (((qh >>> (3 * l)) & 7) << 8);
        iq1Grid8(out, i * 256 + ib * 32 + l * 8, dl, idx, delta);
      }
    }
  }
  return out;
}

/**
 * Dequantize IQ1_M blocks (56 bytes: 32 grid bytes, 16 high-bit bytes, 8
 * scale bytes whose top nibbles hold the f16 super-block scale).
 *
 * @param bytes Whole blocks.
 * @param dest Destination of 256 values per block.
 * @returns `dest`, or a new array.
 */
export function decodeIq1M(bytes: Uint8Array, dest?: Float32Array): Float32Array {
  const out = dest ?? new Float32Array(Math.floor(bytes.length / 56) * 256);
  const t = f16Table();
  const nb = blocks(bytes, 56);
  const sc = [0, 0, 0, 0];
  for (let i = 0; i < nb; i++) {
    const o = i * 56;
    for (let k = 0; k < 4; k++) sc[k] = u16(bytes, o + 48 + 2 * k);
    const scale = (sc[0]! >>> 12) | ((sc[1]! >>> 8) & 0x00f0) | ((sc[2]! >>> 4) & 0x0f00) |
      (sc[3]! & 0xf000);
    const d = t[scale]!;
    for (let ib = 0; ib < 8; ib++) {
      const s = sc[ib >>> 1]!;
      const shift = 6 * (ib & 1);
      const dl1 = fr(d * (2 * ((s >>> shift) & 7) + 1));
      const dl2 = fr(d * (2 * ((s >>> (shift + 3)) & 7) + 1));
      const qs = o + 4 * ib;
      const h0 = bytes[o + 32 + 2 * ib]!;
      const h1 = bytes[o + 33 + 2 * ib]!;
      const at = i * 256 + ib * 32;
      iq1Grid8(out, at, dl1, bytes[qs]! | ((h0 << 8) & 0x700), h0 & 0x08 ? -IQ1_DELTA : IQ1_DELTA);
      iq1Grid8(
        out,
        at + 8,
        dl1,
        bytes[qs + 1]! | ((h0 << 4) & 0x700),
        h0 & 0x80 ? -IQ1_DELTA : IQ1_DELTA,
      );
      iq1Grid8(
        out,
        at + 16,
        dl2,
        bytes[qs + 2]! | ((h1 << 8) & 0x700),
        h1 & 0x08 ? -IQ1_DELTA : IQ1_DELTA,
      );
      iq1Grid8(
        out,
        at + 24,
        dl2,
        bytes[qs + 3]! | ((h1 << 4) & 0x700),
        h1 & 0x80 ? -IQ1_DELTA : IQ1_DELTA,
      );
    }
  }
  return out;
}

/**
 * Dequantize IQ4_NL blocks (18 bytes: f16 d, 16 bytes of 4-bit indices into ggml's non-linear values).
 *
 * @param bytes Whole blocks.
 * @param dest Destination of 32 values per block.
 * @returns `dest`, or a new array.
 */
export function decodeIq4Nl(bytes: Uint8Array, dest?: Float32Array): Float32Array {
  const out = dest ?? new Float32Array(Math.floor(bytes.length / 18) * 32);
  const t = f16Table();
  const nb = blocks(bytes, 18);
  for (let i = 0; i < nb; i++) {
    const o = i * 18;
    const d = t[u16(bytes, o)]!;
    for (let j = 0; j < 16; j++) {
      const q = bytes[o + 2 + j]!;
      out[i * 32 + j] = d * KVALUES_IQ4NL[q & 0xf]!;
      out[i * 32 + j + 16] = d * KVALUES_IQ4NL[q >>> 4]!;
    }
  }
  return out;
}

/**
 * Dequantize IQ4_XS blocks (136 bytes: f16 d, u16 high scale bits, 4 low
 * scale bytes, 128 bytes of 4-bit indices into ggml's non-linear values).
 *
 * @param bytes Whole blocks.
 * @param dest Destination of 256 values per block.
 * @returns `dest`, or a new array.
 */
export function decodeIq4Xs(bytes: Uint8Array, dest?: Float32Array): Float32Array {
  const out = dest ?? new Float32Array(Math.floor(bytes.length / 136) * 256);
  const t = f16Table();
  const nb = blocks(bytes, 136);
  for (let i = 0; i < nb; i++) {
    const o = i * 136;
    const d = t[u16(bytes, o)]!;
    const scalesH = u16(bytes, o + 2);
    for (let ib = 0; ib < 8; ib++) {
      const ls = ((bytes[o + 4 + (ib >>> 1)]! >>> (4 * (ib & 1))) & 0xf) |
        (((scalesH >>> (2 * ib)) & 3) << 4);
      const dl = fr(d * (ls - 32));
      const qs = o + 8 + 16 * ib;
      const at = i * 256 + 32 * ib;
      for (let j = 0; j < 16; j++) {
        const q = bytes[qs + j]!;
        out[at + j] = dl * KVALUES_IQ4NL[q & 0xf]!;
        out[at + j + 16] = dl * KVALUES_IQ4NL[q >>> 4]!;
      }
    }
  }
  return out;
}
