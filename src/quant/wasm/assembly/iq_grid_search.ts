// AssemblyScript: the grid i-quants' scale search (quantize_row_iq3_xxs_impl's
// and its siblings' loop over candidate scales, with iq2/iq3_find_best_neighbour)
// on four sub-blocks at once, one per SIMD lane.
//
// C runs each sub-block's search alone, summing in f32 in value order; the
// sub-blocks of a super-block are independent until their scales are packed,
// so lane k runs sub-block k's search in C's order: its candidates, its snap
// to the grid and its sums, with C's branches as lane masks. The neighbour
// search of a group off the grid runs per lane (lanes' lists differ in length
// by up to 10×: walking them side by side measured slower). The caller fills
// the lanes (loadLane) and reads each lane's levels back (laneLevels).

import { buildChunks, chunksOf, cmapOf, gridBits, gridDim, levOf, mapOf } from "./iq_grids";

// Per value v (at most 32), lane k = sub-block k: the sign-folded values, the
// weights, their square roots, the levels of the best candidate so far (i32)
// and of the current one.
const XT: usize = memory.data(32 * 16, 16);
const WT: usize = memory.data(32 * 16, 16);
const WAT: usize = memory.data(32 * 16, 16);
const LT: usize = memory.data(32 * 16, 16);
const LAT: usize = memory.data(32 * 16, 16);
// Per group (at most 8): all-ones where the group's levels are on the grid.
const OGT: usize = memory.data(8 * 16, 16);
const OGAT: usize = memory.data(8 * 16, 16);
// One group's per-lane scratch: packed level vectors, lanes off the grid, scales.
const U: usize = memory.data(16, 16);
const OFF: usize = memory.data(16, 16);
const SCALE: usize = memory.data(16, 16);
const SUMS: usize = memory.data(2 * 16, 16); // fit4's Σ w·x·q and Σ w·q²
// snap4's searches on the 4-value grids, queued while it snaps the groups (one
// per group and lane, at most 32), 16 bytes each: the group and lane (k·16 +
// lane·4), the off-grid vector, its chunked list's address, the kept pick's
// list position (−1: not kept).
const QUEUE: usize = memory.data(32 * 16, 16);

// The loops' constant vectors, loaded from here once per call rather than
// written as constants: V8 rebuilds a v128.const at each use inside a loop
// (three instructions; ~8% of snap4's samples), a loaded vector stays in a
// register. Rows: f32 0.5, f32 1, f32 2, 12582912 (nearestInt4's), its mantissa
// mask and bias, i32 4, i32 1.
const CONST: usize = memory.data<i32>([
  0x3f000000, 0x3f000000, 0x3f000000, 0x3f000000,
  0x3f800000, 0x3f800000, 0x3f800000, 0x3f800000,
  0x40000000, 0x40000000, 0x40000000, 0x40000000,
  0x4b400000, 0x4b400000, 0x4b400000, 0x4b400000,
  0x7fffff, 0x7fffff, 0x7fffff, 0x7fffff,
  0x400000, 0x400000, 0x400000, 0x400000,
  4, 4, 4, 4,
  1, 1, 1, 1,
], 16);
const C_HALF: usize = 0;
const C_ONE: usize = 16;
const C_TWO: usize = 32;
const C_MAGIC: usize = 48;
const C_MANT: usize = 64;
const C_BIAS: usize = 80;
const C_FOUR: usize = 96;
const C_IONE: usize = 112;

/** Lane `k`'s `n` values, weights and weights' roots, from the scalar scratch at `x`, `w`, `wa`. */
export function loadLane(k: i32, n: i32, x: usize, w: usize, wa: usize): void {
  for (let v = 0; v < n; v++) {
    const at = <usize>v * 16 + <usize>k * 4;
    store<f32>(XT + at, load<f32>(x + <usize>v * 4));
    store<f32>(WT + at, load<f32>(w + <usize>v * 4));
    store<f32>(WAT + at, load<f32>(wa + <usize>v * 4));
  }
}

/** Lane `k`'s chosen levels, as bytes to `l`. */
export function laneLevels(k: i32, n: i32, l: usize): void {
  for (let v = 0; v < n; v++) store<i8>(l + <usize>v, <i8>load<i32>(LT + <usize>v * 16 + <usize>k * 4));
}

// The searched grid's chunked lists (chunkedNeighbours' map and pool) and levels, set per search.
let CMAP: usize = 0;
let CHUNKS: usize = 0;
let LEV: usize = 0;

// bestNeighbour's shortcut: per group and lane the bound's sums (GS), and per
// group and lane (slot lane·8 + k) the level vector + 1 whose A, B are cached
// (ABU, 0: none) and the A, B chunks (AB; the longest list, IQ2_XS's 292
// points, takes 73 chunks).
const GS: usize = memory.data(8 * 48, 16);
const ABU: usize = memory.data(32 * 4, 16);
const AB_CHUNKS = 73;
const AB_SLOT: usize = AB_CHUNKS * 32;
const AB: usize = memory.data(32 * AB_CHUNKS * 32, 16);
const TWO_E: f32 = <f32>(128.0 / 16777216.0); // 2E / W

