// This module is browser compatible.

/**
 * Internal rounding helpers that reproduce Rust and C float behaviour in JS.
 *
 * @module
 */

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
    // x is an f32 value, exact in f64; adding and removing 1.5·2^52 rounds it to
    // an integer with the FPU's ties-to-even, as the f32 trick does for |x| < 2^22.
    return (x + 6755399441055744) - 6755399441055744;
  }
  NI_F32[0] = x + 12582912;
  return (NI_I32[0]! & 0x007fffff) - 0x00400000;
}

/** C's float → int8_t conversion (through int32, as x86 compilers emit it; NaN and overflow give 0). */
export function toInt8(v: number): number {
  return v !== v || Math.abs(v) >= 2147483648 ? 0 : Math.trunc(v) << 24 >> 24;
}

/** C's float → uint8_t conversion (through int32, as x86 compilers emit it). */
export function toUint8(v: number): number {
  return v !== v || Math.abs(v) >= 2147483648 ? 0 : Math.trunc(v) & 255;
}
