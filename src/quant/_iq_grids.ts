// This module is browser compatible.

/**
 * Internal: the i-quant encoders' view of ggml's grids — what
 * `iq2xs_init_impl` / `iq3xs_init_impl` build in llama.cpp's `ggml-quants.c`:
 * each grid point as its levels (`(pg - 1) / 2` there), the map from a packed
 * level vector to its grid index, and for a vector not on the grid the list
 * of grid points at its `nwant` smallest distinct squared distances.
 *
 * ggml's `kgrid_*` tables are the decoders' grids (`_ggml_grids.ts`, from
 * ggml-common.h) with each value replaced by its level (its rank among the
 * grid's distinct values), 2 bits per value for the 8-wide grids, 3 bits for
 * the 4-wide ones; they are derived here rather than copied.
 *
 * ggml computes every neighbour list up front (about a second of CPU for
 * IQ1_S's 2048-point grid); here a list is computed the first time a vector
 * needs it. ggml sorts each candidate by (distance, grid index), a total
 * order, so the lists are the same whichever way they are built.
 *
 * @module
 */

import {
  IQ1S_GRID,
  IQ2S_GRID,
  IQ2XS_GRID,
  IQ2XXS_GRID,
  IQ3S_GRID,
  IQ3XXS_GRID,
} from "./_ggml_grids.ts";

/** One i-quant grid, ready for the encoders' searches. */
export class IqGrid {
  /** Values per grid point (8 or 4). */
  readonly dim: number;
  /** Bits per level in a packed vector (2 or 3). */
  readonly bits: number;
  /** Grid points. */
  readonly size: number;
  /** Each point's levels, `dim` per point. */
  readonly levels: Int8Array;
  /** ggml's `kgrid` values `2 * level + 1`, `dim` per point (what the searches multiply). */
  readonly odd: Float32Array;
  /** Packed level vector → grid index, or -1. */
  readonly map: Int32Array;
  #nwant: number;
  #neighbours: (Uint16Array | undefined)[];

  constructor(
    grid: Uint8Array | Int8Array,
    dim: number,
    bits: number,
    nwant: number,
    mapSize: number,
  ) {
    this.dim = dim;
    this.bits = bits;
    this.size = grid.length / dim;
    this.#nwant = nwant;
    const distinct = [...new Set(grid)].sort((a, b) => a - b);
    const rank = new Map(distinct.map((v, i) => [v, i]));
    this.levels = new Int8Array(grid.length);
    this.odd = new Float32Array(grid.length);
    this.map = new Int32Array(mapSize).fill(-1);
    for (let k = 0; k < this.size; k++) {
      let u = 0;
      for (let i = 0; i < dim; i++) {
        const l = rank.get(grid[k * dim + i]!)!;
        this.levels[k * dim + i] = l;
        this.odd[k * dim + i] = 2 * l + 1;
        u |= l << (bits * i);
      }
      this.map[u] = k;
    }
    this.#neighbours = new Array(mapSize);
  }

  /**
   * The grid points nearest the level vector `u` (which is not on the grid):
   * every point at one of the `nwant` smallest distinct squared distances
   * (measured between `2 * level + 1` values), by distance then index.
   */
  neighbours(u: number): Uint16Array {
    const cached = this.#neighbours[u];
    if (cached !== undefined) return cached;
    const { dim, bits, size, odd } = this;
    const mask = (1 << bits) - 1;
    const pos = new Int32Array(dim);
    for (let k = 0; k < dim; k++) pos[k] = 2 * ((u >> (bits * k)) & mask) + 1;
    const d2 = new Int32Array(size);
    let maxD2 = 0;
    for (let j = 0; j < size; j++) {
      let s = 0;
      for (let k = 0; k < dim; k++) {
        const d = odd[j * dim + k]! - pos[k]!;
        s += d * d;
      }
      d2[j] = s;
      if (s > maxD2) maxD2 = s;
    }
    // Counting by distance keeps each distance's points in index order.
    const count = new Int32Array(maxD2 + 1);
    for (let j = 0; j < size; j++) count[d2[j]!]!++;
    let n = 0;
    let have = 0;
    let limit = -1;
    for (let d = 0; d <= maxD2 && have < this.#nwant; d++) {
      if (count[d] === 0) continue;
      n += count[d]!;
      have++;
      limit = d;
    }
    const list = new Uint16Array(n);
    let at = 0;
    for (let d = 0; d <= limit; d++) {
      if (count[d] === 0) continue;
      for (let j = 0; j < size; j++) if (d2[j] === d) list[at++] = j;
    }
    this.#neighbours[u] = list;
    return list;
  }
}

/** 2-bit level vectors of 8 values (ggml's `kmap_size = 43692` covers levels 0–2). */
const MAP8 = 43692;
/** 3-bit level vectors of 4 values. */
const MAP4 = 4096;

const cache = new Map<string, IqGrid>();

function lazy(key: string, make: () => IqGrid): IqGrid {
  let g = cache.get(key);
  if (g === undefined) {
    g = make();
    cache.set(key, g);
  }
  return g;
}

/** The grid (and `nwant`) each i-quant encoder searches, as `ggml_quantize_init` sets them up. */
export function iqGrid(
  type: "IQ2_XXS" | "IQ2_XS" | "IQ2_S" | "IQ1_S" | "IQ1_M" | "IQ3_XXS" | "IQ3_S",
): IqGrid {
  switch (type) {
    case "IQ2_XXS":
      return lazy(type, () => new IqGrid(IQ2XXS_GRID, 8, 2, 2, MAP8));
    case "IQ2_XS":
      return lazy(type, () => new IqGrid(IQ2XS_GRID, 8, 2, 2, MAP8));
    case "IQ2_S":
      return lazy(type, () => new IqGrid(IQ2S_GRID, 8, 2, 1, MAP8));
    case "IQ1_S":
    case "IQ1_M":
      return lazy("IQ1", () => new IqGrid(IQ1S_GRID, 8, 2, 3, MAP8));
    case "IQ3_XXS":
      return lazy(type, () => new IqGrid(IQ3XXS_GRID, 4, 3, 2, MAP4));
    case "IQ3_S":
      return lazy(type, () => new IqGrid(IQ3S_GRID, 4, 3, 3, MAP4));
  }
}