const FLT_MAX: f32 = <f32>3.4028234663852886e38;

/** One coordinate's w·(scale·q − x)² for a chunk's four points (q at `q`; x, w splat from `x`, `w`). */
@inline function term(q: usize, x: usize, w: usize, sv: v128): v128 {
  const t = f32x4.sub(f32x4.mul(sv, v128.load(q)), v128.load32_splat(x));
  return f32x4.mul(f32x4.mul(v128.load32_splat(w), t), t);
}

/**
 * The list position of the first smallest of a chunk walk's per-lane minima
 * `best` (first smallest per lane at positions `bestAt`), or −1 when no
 * distance is finite (the TypeScript kernel throws there).
 */
@inline function firstSmallest(best: v128, bestAt: v128): i32 {
  // pmin (one instruction; f32x4.min's NaN and −0 rules take several): `best` holds no NaN.
  let m = f32x4.pmin(best, v128.shuffle<i32>(best, best, 2, 3, 0, 1));
  m = f32x4.pmin(m, v128.shuffle<i32>(m, m, 1, 0, 3, 2));
  if (!(f32x4.extract_lane(m, 0) < FLT_MAX)) return -1;
  let p = v128.bitselect(bestAt, i32x4.splat(0x7fffffff), f32x4.eq(best, m));
  p = i32x4.min_s(p, v128.shuffle<i32>(p, p, 2, 3, 0, 1));
  p = i32x4.min_s(p, v128.shuffle<i32>(p, p, 1, 0, 3, 2));
  return i32x4.extract_lane(p, 0);
}

/** The grid index at list position `p` of the chunked list at `chunks` (its first when `p` is −1). */
@inline function listIndex(chunks: usize, p: i32): i32 {
  return <i32>load<u16>(<usize>load<u32>(chunks + 4) + <usize>(p < 0 ? 1 : p + 1) * 2);
}

/**
 * iq2_find_best_neighbour for group `k` of lane `lane`, summed as C: the list
 * position of the first smallest Σ w·(scale·q − x)² of the list at `chunks`
 * (chunkedNeighbours; C's strict `<` in list order), −1 if none is finite.
 *
 * Four points at a time (the list's chunks, chunkedNeighbours): lane j of a
 * chunk holds point 4c + j, and its distance is summed coordinate by
 * coordinate, C's order for each point. Each lane keeps its first smallest
 * (strict `<`); the list's first smallest is then the smallest value, and of
 * the lanes holding it the earliest position.
 */
@inline function exactNeighbour8(k: i32, lane: i32, chunks: usize, scale: f32): i32 {
  const n = load<i32>(chunks);
  const xs = XT + <usize>(8 * k) * 16 + <usize>lane * 4;
  const ws = WAT + <usize>(8 * k) * 16 + <usize>lane * 4;
  const sv = f32x4.splat(scale);
  let best = f32x4.splat(FLT_MAX);
  let bestAt = i32x4.splat(0);
  let at = i32x4(0, 1, 2, 3);
  const four = i32x4.splat(4);
  let c = chunks + 16;
  const end = c + <usize>(((n + 3) >> 2) * 128);
  for (; c < end; c += 128) {
    let d2 = term(c, xs, ws, sv);
    d2 = f32x4.add(d2, term(c + 16, xs + 16, ws + 16, sv));
    d2 = f32x4.add(d2, term(c + 32, xs + 32, ws + 32, sv));
    d2 = f32x4.add(d2, term(c + 48, xs + 48, ws + 48, sv));
    d2 = f32x4.add(d2, term(c + 64, xs + 64, ws + 64, sv));
    d2 = f32x4.add(d2, term(c + 80, xs + 80, ws + 80, sv));
    d2 = f32x4.add(d2, term(c + 96, xs + 96, ws + 96, sv));
    d2 = f32x4.add(d2, term(c + 112, xs + 112, ws + 112, sv));
    const lt = f32x4.lt(d2, best);
    best = v128.bitselect(d2, best, lt);
    bestAt = v128.bitselect(at, bestAt, lt);
    at = i32x4.add(at, four);
  }
  return firstSmallest(best, bestAt);
}

/**
 * iq2/iq3_find_best_neighbour for group `k` of lane `lane`: the index C picks,
 * the first smallest Σ w·(scale·q − x)² of the off-grid vector `u`'s list in
 * C's f32 order; the point's levels go to the lane's levels at `out`.
 *
 * On the 8-value grids (lists of ~10–60 points) most calls need no such sum
 * (filteredNeighbour). As a function of the point, the sum is
 * s²·A − 2s·B + Σ w·x² (A = Σ w·q², B = Σ w·x·q), and the last term is the
 * same for every point, so D = s²·A − 2s·B orders the points as the exact
 * sums do, and A, B depend only on the group and the list: computed once per
 * search and list (a group keeps its level vector for ~80% of the candidate
 * scales). Rounding separates C's f32 sum from D + Σ w·x² by at most
 * (dim + 7)·2⁻²⁴·W and the f32 D from the real one by (2·dim + 7)·2⁻²⁴·W,
 * where W = Σ w·(s·qmax + |x|)² bounds every product and partial sum of both
 * (qmax the grid's largest odd value, 5; the terms' errors are first-order
 * bounds, well inside the factor left): together under E = 64·2⁻²⁴·W. A point
 * whose D exceeds the smallest D by more than 2E has a C sum strictly above
 * that point's, so it is not C's choice; when only the smallest is left, it is
 * C's choice (its C sum strictly below every other). Otherwise (near ties,
 * non-finite values) the sums are computed exactly as C does (exactNeighbour8).
 * The 4-value grids' searches are nearestKept's (snap4 queues them).
 */
