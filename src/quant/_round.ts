// This module is browser compatible.

/**
 * Internal rounding helpers that reproduce Rust and C float behaviour in JS.
 *
 * @module
 */

/**
 * Rust's `f32::round`: halves away from zero. NaN stays NaN.
 */
export function roundHalfAway(x: number): number {
  return x < 0 ? -Math.round(-x) : Math.round(x);
}

const NI_F32 = new Float32Array(1);
const NI_I32 = new Int32Array(NI_F32.buffer);

/**
 * ggml's `nearest_int`: adds 1.5·2^23 in f32 and reads the mantissa, which is
 * round-half-to-even for |x| <= 2^22 - 1. Outside that range (where ggml
 * asserts in debug builds) the same bit trick is emulated so results match a
 * release build of llama.cpp.
 */
export function nearestInt(x: number): number {
  if (x >= -4194303 && x <= 4194303) {
    const f = Math.floor(x);
    const d = x - f;
    if (d > 0.5) return f + 1;
    if (d < 0.5) return f;
    return (f & 1) === 0 ? f : f + 1;
  }
  NI_F32[0] = x + 12582912;
  return (NI_I32[0]! & 0x007fffff) - 0x00400000;
}
