// This module is browser compatible.

/**
 * Internal: the importance weighting every `quantize_row_*_impl` of
 * ggml-quants.c applies before its scale search — `σ² = Σx² / n` over a row
 * (or super-block), then `w = qw · sqrt(σ² + x²)` per value — in f32
 * arithmetic with a rounding after every operation.
 *
 * @module
 */

const fr = Math.fround;

/** `Σ x² / n` over `x[xo..xo+n)`, summed in order as C does. */
export function meanSquare(x: Float32Array, xo: number, n: number): number {
  let sumX2 = 0;
  for (let j = 0; j < n; j++) {
    const v = x[xo + j]!;
    sumX2 = fr(sumX2 + fr(v * v));
  }
  return fr(sumX2 / n);
}

/** `out[j] = qw[qo + j] * sqrt(σ² + x²)` for the `n` values at `xo`. */
export function importanceWeights(
  x: Float32Array,
  xo: number,
  qw: Float32Array,
  qo: number,
  sigma2: number,
  out: Float32Array,
  n = 32,
): void {
  for (let j = 0; j < n; j++) {
    const v = x[xo + j]!;
    out[j] = fr(qw[qo + j]! * fr(Math.sqrt(fr(sigma2 + fr(v * v)))));
  }
}