function bestNeighbour(g: i32, k: i32, lane: i32, u: i32, scale: f32, out: usize): void {
  const m0 = load<i32>(CMAP + <usize>u * 4);
  const chunks = m0 != 0 ? CHUNKS + <usize>(m0 - 1) : buildChunks(g, u);
  let index = filteredNeighbour(k, lane, u, chunks, scale);
  if (index < 0) index = listIndex(chunks, exactNeighbour8(k, lane, chunks, scale));
  const lev = LEV + <usize>index * 8;
  const at2 = out + <usize>(8 * k) * 16 + <usize>lane * 4;
  for (let i = 0; i < 8; i++) store<i32>(at2 + <usize>i * 16, <i32>load<i8>(lev + <usize>i));
}

// The 4-value grids' kept picks (nearestKept), per group k and lane (at
// k·16 + lane·4): the level vector searched (−1: none), the scales [lo, hi]
// where its pick stays C's, and the pick's levels (rows as LT's); per group and
// lane the margin K (KEEP_K, +∞ where the bound does not apply) and per lane
// the candidate scales' range, widened (KEEP_S: lowest, then highest).
const KEEP_U: usize = memory.data(8 * 16, 16);
const KEEP_LO: usize = memory.data(8 * 16, 16);
const KEEP_HI: usize = memory.data(8 * 16, 16);
const KEEP_L: usize = memory.data(32 * 16, 16);
const KEEP_K: usize = memory.data(8 * 16, 16);
const KEEP_S: usize = memory.data(2 * 16, 16);
const KEEP_AB: usize = memory.data(16 * 32, 16); // a list's A, B per chunk (at most 38 points: 10 chunks)
const KEEP_C: f32 = <f32>(256.0 / 16777216.0); // K / (225·s_hi·Σw + 30·Σw|x| + Σw·x²/s_lo)
const KEEP_WIDEN: f32 = <f32>1.25; // beyond the candidates, for the refinement's scale
let keepOn: bool = true;
let keepC: f32 = KEEP_C;
let keepNarrow: f32 = <f32>(1.0 / 65536);

/**
 * The 4-value grids' kept picks: off (0), on (1, the default), or on with no
 * rounding margin (2: K = 0 and the range's ends not narrowed, wrong on near
 * ties). Tests only: the bytes of 0
 * and 1 must be the same, and 2 must differ on near ties (the test sees a bound
 * too loose).
 */
export function iqKeepNeighbours(mode: i32): void {
  keepOn = mode != 0;
  keepC = mode == 2 ? 0 : KEEP_C;
  keepNarrow = mode == 2 ? 0 : <f32>(1.0 / 65536);
}

/**
 * iq3_find_best_neighbour for the search queued at `e` (group k of lane `lane`,
 * off-grid vector `u`, at the lane's scale in SCALE), summed as C (as
 * exactNeighbour8, four coordinates): the pick's levels go to the lane's levels
 * at `out`, and keepRange keeps them with the scales where the pick stays C's,
 * which snap4 then takes with no search while the group snaps to `u` (a group
 * keeps its vector for ~80% of the candidate scales, and its pick for ~75%:
 * counted on seeded rows).
 *
 * Point p's distance is d_p(s) = s²·A_p − 2s·B_p + Σ w·x² (A = Σ w·q², B =
 * Σ w·x·q), so d_p(s) − d_pick(s) = s·(a_p·s − b_p) with a_p = A_p − A_pick,
 * b_p = 2(B_p − B_pick). C's f32 sums are within E = 11·2⁻²⁴·W(s) of the real
 * ones (W(s) = Σ w·(15s + |x|)², 15 the largest odd value; the first-order
 * bound bestNeighbour uses), and the f32 A, B here within
 * 16·2⁻²⁴·(225·s·Σw + 30·Σw|x|) of theirs after the differences, so for s in
 * the widened candidate range [s_lo, s_hi] (KEEP_S) every other point's C sum
 * is strictly above the pick's, and C's strict `<` keeps the pick, when
 * a_p·s − b_p > K = 256·2⁻²⁴·(225·s_hi·Σw + 30·Σw|x| + Σw·x²/s_lo): s above
 * (K + b_p)/a_p where a_p ≥ 0 (+∞ when a_p = 0 ≤ K + b_p: never; NaN when
 * K + b_p = 0, which empties the range), below it where a_p < 0. The range
 * kept is the intersection, narrowed by 2⁻¹⁶ for the rounding of its ends
 * (each within 3·2⁻²⁴ of the real quotient). Not kept: non-finite distances,
 * and groups whose sums make K infinite (KEEP_K).
 */
