// This module is browser compatible.

/**
 * GPTQ, AWQ and gpt-oss's MXFP4 store a weight transposed to how it is
 * written (output features as columns, or blocks along the output's columns),
 * so one output row needs a column of every stored row. A tile is the
 * stored rows' bytes for a window of columns, read once and kept while the
 * output rows it covers are computed: memory stays at one tile
 * ({@linkcode TILE_BYTES}), and the reads are whole rows of the window.
 *
 * @module
 */

/** Bytes of the packed source kept per tile. */
export const TILE_BYTES = 16 * 1024 * 1024;

/**
 * Output rows per tile: as many as fit in {@linkcode TILE_BYTES}, a multiple
 * of `align` (at least `align`), at most `rows`.
 *
 * @param bytesPerRow Packed source bytes one output row needs.
 * @param align Tiles start at multiples of this.
 * @param rows Output rows in all.
 * @param budget Bytes per tile.
 * @returns Output rows per tile.
 */
export function tileRows(
  bytesPerRow: number,
  align: number,
  rows: number,
  budget: number = TILE_BYTES,
): number {
  const fit = Math.floor(budget / Math.max(1, bytesPerRow));
  return Math.min(Math.max(align, fit - (fit % align)), Math.max(align, rows));
}

/**
 * Keeps the tile of the output rows being computed, loading the next one
 * when a row outside it is asked for.
 *
 * @param rowsPerTile Output rows per tile.
 * @param total Output rows in all.
 * @param load Reads the tile of output rows `[start, end)`.
 * @returns A getter: the tile holding output row `row`, and where the tile starts.
 */
export function tileCache<T>(
  rowsPerTile: number,
  total: number,
  load: (start: number, end: number) => Promise<T>,
): (row: number) => Promise<{ tile: T; start: number }> {
  let current: { tile: T; start: number } | undefined;
  return async (row) => {
    const start = Math.floor(row / rowsPerTile) * rowsPerTile;
    if (current?.start !== start) {
      current = undefined;
      current = { tile: await load(start, Math.min(total, start + rowsPerTile)), start };
    }
    return current;
  };
}
