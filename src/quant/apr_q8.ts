// This module is browser compatible.

/**
 * APR_Q8 (APR_V2.md §5): one f32 scale per tensor, `absmax / 127`, then one
 * i8 per element, `clamp(round(v / scale), -127, 127)` with Rust's rounding
 * (halves away from zero) in f32 arithmetic. The payload is `[f32 scale][i8 × n]`.
 *
 * The scale needs the whole tensor's absmax, so streaming encoders make a first
 * pass with {@linkcode aprQ8Absmax} and then encode chunk by chunk with
 * {@linkcode encodeAprQ8}.
 *
 * @module
 */

const fr = Math.fround;

/**
 * Fold the absolute maximum of `values` into `start` (Rust's `f32::max`, which
 * ignores NaN).
 *
 * @param values The values of one chunk.
 * @param start The absmax of the chunks before.
 * @returns The absmax so far.
 */
export function aprQ8Absmax(values: Float32Array, start = 0): number {
  let m = start;
  for (let i = 0; i < values.length; i++) {
    const a = Math.abs(values[i]!);
    if (a > m) m = a;
  }
  return m;
}

/**
 * The APR_Q8 scale of a tensor whose absmax is `absmax`: `absmax / 127` in f32,
 * or 1 for an all-zero tensor.
 *
 * @param absmax The tensor's absmax.
 * @returns The f32 scale.
 */
export function aprQ8Scale(absmax: number): number {
  return absmax === 0 ? 1 : fr(fr(absmax) / 127);
}

/**
 * Quantize values to APR_Q8 bytes (without the scale prefix).
 *
 * @param values The values of one chunk.
 * @param scale The tensor's scale from {@linkcode aprQ8Scale}.
 * @param out Destination of `values.length` bytes.
 * @returns `out`, or a new array when `out` is not given.
 *
 * @example Usage: two passes over a tensor's chunks
 * ```ts
 * import { aprQ8Absmax, aprQ8Scale, encodeAprQ8 } from "./apr_q8.ts";
 * const chunks = [new Float32Array([1, -2.5]), new Float32Array([127])];
 * let absmax = 0;
 * for (const c of chunks) absmax = aprQ8Absmax(c, absmax);
 * const scale = aprQ8Scale(absmax); // 1
 * const q = chunks.map((c) => [...encodeAprQ8(c, scale)]);
 * console.assert(JSON.stringify(q) === "[[1,253],[127]]"); // -2.5 rounds to -3
 * ```
 */
export function encodeAprQ8(values: Float32Array, scale: number, out?: Uint8Array): Uint8Array {
  const n = values.length;
  const dst = out ?? new Uint8Array(n);
  const s = fr(scale);
  for (let i = 0; i < n; i++) {
    // round() halves away from zero: floor(|r| + 0.5) is exact for an f32 r.
    // NaN falls through to (NaN + 0.5) | 0 = 0, as Rust's `as i8` gives.
    const r = fr(values[i]! / s);
    const a = r < 0 ? -r : r;
    const q = a >= 127 ? 127 : (a + 0.5) | 0;
    dst[i] = r < 0 ? -q : q;
  }
  return dst;
}

/**
 * Quantize a whole tensor to an APR_Q8 payload: f32 scale, then the i8 values.
 *
 * @param values Every value of the tensor.
 * @returns The payload, `4 + n` bytes (empty for an empty tensor).
 */
export function encodeAprQ8Tensor(values: Float32Array): Uint8Array {
  if (values.length === 0) return new Uint8Array(0);
  const scale = aprQ8Scale(aprQ8Absmax(values));
  const out = new Uint8Array(4 + values.length);
  new DataView(out.buffer).setFloat32(0, scale, true);
  encodeAprQ8(values, scale, out.subarray(4));
  return out;
}

/**
 * Dequantize APR_Q8 i8 bytes (the part after the scale): `q * scale` in f32.
 *
 * @param bytes The i8 values.
 * @param scale The tensor's f32 scale.
 * @param out Destination of `bytes.length` values.
 * @returns `out`, or a new array when `out` is not given.
 */
export function decodeAprQ8(bytes: Uint8Array, scale: number, out?: Float32Array): Float32Array {
  const n = bytes.length;
  const dst = out ?? new Float32Array(n);
  const s = fr(scale);
  for (let i = 0; i < n; i++) dst[i] = ((bytes[i]! << 24) >> 24) * s;
  return dst;
}