function nearestKept(e: usize, out: usize): void {
  const at = <usize>load<i32>(e);
  const chunks = <usize>load<u32>(e + 8);
  const n = load<i32>(chunks);
  // Group k's value i of lane `lane` is at 64k + 16i + 4·lane.
  const row = ((at >> 4) << 6) + (at & 12);
  const xs = XT + row;
  const ws = WAT + row;
  const sv = f32x4.splat(load<f32>(SCALE + (at & 12)));
  const x0 = v128.load32_splat(xs);
  const x1 = v128.load32_splat(xs + 16);
  const x2 = v128.load32_splat(xs + 32);
  const x3 = v128.load32_splat(xs + 48);
  const w0 = v128.load32_splat(ws);
  const w1 = v128.load32_splat(ws + 16);
  const w2 = v128.load32_splat(ws + 32);
  const w3 = v128.load32_splat(ws + 48);
  const K = load<f32>(KEEP_K + at);
  const keep = keepOn && K < <f32>1e30;
  let best = f32x4.splat(FLT_MAX);
  let bestAt = i32x4.splat(0);
  let pos = i32x4(0, 1, 2, 3);
  const four = v128.load(CONST + C_FOUR);
  let c = chunks + 16;
  const end = c + <usize>(((n + 3) >> 2) * 64);
  if (keep) {
    const v0 = f32x4.mul(w0, x0);
    const v1 = f32x4.mul(w1, x1);
    const v2 = f32x4.mul(w2, x2);
    const v3 = f32x4.mul(w3, x3);
    for (let a = KEEP_AB; c < end; c += 64, a += 32) {
      const c0 = v128.load(c);
      const c1 = v128.load(c + 16);
      const c2 = v128.load(c + 32);
      const c3 = v128.load(c + 48);
      const t0 = f32x4.sub(f32x4.mul(sv, c0), x0);
      const t1 = f32x4.sub(f32x4.mul(sv, c1), x1);
      const t2 = f32x4.sub(f32x4.mul(sv, c2), x2);
      const t3 = f32x4.sub(f32x4.mul(sv, c3), x3);
      const d2 = f32x4.add(
        f32x4.add(
          f32x4.add(f32x4.mul(f32x4.mul(w0, t0), t0), f32x4.mul(f32x4.mul(w1, t1), t1)),
          f32x4.mul(f32x4.mul(w2, t2), t2),
        ),
        f32x4.mul(f32x4.mul(w3, t3), t3),
      );
      const lt = f32x4.lt(d2, best);
      best = v128.bitselect(d2, best, lt);
      bestAt = v128.bitselect(pos, bestAt, lt);
      pos = i32x4.add(pos, four);
      v128.store(a, f32x4.add(
        f32x4.add(
          f32x4.add(f32x4.mul(f32x4.mul(w0, c0), c0), f32x4.mul(f32x4.mul(w1, c1), c1)),
          f32x4.mul(f32x4.mul(w2, c2), c2),
        ),
        f32x4.mul(f32x4.mul(w3, c3), c3),
      ));
      v128.store(a + 16, f32x4.add(
        f32x4.add(f32x4.add(f32x4.mul(v0, c0), f32x4.mul(v1, c1)), f32x4.mul(v2, c2)),
        f32x4.mul(v3, c3),
      ));
    }
  } else {
    for (; c < end; c += 64) {
      const t0 = f32x4.sub(f32x4.mul(sv, v128.load(c)), x0);
      const t1 = f32x4.sub(f32x4.mul(sv, v128.load(c + 16)), x1);
      const t2 = f32x4.sub(f32x4.mul(sv, v128.load(c + 32)), x2);
      const t3 = f32x4.sub(f32x4.mul(sv, v128.load(c + 48)), x3);
      const d2 = f32x4.add(
        f32x4.add(
          f32x4.add(f32x4.mul(f32x4.mul(w0, t0), t0), f32x4.mul(f32x4.mul(w1, t1), t1)),
          f32x4.mul(f32x4.mul(w2, t2), t2),
        ),
        f32x4.mul(f32x4.mul(w3, t3), t3),
      );
      const lt = f32x4.lt(d2, best);
      best = v128.bitselect(d2, best, lt);
      bestAt = v128.bitselect(pos, bestAt, lt);
      pos = i32x4.add(pos, four);
    }
  }
  const p = firstSmallest(best, bestAt);
  const lev = LEV + <usize>listIndex(chunks, p) * 4;
  const o = out + row;
  for (let i = 0; i < 4; i++) store<i32>(o + <usize>i * 16, <i32>load<i8>(lev + <usize>i));
  store<i32>(KEEP_U + at, -1);
  store<i32>(e + 12, keep && p >= 0 ? p : -1);
}

/**
 * nearestKept's second half for queue entry `e`: the scales where its pick stays
 * C's, from the list's A, B (KEEP_AB), and the pick kept with them.
 */
