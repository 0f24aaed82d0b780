// AssemblyScript: the i-quant encoders' grids — ggml's kgrid points as levels,
// the map from a packed level vector to its grid index, and the neighbour
// lists of the vectors off the grid (as ../../_iq_grids.ts builds them; see
// there why), in static memory, each built on first use.

import { IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID } from "./ggml_grids";

// Grids: 0 IQ2_XXS, 1 IQ2_XS, 2 IQ2_S, 3 IQ3_XXS, 4 IQ3_S, 5 IQ1_S and IQ1_M.
const MAP8 = 43692;
const MAP4 = 4096;
const ODD0: usize = memory.data(256 * 8 * 4, 16);
const ODD1: usize = memory.data(512 * 8 * 4, 16);
const ODD2: usize = memory.data(1024 * 8 * 4, 16);
const ODD3: usize = memory.data(256 * 4 * 4, 16);
const ODD4: usize = memory.data(512 * 4 * 4, 16);
const ODD5: usize = memory.data(2048 * 8 * 4, 16);
const LEV0: usize = memory.data(256 * 8, 16);
const LEV1: usize = memory.data(512 * 8, 16);
const LEV2: usize = memory.data(1024 * 8, 16);
const LEV3: usize = memory.data(256 * 4, 16);
const LEV4: usize = memory.data(512 * 4, 16);
const LEV5: usize = memory.data(2048 * 8, 16);
// Packed level vector → grid index + 1, or −(offset + 1) of its neighbour list, or 0 (not yet known).
const MAP0: usize = memory.data(MAP8 * 4, 16);
const MAP1: usize = memory.data(MAP8 * 4, 16);
const MAP2: usize = memory.data(MAP8 * 4, 16);
const MAP3: usize = memory.data(MAP4 * 4, 16);
const MAP4A: usize = memory.data(MAP4 * 4, 16);
const MAP5: usize = memory.data(MAP8 * 4, 16);
// Neighbour lists (a count, then grid indices), sized for every level vector
// the searches can reach (levels 0..2 of 8, 0..7 of 4), counted once.
const POOL0: usize = memory.data(2 * 119552, 16);
const POOL1: usize = memory.data(2 * 187840, 16);
const POOL2: usize = memory.data(2 * 50304, 16);
const POOL3: usize = memory.data(2 * 22912, 16);
const POOL4: usize = memory.data(2 * 28416, 16);
const POOL5: usize = memory.data(2 * 332288, 16);
const POOL_TOP: usize = memory.data(6 * 4, 16);
const READY: usize = memory.data(8, 16);
const D2: usize = memory.data(2048 * 4, 16);
const COUNT: usize = memory.data(1024 * 4, 16);

@inline function gridSize(g: i32): i32 {
  return g == 0 ? 256 : g == 1 ? 512 : g == 2 ? 1024 : g == 3 ? 256 : g == 4 ? 512 : 2048;
}
@inline export function gridDim(g: i32): i32 {
  return g < 3 || g == 5 ? 8 : 4;
}
@inline export function gridBits(g: i32): i32 {
  return g < 3 || g == 5 ? 2 : 3;
}
@inline function gridNwant(g: i32): i32 {
  return g == 2 ? 1 : g == 4 || g == 5 ? 3 : 2;
}
@inline export function oddOf(g: i32): usize {
  return g == 0 ? ODD0 : g == 1 ? ODD1 : g == 2 ? ODD2 : g == 3 ? ODD3 : g == 4 ? ODD4 : ODD5;
}
@inline export function levOf(g: i32): usize {
  return g == 0 ? LEV0 : g == 1 ? LEV1 : g == 2 ? LEV2 : g == 3 ? LEV3 : g == 4 ? LEV4 : LEV5;
}
@inline export function mapOf(g: i32): usize {
  return g == 0 ? MAP0 : g == 1 ? MAP1 : g == 2 ? MAP2 : g == 3 ? MAP3 : g == 4 ? MAP4A : MAP5;
}
@inline function poolOf(g: i32): usize {
  return g == 0 ? POOL0 : g == 1 ? POOL1 : g == 2 ? POOL2 : g == 3 ? POOL3 : g == 4 ? POOL4 : POOL5;
}

