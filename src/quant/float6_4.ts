// This module is browser compatible.

/**
 * Decoders for the SafeTensors sub-byte floats (OCP MX element types), exact in f32:
 *
 * - F4 (E2M1): values ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}; two per byte, the first in
 *   the low nibble (PyTorch's `float4_e2m1fn_x2`).
 * - F6_E2M3: bias 1, 3 mantissa bits (max 7.5); F6_E3M2: bias 3, 2 mantissa
 *   bits (max 28). No infinities or NaN. Four values fill three bytes: value `k`
 *   of a group is bits `6k … 6k+5` of the group's little-endian 24-bit word.
 *
 * @module
 */

function fp(bits: number, expBits: number, manBits: number, bias: number): number {
  const sign = (bits >>> (expBits + manBits)) & 1 ? -1 : 1;
  const e = (bits >>> manBits) & ((1 << expBits) - 1);
  const m = bits & ((1 << manBits) - 1);
  const scale = 1 << manBits;
  if (e === 0) return sign * (m / scale) * 2 ** (1 - bias);
  return sign * (1 + m / scale) * 2 ** (e - bias);
}

function table(n: number, f: (b: number) => number): Float32Array {
  const t = new Float32Array(n);
  for (let b = 0; b < n; b++) t[b] = f(b);
  return t;
}

const F4_TABLE = table(16, (b) => fp(b, 2, 1, 1));
let E2M3: Float32Array | undefined;
let E3M2: Float32Array | undefined;

/**
 * Decode F4 (E2M1) bytes, two values per byte, low nibble first.
 *
 * @param bytes The packed values.
 * @param out Destination of `2 * bytes.length` values.
 * @returns `out`, or a new array.
 */
export function decodeF4(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const n = bytes.length;
  const y = out ?? new Float32Array(2 * n);
  for (let i = 0; i < n; i++) {
    const b = bytes[i]!;
    y[2 * i] = F4_TABLE[b & 15]!;
    y[2 * i + 1] = F4_TABLE[b >>> 4]!;
  }
  return y;
}

function decode6(t: Float32Array, bytes: Uint8Array, out?: Float32Array): Float32Array {
  const groups = Math.floor(bytes.length / 3);
  const y = out ?? new Float32Array(4 * groups);
  for (let g = 0; g < groups; g++) {
    const w = bytes[3 * g]! | (bytes[3 * g + 1]! << 8) | (bytes[3 * g + 2]! << 16);
    y[4 * g] = t[w & 63]!;
    y[4 * g + 1] = t[(w >>> 6) & 63]!;
    y[4 * g + 2] = t[(w >>> 12) & 63]!;
    y[4 * g + 3] = t[(w >>> 18) & 63]!;
  }
  return y;
}

/**
 * Decode F6_E2M3 bytes (four values per three bytes).
 *
 * @param bytes The packed values.
 * @param out Destination of `4 * floor(bytes.length / 3)` values.
 * @returns `out`, or a new array.
 */
export function decodeF6E2M3(bytes: Uint8Array, out?: Float32Array): Float32Array {
  return decode6(E2M3 ??= table(64, (b) => fp(b, 2, 3, 1)), bytes, out);
}

/**
 * Decode F6_E3M2 bytes (four values per three bytes).
 *
 * @param bytes The packed values.
 * @param out Destination of `4 * floor(bytes.length / 3)` values.
 * @returns `out`, or a new array.
 */
export function decodeF6E3M2(bytes: Uint8Array, out?: Float32Array): Float32Array {
  return decode6(E3M2 ??= table(64, (b) => fp(b, 3, 2, 3)), bytes, out);
}