function keepRange(e: usize): void {
  const ab = KEEP_AB;
  const p = load<i32>(e + 12);
  if (p < 0) return;
  const at = <usize>load<i32>(e);
  const chunks = <usize>load<u32>(e + 8);
  const n = load<i32>(chunks);
  const lane = at & 12;
  const pab = ab + <usize>(p >> 2) * 32 + <usize>(p & 3) * 4;
  const ap = v128.load32_splat(pab);
  const bp = v128.load32_splat(pab + 16);
  const kv = f32x4.splat(load<f32>(KEEP_K + at));
  const two = v128.load(CONST + C_TWO);
  const zero = f32x4.splat(0);
  const four = v128.load(CONST + C_FOUR);
  const self = i32x4.splat(p);
  let lo = f32x4.splat(load<f32>(KEEP_S + lane));
  let hi = f32x4.splat(load<f32>(KEEP_S + 16 + lane));
  let pos = i32x4(0, 1, 2, 3);
  const abEnd = ab + <usize>((n + 3) >> 2) * 32;
  let nan = i32x4.splat(0);
  for (let a = ab; a < abEnd; a += 32) {
    // Lanes past the list's end are NaN: no comparison holds there.
    const d = f32x4.sub(v128.load(a), ap);
    const t = f32x4.div(f32x4.add(kv, f32x4.mul(two, f32x4.sub(v128.load(a + 16), bp))), d);
    const same = i32x4.eq(pos, self);
    const up = v128.andnot(f32x4.ge(d, zero), same);
    const down = v128.andnot(f32x4.lt(d, zero), same);
    // pmax/pmin are one instruction each (f32x4.max/min's NaN rules take several); a NaN
    // bound (0/0: K + b_p = 0 where a_p = 0) empties the range instead.
    lo = v128.bitselect(f32x4.pmax(lo, t), lo, up);
    hi = v128.bitselect(f32x4.pmin(hi, t), hi, down);
    nan = v128.or(nan, v128.and(v128.or(up, down), f32x4.ne(t, t)));
    pos = i32x4.add(pos, four);
  }
  if (v128.any_true(nan)) return;
  lo = f32x4.pmax(lo, v128.shuffle<i32>(lo, lo, 2, 3, 0, 1));
  lo = f32x4.pmax(lo, v128.shuffle<i32>(lo, lo, 1, 0, 3, 2));
  hi = f32x4.pmin(hi, v128.shuffle<i32>(hi, hi, 2, 3, 0, 1));
  hi = f32x4.pmin(hi, v128.shuffle<i32>(hi, hi, 1, 0, 3, 2));
  store<f32>(KEEP_LO + at, f32x4.extract_lane(lo, 0) * (<f32>1 + keepNarrow));
  store<f32>(KEEP_HI + at, f32x4.extract_lane(hi, 0) * (<f32>1 - keepNarrow));
  const lev = LEV + <usize>listIndex(chunks, p) * 4;
  const kl = KEEP_L + ((at >> 4) << 6) + lane;
  for (let i = 0; i < 4; i++) store<i32>(kl + <usize>i * 16, <i32>load<i8>(lev + <usize>i));
  store<i32>(KEEP_U + at, load<i32>(e + 4));
}

/** bestNeighbour's shortcut for the 8-value grids: C's index, or −1 where the sums must decide. */
function filteredNeighbour(k: i32, lane: i32, u: i32, chunks: usize, scale: f32): i32 {
  const n = load<i32>(chunks);
  const nc = (n + 3) >> 2;
  const at = <usize>k * 48 + <usize>lane * 4;
  const sq = scale * <f32>5;
  const bound = sq * sq * load<f32>(GS + at) + <f32>2 * sq * load<f32>(GS + at + 16) + load<f32>(GS + at + 32);
  if (!(scale > 0 && bound < <f32>1e30 && nc <= AB_CHUNKS)) return -1;
  const slot = <usize>(lane * 8 + k);
  const ab = AB + slot * AB_SLOT;
  if (load<i32>(ABU + slot * 4) != u + 1) {
    abTerms(8, k, lane, chunks + 16, nc, ab);
    store<i32>(ABU + slot * 4, u + 1);
  }
  const s2 = f32x4.splat(scale * scale);
  const s2x = f32x4.splat(<f32>2 * scale);
  let best = f32x4.splat(FLT_MAX);
  let bestAt = i32x4.splat(0);
  let pos = i32x4(0, 1, 2, 3);
  const four = i32x4.splat(4);
  const end = ab + <usize>nc * 32;
  for (let c = ab; c < end; c += 32) {
    const d = f32x4.sub(f32x4.mul(s2, v128.load(c)), f32x4.mul(s2x, v128.load(c + 16)));
    const lt = f32x4.lt(d, best);
    best = v128.bitselect(d, best, lt);
    bestAt = v128.bitselect(pos, bestAt, lt);
    pos = i32x4.add(pos, four);
  }
  let m = f32x4.min(best, v128.shuffle<i32>(best, best, 2, 3, 0, 1));
  m = f32x4.min(m, v128.shuffle<i32>(m, m, 1, 0, 3, 2));
  const thr = f32x4.add(m, f32x4.splat(bound * TWO_E));
  let near = i32x4.splat(0);
  for (let c = ab; c < end; c += 32) {
    const d = f32x4.sub(f32x4.mul(s2, v128.load(c)), f32x4.mul(s2x, v128.load(c + 16)));
    near = i32x4.sub(near, f32x4.le(d, thr));
  }
  near = i32x4.add(near, v128.shuffle<i32>(near, near, 2, 3, 0, 1));
  near = i32x4.add(near, v128.shuffle<i32>(near, near, 1, 0, 3, 2));
  if (i32x4.extract_lane(near, 0) == 1) {
    let p = v128.bitselect(bestAt, i32x4.splat(0x7fffffff), f32x4.eq(best, m));
    p = i32x4.min_s(p, v128.shuffle<i32>(p, p, 2, 3, 0, 1));
    p = i32x4.min_s(p, v128.shuffle<i32>(p, p, 1, 0, 3, 2));
    return <i32>load<u16>(<usize>load<u32>(chunks + 4) + <usize>(i32x4.extract_lane(p, 0) + 1) * 2);
  }
  return -1;
}

