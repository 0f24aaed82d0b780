// AssemblyScript (compiled by `deno task wasm`, not by Deno): helpers shared
// by the kernels. Every float literal is written `<f32>` so the arithmetic
// stays in single precision, as in C (an untyped literal would make it f64).

/** ggml's nearest_int on four lanes: add 1.5·2^23 in f32, read the mantissa. */
@inline export function nearestInt4(v: v128): v128 {
  const t = f32x4.add(v, f32x4.splat(<f32>12582912.0));
  return i32x4.sub(v128.and(t, i32x4.splat(0x7fffff)), i32x4.splat(0x400000));
}

/** ggml's nearest_int on one value (same bit trick, so NaN and huge values match C). */
@inline export function nearestInt(v: f32): i32 {
  const t = v + <f32>12582912.0;
  return (reinterpret<i32>(t) & 0x7fffff) - 0x400000;
}

/** Lanes of `a` where `mask` is set, of `b` elsewhere. */
@inline export function select4(a: v128, b: v128, mask: v128): v128 {
  return v128.bitselect(a, b, mask);
}

/** Clamp int lanes to [lo, hi] (integers: min/max are exact here). */
@inline export function clamp4(v: v128, lo: i32, hi: i32): v128 {
  return i32x4.min_s(i32x4.max_s(v, i32x4.splat(lo)), i32x4.splat(hi));
}

/** f32 → f16 bits, round to nearest even (as aprkit's f32BitsToF16Bits and F16C). */
export function f32ToF16(value: f32): i32 {
  return f32ToF16Inline(value);
}

/**
 * f32ToF16 written into the caller: for per-block loops that keep vectors in
 * registers, which a call makes V8 spill and reload (every xmm register is
 * caller-saved).
 */
@inline export function f32ToF16Inline(value: f32): i32 {
  const x = reinterpret<u32>(value);
  const sign = (x >>> 16) & 0x8000;
  const a = x & 0x7fffffff;
  if (a >= 0x38800000) {
    if (a >= 0x477ff000) {
      if (a > 0x7f800000) return <i32>(sign | 0x7e00 | ((a >>> 13) & 0x3ff));
      return <i32>(sign | 0x7c00);
    }
    const m = a - 0x38000000;
    return <i32>(sign | ((m + 0xfff + ((m >>> 13) & 1)) >>> 13));
  }
  if (a <= 0x33000000) return <i32>sign;
  const e = a >>> 23;
  const mant = (a & 0x7fffff) | 0x800000;
  const shift = 126 - e;
  const half: u32 = 1 << (shift - 1);
  let r = mant >>> shift;
  const rem = mant & ((half << 1) - 1);
  if (rem > half || (rem == half && (r & 1) == 1)) r++;
  return <i32>(sign | r);
}

/** f16 bits → f32, exact. */
export function f16ToF32(h: i32): f32 {
  const sign: u32 = (<u32>h & 0x8000) << 16;
  const e: u32 = (<u32>h >>> 10) & 0x1f;
  const m: u32 = <u32>h & 0x3ff;
  if (e == 0) {
    // Subnormal or zero: m · 2^-24, exact in f32.
    const v = <f32>m * <f32>5.9604644775390625e-8;
    return sign != 0 ? -v : v;
  }
  if (e == 31) return reinterpret<f32>(sign | 0x7f800000 | (m << 13));
  return reinterpret<f32>(sign | ((e + 112) << 23) | (m << 13));
}

/**
 * `s` plus, value by value, four blocks' four values (vector k: block k's):
 * lane k of the sum is block k's sequential sum (Q1_0's sum of |x|), the
 * values transposed by shuffles.
 */
@inline export function addTransposed(s: v128, v0: v128, v1: v128, v2: v128, v3: v128): v128 {
  const a = i32x4.shuffle(v0, v1, 0, 4, 1, 5);
  const c = i32x4.shuffle(v2, v3, 0, 4, 1, 5);
  const e = i32x4.shuffle(v0, v1, 2, 6, 3, 7);
  const g = i32x4.shuffle(v2, v3, 2, 6, 3, 7);
  s = f32x4.add(s, i32x4.shuffle(a, c, 0, 1, 4, 5));
  s = f32x4.add(s, i32x4.shuffle(a, c, 2, 3, 6, 7));
  s = f32x4.add(s, i32x4.shuffle(e, g, 0, 1, 4, 5));
  return f32x4.add(s, i32x4.shuffle(e, g, 2, 3, 6, 7));
}

/** Four f32 lanes from four addresses (a transposing load, one lane at a time). */
@inline export function gather4(p0: usize, p1: usize, p2: usize, p3: usize): v128 {
  let v = f32x4.splat(load<f32>(p0));
  v = f32x4.replace_lane(v, 1, load<f32>(p1));
  v = f32x4.replace_lane(v, 2, load<f32>(p2));
  return f32x4.replace_lane(v, 3, load<f32>(p3));
}

/** Rows `p0`..`p3` (four f32 each) as their four columns, to `out`. */
@inline export function transpose4(p0: usize, p1: usize, p2: usize, p3: usize, out: usize): void {
  const r0 = v128.load(p0);
  const r1 = v128.load(p1);
  const r2 = v128.load(p2);
  const r3 = v128.load(p3);
  const lo01 = i32x4.shuffle(r0, r1, 0, 4, 1, 5);
  const lo23 = i32x4.shuffle(r2, r3, 0, 4, 1, 5);
  const hi01 = i32x4.shuffle(r0, r1, 2, 6, 3, 7);
  const hi23 = i32x4.shuffle(r2, r3, 2, 6, 3, 7);
  v128.store(out, i32x4.shuffle(lo01, lo23, 0, 1, 4, 5));
  v128.store(out + 16, i32x4.shuffle(lo01, lo23, 2, 3, 6, 7));
  v128.store(out + 32, i32x4.shuffle(hi01, hi23, 0, 1, 4, 5));
  v128.store(out + 48, i32x4.shuffle(hi01, hi23, 2, 3, 6, 7));
}

/**
 * The importance-weighted K-quants' weights of one super-block
 * (quantize_row_q{2,3,4,5}_K_impl): `qw·sqrt(σ² + x²)` for the 256 values at
 * `x` to `w`, σ² their mean square (`twice`: twice it, `2·Σx²/256`), and the
 * sum of each group of `n` to `sw`, every sum sequential in f32 as C.
 */
export function superBlockWeights(x: usize, qw: usize, w: usize, sw: usize, n: i32, twice: bool): void {
  let sumX2: f32 = 0;
  for (let i = 0; i < 256; i++) {
    const v = load<f32>(x + <usize>i * 4);
    sumX2 += v * v;
  }
  const sigma2 = (twice ? <f32>2.0 * sumX2 : sumX2) / <f32>256.0;
  for (let j = 0; j < 256 / n; j++) {
    let s: f32 = 0;
    for (let i = 0; i < n; i++) {
      const at = <usize>(n * j + i) * 4;
      const v = load<f32>(x + at);
      const wi = load<f32>(qw + at) * Mathf.sqrt(sigma2 + v * v);
      store<f32>(w + at, wi);
      s += wi;
    }
    store<f32>(sw + <usize>j * 4, s);
  }
}