/** A grid value's level: its rank among the grid's distinct values. */
function levelOf(g: i32, v: i32): i32 {
  if (g < 3) return v == 8 ? 0 : v == 25 ? 1 : 2; // 0x08, 0x19, 0x2b
  if (g == 3) return v == 62 ? 7 : (v - 4) >> 3; // 4, 12, …, 52, 62
  if (g == 4) return (v - 1) >> 1; // 1, 3, …, 15
  return v == 0xff ? 0 : v + 1; // int8 −1, 0, 1
}

export function initGrid(g: i32): void {
  if (load<u8>(READY + g) != 0) return;
  const src = g == 0
    ? IQ2XXS_GRID
    : g == 1
    ? IQ2XS_GRID
    : g == 2
    ? IQ2S_GRID
    : g == 3
    ? IQ3XXS_GRID
    : g == 4
    ? IQ3S_GRID
    : IQ1S_GRID;
  const size = gridSize(g);
  const dim = gridDim(g);
  const bits = gridBits(g);
  const odd = oddOf(g);
  const lev = levOf(g);
  const map = mapOf(g);
  for (let k = 0; k < size; k++) {
    let u = 0;
    for (let i = 0; i < dim; i++) {
      const l = levelOf(g, <i32>load<u8>(src + <usize>(k * dim + i)));
      store<u8>(lev + <usize>(k * dim + i), <u8>l);
      const q: i32 = 2 * l + 1;
      store<f32>(odd + <usize>(k * dim + i) * 4, <f32>q);
      u |= l << (bits * i);
    }
    store<i32>(map + <usize>u * 4, k + 1);
  }
  store<u8>(READY + g, 1);
}

/** The neighbour list of the off-grid vector `u` (count first), built on first use. */
export function neighbours(g: i32, u: i32): usize {
  const map = mapOf(g);
  const pool = poolOf(g);
  const m = load<i32>(map + <usize>u * 4);
  if (m < 0) return pool + <usize>(-m - 1) * 2;
  const size = gridSize(g);
  const dim = gridDim(g);
  const bits = gridBits(g);
  const odd = oddOf(g);
  const mask = (1 << bits) - 1;
  let maxD2 = 0;
  for (let j = 0; j < size; j++) {
    let s = 0;
    for (let k = 0; k < dim; k++) {
      const d = <i32>load<f32>(odd + <usize>(j * dim + k) * 4) - (2 * ((u >> (bits * k)) & mask) + 1);
      s += d * d;
    }
    store<i32>(D2 + <usize>j * 4, s);
    if (s > maxD2) maxD2 = s;
  }
  memory.fill(COUNT, 0, <usize>(maxD2 + 1) * 4);
  for (let j = 0; j < size; j++) {
    const at = COUNT + <usize>load<i32>(D2 + <usize>j * 4) * 4;
    store<i32>(at, load<i32>(at) + 1);
  }
  const nwant = gridNwant(g);
  let n = 0;
  let have = 0;
  let limit = -1;
  for (let d = 0; d <= maxD2 && have < nwant; d++) {
    const c = load<i32>(COUNT + <usize>d * 4);
    if (c == 0) continue;
    n += c;
    have++;
    limit = d;
  }
  const top = load<i32>(POOL_TOP + <usize>g * 4);
  const list = pool + <usize>top * 2;
  store<u16>(list, <u16>n);
  let at = 1;
  for (let d = 0; d <= limit; d++) {
    if (load<i32>(COUNT + <usize>d * 4) == 0) continue;
    for (let j = 0; j < size; j++) {
      if (load<i32>(D2 + <usize>j * 4) == d) store<u16>(list + <usize>(at++) * 2, <u16>j);
    }
  }
  store<i32>(POOL_TOP + <usize>g * 4, top + n + 1);
  store<i32>(map + <usize>u * 4, -(top + 1));
  return list;
}