/** A and B (Σ w·q², Σ w·x·q) of each of a list's `nc` chunks at `c`, for group `k` of lane `lane`, to `ab`. */
function abTerms(dim: i32, k: i32, lane: i32, c: usize, nc: i32, ab: usize): void {
  const xs = XT + <usize>(dim * k) * 16 + <usize>lane * 4;
  const ws = WAT + <usize>(dim * k) * 16 + <usize>lane * 4;
  for (let j = 0; j < nc; j++) {
    let a = f32x4.splat(0);
    let b = f32x4.splat(0);
    for (let i = 0; i < dim; i++) {
      const q = v128.load(c + <usize>i * 16);
      const w = v128.load32_splat(ws + <usize>i * 16);
      const wq = f32x4.mul(w, q);
      a = f32x4.add(a, f32x4.mul(wq, q));
      b = f32x4.add(b, f32x4.mul(f32x4.mul(w, v128.load32_splat(xs + <usize>i * 16)), q));
    }
    v128.store(ab + <usize>j * 32, a);
    v128.store(ab + <usize>j * 32 + 16, b);
    c += <usize>dim * 16;
  }
}

/** Each group's Σ w, Σ w·|x|, Σ w·x² per lane (bestNeighbour's bound), to GS. */
function groupSums(dim: i32, groups: i32): void {
  for (let k = 0; k < groups; k++) {
    let s0 = f32x4.splat(0);
    let s1 = f32x4.splat(0);
    let s2 = f32x4.splat(0);
    for (let i = 0; i < dim; i++) {
      const row = <usize>(dim * k + i) * 16;
      const w = v128.load(WAT + row);
      const x = f32x4.abs(v128.load(XT + row));
      s0 = f32x4.add(s0, w);
      s1 = f32x4.add(s1, f32x4.mul(w, x));
      s2 = f32x4.add(s2, f32x4.mul(f32x4.mul(w, x), x));
    }
    v128.store(GS + <usize>k * 48, s0);
    v128.store(GS + <usize>k * 48 + 16, s1);
    v128.store(GS + <usize>k * 48 + 32, s2);
  }
}

/**
 * nearestKept's margins: each lane's candidate scales' range, widened by
 * KEEP_WIDEN, to KEEP_S (as the search computes them: 1/id is monotonic in
 * `is`), and each group's K to KEEP_K (+∞ where its sums are too large for the
 * bound: not kept); every pick kept before is dropped.
 */
function keepBounds(kMaxQ: i32, isMax: i32, step: f32, denom: v128, groups: i32): void {
  memory.fill(KEEP_U, 0xff, <usize>groups * 16);
  const topI = 2 * kMaxQ - 1;
  const top = <f32>topI;
  const one = f32x4.splat(<f32>1);
  const widen = f32x4.splat(KEEP_WIDEN);
  const lo = f32x4.div(f32x4.div(one, f32x4.div(f32x4.splat(top + <f32>isMax * step), denom)), widen);
  const hi = f32x4.mul(f32x4.div(one, f32x4.div(f32x4.splat(top + <f32>(-isMax) * step), denom)), widen);
  v128.store(KEEP_S, lo);
  v128.store(KEEP_S + 16, hi);
  groupSums(4, groups);
  const big = f32x4.splat(<f32>1e30);
  const inf = f32x4.splat(Infinity);
  const lanes = v128.and(f32x4.gt(lo, f32x4.splat(0)), f32x4.lt(hi, big));
  for (let k = 0; k < groups; k++) {
    const sw = v128.load(GS + <usize>k * 48);
    const swx = v128.load(GS + <usize>k * 48 + 16);
    const swx2 = v128.load(GS + <usize>k * 48 + 32);
    const a = f32x4.mul(f32x4.splat(<f32>225), sw);
    const b = f32x4.mul(f32x4.splat(<f32>15), swx);
    const K = f32x4.mul(
      f32x4.splat(keepC),
      f32x4.add(f32x4.add(f32x4.mul(a, hi), f32x4.add(b, b)), f32x4.div(swx2, lo)),
    );
    const ok = v128.and(lanes, v128.and(v128.and(f32x4.lt(a, big), f32x4.lt(b, big)), f32x4.lt(K, big)));
    v128.store(KEEP_K + <usize>k * 16, v128.bitselect(K, inf, ok));
  }
}

