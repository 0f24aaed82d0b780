// This module is browser compatible.

/**
 * Decoders for the SafeTensors 8-bit floats (OCP FP8 conventions, as PyTorch's
 * `float8_e4m3fn`, `float8_e5m2` and `float8_e8m0fnu`). All are exact in f32.
 *
 * - F8_E4M3: bias 7, 3 mantissa bits, subnormals, no infinity; `0x7f`/`0xff` are NaN.
 * - F8_E5M2: bias 15, 2 mantissa bits, the top byte of an f16 (with ±inf and NaN).
 * - F8_E8M0: unsigned exponent only, `2^(e - 127)`; `0xff` is NaN.
 *
 * @module
 */

import { f16Table } from "./f16.ts";

function table(f: (b: number) => number): Float32Array {
  const t = new Float32Array(256);
  for (let b = 0; b < 256; b++) t[b] = f(b);
  return t;
}

let E4M3: Float32Array | undefined;
let E5M2: Float32Array | undefined;
let E8M0: Float32Array | undefined;

function e4m3(b: number): number {
  const sign = b & 0x80 ? -1 : 1;
  const e = (b >>> 3) & 15;
  const m = b & 7;
  if (e === 15 && m === 7) return NaN;
  if (e === 0) return sign * m * 2 ** -9;
  return sign * (1 + m / 8) * 2 ** (e - 7);
}

function decodeWith(t: Float32Array, bytes: Uint8Array, out?: Float32Array): Float32Array {
  const n = bytes.length;
  const y = out ?? new Float32Array(n);
  for (let i = 0; i < n; i++) y[i] = t[bytes[i]!]!;
  return y;
}

/**
 * Decode F8_E4M3 (fn variant) bytes.
 *
 * @param bytes One byte per value.
 * @param out Destination of `bytes.length` values.
 * @returns `out`, or a new array.
 */
export function decodeF8E4M3(bytes: Uint8Array, out?: Float32Array): Float32Array {
  return decodeWith(E4M3 ??= table(e4m3), bytes, out);
}

/**
 * Decode F8_E5M2 bytes.
 *
 * @param bytes One byte per value.
 * @param out Destination of `bytes.length` values.
 * @returns `out`, or a new array.
 */
export function decodeF8E5M2(bytes: Uint8Array, out?: Float32Array): Float32Array {
  const f16 = f16Table();
  return decodeWith(E5M2 ??= table((b) => f16[b << 8]!), bytes, out);
}

/**
 * Decode F8_E8M0 bytes (power-of-two scales).
 *
 * @param bytes One byte per value.
 * @param out Destination of `bytes.length` values.
 * @returns `out`, or a new array.
 */
export function decodeF8E8M0(bytes: Uint8Array, out?: Float32Array): Float32Array {
  return decodeWith(E8M0 ??= table((b) => b === 255 ? NaN : 2 ** (b - 127)), bytes, out);
}