// The grid searches' neighbour lists again, four points side by side
// (iq_grid_search.ts walks them four distances at a time): per list a header
// (count, address of the u16 list) and then, per four points, one f32x4 of
// their odd values per coordinate, NaN in the lanes past the end (a NaN
// distance never wins C's strict `<`). Grids 0–4 only; sized for every list
// (at most 6561 of 8 levels, 4096 of 4), a list's chunks are built on first use.
const CHUNKS0: usize = memory.data(6561 * 16 + (119552 + 3 * 6561) * 32, 16);
const CHUNKS1: usize = memory.data(6561 * 16 + (187840 + 3 * 6561) * 32, 16);
const CHUNKS2: usize = memory.data(6561 * 16 + (50304 + 3 * 6561) * 32, 16);
const CHUNKS3: usize = memory.data(4096 * 16 + (22912 + 3 * 4096) * 16, 16);
const CHUNKS4: usize = memory.data(4096 * 16 + (28416 + 3 * 4096) * 16, 16);
const CHUNK_TOP: usize = memory.data(5 * 4, 16);
// Packed level vector → byte offset + 1 of its chunked list, or 0 (not yet built).
const CMAP0: usize = memory.data(MAP8 * 4, 16);
const CMAP1: usize = memory.data(MAP8 * 4, 16);
const CMAP2: usize = memory.data(MAP8 * 4, 16);
const CMAP3: usize = memory.data(MAP4 * 4, 16);
const CMAP4: usize = memory.data(MAP4 * 4, 16);

@inline export function chunksOf(g: i32): usize {
  return g == 0 ? CHUNKS0 : g == 1 ? CHUNKS1 : g == 2 ? CHUNKS2 : g == 3 ? CHUNKS3 : CHUNKS4;
}
@inline export function cmapOf(g: i32): usize {
  return g == 0 ? CMAP0 : g == 1 ? CMAP1 : g == 2 ? CMAP2 : g == 3 ? CMAP3 : CMAP4;
}

/**
 * The off-grid vector `u`'s neighbour list of grid `g` (0–4) in chunks of four
 * points: at the result, i32 count, u32 address of the u16 list (count
 * first, as neighbours() gives it), 8 bytes unused; then ⌈count/4⌉ chunks of
 * `dim` f32x4 (coordinate i of points 4c…4c+3).
 */
@inline export function chunkedNeighbours(g: i32, u: i32): usize {
  const m = load<i32>(cmapOf(g) + <usize>u * 4);
  return m != 0 ? chunksOf(g) + <usize>(m - 1) : buildChunks(g, u);
}

export function buildChunks(g: i32, u: i32): usize {
  const list = neighbours(g, u);
  const n = <i32>load<u16>(list);
  const dim = gridDim(g);
  const odd = oddOf(g);
  const top = load<i32>(CHUNK_TOP + <usize>g * 4);
  const at = chunksOf(g) + <usize>top;
  store<i32>(at, n);
  store<u32>(at + 4, <u32>list);
  const chunks = (n + 3) >> 2;
  for (let c = 0; c < chunks; c++) {
    for (let i = 0; i < dim; i++) {
      for (let j = 0; j < 4; j++) {
        const p = 4 * c + j;
        const v = p < n ? load<f32>(odd + <usize>(<i32>load<u16>(list + <usize>(p + 1) * 2) * dim + i) * 4) : <f32>NaN;
        store<f32>(at + 16 + <usize>((c * dim + i) * 4 + j) * 4, v);
      }
    }
  }
  store<i32>(CHUNK_TOP + <usize>g * 4, top + 16 + chunks * dim * 16);
  store<i32>(cmapOf(g) + <usize>u * 4, top + 1);
  return at;
}