/** One value row's levels at `id` (nearestInt4, its constants in registers), stored to `out` in `mask`'s lanes. */
@inline function snapLevel(
  row: usize, id: v128, half: v128, one: v128, magic: v128, mant: v128, bias: v128, zero: v128, top: v128,
  out: usize, mask: v128,
): v128 {
  const t = f32x4.add(f32x4.mul(half, f32x4.sub(f32x4.mul(id, v128.load(XT + row)), one)), magic);
  const l = i32x4.max_s(zero, i32x4.min_s(top, i32x4.sub(v128.and(t, mant), bias)));
  v128.store(out + row, v128.bitselect(l, v128.load(out + row), mask));
  return l;
}

/**
 * Snap group by group to levels at `id` and onto the grid, in the lanes of
 * each group's `mask` (`masks` + 16·k; all lanes when 0), writing the levels
 * to `out` and, when `onGrid` is not 0, the on-grid lanes there.
 */
function snap4(g: i32, kMaxQ: i32, n: i32, id: v128, scale: v128, out: usize, onGrid: usize, masks: usize): void {
  const dim = gridDim(g);
  const bits = gridBits(g);
  const map = mapOf(g);
  const half = v128.load(CONST + C_HALF);
  const one = v128.load(CONST + C_ONE);
  const magic = v128.load(CONST + C_MAGIC);
  const mant = v128.load(CONST + C_MANT);
  const bias = v128.load(CONST + C_BIAS);
  const zero = i32x4.splat(0);
  const top = i32x4.splat(kMaxQ - 1);
  const all = i32x4.splat(-1);
  v128.store(SCALE, scale);
  let queued = 0;
  const groups = n / dim;
  for (let k = 0; k < groups; k++) {
    const mask = masks == 0 ? all : v128.load(masks + <usize>k * 16);
    if (!v128.any_true(mask)) continue;
    let u = zero;
    if (dim == 4) {
      const r = <usize>k * 64;
      u = snapLevel(r, id, half, one, magic, mant, bias, zero, top, out, mask);
      u = v128.or(u, i32x4.shl(snapLevel(r + 16, id, half, one, magic, mant, bias, zero, top, out, mask), 3));
      u = v128.or(u, i32x4.shl(snapLevel(r + 32, id, half, one, magic, mant, bias, zero, top, out, mask), 6));
      u = v128.or(u, i32x4.shl(snapLevel(r + 48, id, half, one, magic, mant, bias, zero, top, out, mask), 9));
    } else {
      for (let i = 0; i < dim; i++) {
        const row = <usize>(dim * k + i) * 16;
        u = v128.or(u, i32x4.shl(snapLevel(row, id, half, one, magic, mant, bias, zero, top, out, mask), bits * i));
      }
    }
    v128.store(U, u);
    let m = i32x4.splat(load<i32>(map + <usize>load<i32>(U) * 4));
    m = i32x4.replace_lane(m, 1, load<i32>(map + <usize>load<i32>(U + 4) * 4));
    m = i32x4.replace_lane(m, 2, load<i32>(map + <usize>load<i32>(U + 8) * 4));
    m = i32x4.replace_lane(m, 3, load<i32>(map + <usize>load<i32>(U + 12) * 4));
    const on = i32x4.gt_s(m, zero);
    if (onGrid != 0) v128.store(onGrid + <usize>k * 16, on);
    let off = v128.andnot(mask, on);
    if (!v128.any_true(off)) continue;
    if (dim == 4) {
      // A kept pick (nearestKept) of the same vector, at a scale where it is still C's.
      const at = <usize>k * 16;
      const hit = v128.and(
        v128.and(off, i32x4.eq(u, v128.load(KEEP_U + at))),
        v128.and(f32x4.ge(scale, v128.load(KEEP_LO + at)), f32x4.le(scale, v128.load(KEEP_HI + at))),
      );
      if (v128.any_true(hit)) {
        for (let i = 0; i < 4; i++) {
          const row = <usize>(4 * k + i) * 16;
          v128.store(out + row, v128.bitselect(v128.load(KEEP_L + row), v128.load(out + row), hit));
        }
        off = v128.andnot(off, hit);
      }
      // The searches left wait in a queue (no branch per lane: a lane's branch
      // mispredicts often), run after every group is snapped.
      v128.store(OFF, off);
      for (let lane = 0; lane < 4; lane++) {
        const e = QUEUE + <usize>queued * 16;
        store<i32>(e, 16 * k + 4 * lane);
        store<i32>(e + 4, load<i32>(U + <usize>lane * 4));
        queued += load<i32>(OFF + <usize>lane * 4) & 1;
      }
      continue;
    }
    v128.store(OFF, off);
    for (let lane = 0; lane < 4; lane++) {
      const at = <usize>lane * 4;
      if (load<i32>(OFF + at) != 0) bestNeighbour(g, k, lane, load<i32>(U + at), load<f32>(SCALE + at), out);
    }
  }
  const qEnd = QUEUE + <usize>queued * 16;
  for (let e = QUEUE; e < qEnd; e += 16) {
    const u = load<i32>(e + 4);
    const m0 = load<i32>(CMAP + <usize>u * 4);
    store<u32>(e + 8, <u32>(m0 != 0 ? CHUNKS + <usize>(m0 - 1) : buildChunks(g, u)));
    nearestKept(e, out);
    keepRange(e);
  }
}

