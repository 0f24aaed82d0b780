// AssemblyScript: APR_Q8's absmax and encoder (APR_V2.md §5, Rust semantics),
// identical to ../../apr_q8.ts. Element-wise, so lanes run consecutive values.

@inline function maxAbs(m: f32, v: f32): f32 {
  const a = abs<f32>(v);
  return a > m ? a : m;
}

/** max(start, |x|) over `n` f32 at `src`, NaN ignored (Rust's f32::max). */
export function aprQ8Absmax(src: usize, n: i32, start: f32): f32 {
  let m4 = f32x4.splat(start);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const a = f32x4.abs(v128.load(src + <usize>i * 4));
    m4 = v128.bitselect(a, m4, f32x4.gt(a, m4));
  }
  // Lanes hold |x| or start (never NaN, never -0): their max is the answer.
  let m = start;
  m = maxAbs(m, f32x4.extract_lane(m4, 0));
  m = maxAbs(m, f32x4.extract_lane(m4, 1));
  m = maxAbs(m, f32x4.extract_lane(m4, 2));
  m = maxAbs(m, f32x4.extract_lane(m4, 3));
  for (; i < n; i++) m = maxAbs(m, load<f32>(src + <usize>i * 4));
  return m;
}

/**
 * q = round(x / scale) clamped to ±127, halves away from zero, NaN → 0 (Rust's
 * `as i8`). round(|r|) is trunc(|r|) plus one when the (exact) fraction is at
 * least 0.5: adding 0.5 in f32 could round up values just below a half.
 */
@inline function quantize4(v: v128, s: v128): v128 {
  const r = f32x4.div(v, s);
  const a = f32x4.abs(r);
  const t = f32x4.trunc(a);
  // trunc_sat gives 0 for NaN; ±inf and big values clamp below.
  let q = i32x4.trunc_sat_f32x4_s(t);
  q = i32x4.sub(q, f32x4.ge(f32x4.sub(a, t), f32x4.splat(<f32>0.5))); // mask is -1: adds one
  q = i32x4.min_s(q, i32x4.splat(127));
  const neg = f32x4.lt(r, f32x4.splat(0));
  return v128.bitselect(i32x4.neg(q), q, neg);
}

/** Encode `n` f32 at `src` as APR_Q8 bytes at `dst` with the tensor's scale. */
export function encodeAprQ8(src: usize, dst: usize, n: i32, scale: f32): void {
  const s = f32x4.splat(scale);
  let i = 0;
  for (; i + 16 <= n; i += 16) {
    const p = src + <usize>i * 4;
    const a = quantize4(v128.load(p), s);
    const b = quantize4(v128.load(p + 16), s);
    const c = quantize4(v128.load(p + 32), s);
    const d = quantize4(v128.load(p + 48), s);
    v128.store(dst + <usize>i, i8x16.narrow_i16x8_s(i16x8.narrow_i32x4_s(a, b), i16x8.narrow_i32x4_s(c, d)));
  }
  for (; i < n; i++) {
    const r = load<f32>(src + <usize>i * 4) / scale;
    const a = abs<f32>(r);
    const t = trunc<f32>(a);
    // NaN fails both comparisons: 0.
    const q: i32 = a >= <f32>127.0 ? 127 : a < <f32>127.0 ? <i32>t + (a - t >= <f32>0.5 ? 1 : 0) : 0;
    store<i8>(dst + <usize>i, <i8>(r < 0 ? -q : q));
  }
}