/** Each lane's Σ w·x·q and Σ w·q² (q = 2l+1) over the levels at `l`, in C's order, to SUMS. */
function fit4(n: i32, l: usize): void {
  let sumqx = f32x4.splat(0);
  let sumq2 = f32x4.splat(0);
  const one = v128.load(CONST + C_IONE);
  for (let v = 0; v < n; v++) {
    const row = <usize>v * 16;
    const w = v128.load(WT + row);
    const q = f32x4.convert_i32x4_s(i32x4.add(i32x4.shl(v128.load(l + row), 1), one));
    sumqx = f32x4.add(sumqx, f32x4.mul(f32x4.mul(w, v128.load(XT + row)), q));
    sumq2 = f32x4.add(sumq2, f32x4.mul(f32x4.mul(w, q), q));
  }
  v128.store(SUMS, sumqx);
  v128.store(SUMS + 16, sumq2);
}

const REFINE: usize = memory.data(8 * 16, 16); // the refinement's per-group lanes

/**
 * The search of each lane's sub-block of `n` values (loaded by loadLane):
 * candidates id = (2·kMaxQ − 1 + is·step)/denom for is = −isMax…isMax, the
 * best by Σ(w·x·q)²/Σ w·q², then one refinement at the best scale (refine: 0
 * re-snaps the groups off the grid, 1 every group if any is off, 2 every
 * group always); each lane's denominator and first scale at `denoms` and
 * `starts`. Writes each lane's scale to `out` (its first scale if no
 * candidate fits); the levels are in LT (laneLevels).
 */
export function searchGridScale4(
  g: i32,
  kMaxQ: i32,
  isMax: i32,
  step: f32,
  onGridStart: bool,
  refine: i32,
  n: i32,
  denoms: usize,
  starts: usize,
  out: usize,
): void {
  CMAP = cmapOf(g);
  CHUNKS = chunksOf(g);
  LEV = levOf(g);
  const denom = v128.load(denoms);
  const groups = n / gridDim(g);
  if (gridDim(g) == 8) groupSums(8, groups);
  else keepBounds(kMaxQ, isMax, step, denom, groups);
  memory.fill(ABU, 0, 32 * 4);
  const zero = f32x4.splat(0);
  let best = zero;
  let scale = v128.load(starts);
  memory.fill(LT, 0, <usize>n * 16);
  memory.fill(OGT, onGridStart ? 0xff : 0, <usize>groups * 16);
  const topI = 2 * kMaxQ - 1;
  const top = <f32>topI;
  const one = f32x4.splat(<f32>1);
  for (let is = -isMax; is <= isMax; is++) {
    const id = f32x4.div(f32x4.splat(top + <f32>is * step), denom);
    snap4(g, kMaxQ, n, id, f32x4.div(one, id), LAT, OGAT, 0);
    fit4(n, LAT);
    const sumqx = v128.load(SUMS);
    const sumq2 = v128.load(SUMS + 16);
    const better = v128.and(
      f32x4.gt(sumq2, zero),
      f32x4.gt(f32x4.mul(sumqx, sumqx), f32x4.mul(best, sumq2)),
    );
    if (!v128.any_true(better)) continue;
    const s = f32x4.div(sumqx, sumq2);
    scale = v128.bitselect(s, scale, better);
    best = v128.bitselect(f32x4.mul(s, sumqx), best, better);
    for (let v = 0; v < n; v++) {
      const at = <usize>v * 16;
      v128.store(LT + at, v128.bitselect(v128.load(LAT + at), v128.load(LT + at), better));
    }
    for (let k = 0; k < groups; k++) {
      const at = <usize>k * 16;
      v128.store(OGT + at, v128.bitselect(v128.load(OGAT + at), v128.load(OGT + at), better));
    }
  }
  let offAny = i32x4.splat(0);
  for (let k = 0; k < groups; k++) offAny = v128.or(offAny, v128.not(v128.load(OGT + <usize>k * 16)));
  let lanes = f32x4.gt(scale, zero);
  if (refine != 2) lanes = v128.and(lanes, offAny);
  if (!v128.any_true(lanes)) {
    v128.store(out, scale);
    return;
  }
  for (let k = 0; k < groups; k++) {
    const at = <usize>k * 16;
    v128.store(REFINE + at, refine == 0 ? v128.andnot(lanes, v128.load(OGT + at)) : lanes);
  }
  snap4(g, kMaxQ, n, f32x4.div(one, scale), scale, LT, 0, REFINE);
  fit4(n, LT);
  const sumq2 = v128.load(SUMS + 16);
  const fits = v128.and(lanes, f32x4.gt(sumq2, zero));
  v128.store(out, v128.bitselect(f32x4.div(v128.load(SUMS), sumq2), scale, fits));
}
