// AssemblyScript: ggml's make_qp_quants (ggml-quants.c), in f32 as C, shared
// by the IQ2_XXS and the importance-weighted Q2_K encoders (aprkit's
// TypeScript port: makeQpQuants in ../../_make_quants.ts).

import { nearestInt } from "./common";

// Levels before their uint8_t store (the sums use the int level).
const QP_L: usize = memory.data(32 * 4, 16);

/**
 * make_qp_quants(n, nmax, x, L, w) (n <= 32): IQ2_XXS's scales (the values
 * may be negative) and weighted Q2_K's scales and mins. Levels to `lOut`.
 */
export function makeQpQuants(n: i32, nmax: i32, x: usize, w: usize, lOut: usize): f32 {
  let mx: f32 = 0;
  for (let i = 0; i < n; i++) {
    const v = load<f32>(x + <usize>i * 4);
    mx = mx > v ? mx : v;
  }
  if (mx < <f32>1e-15) {
    memory.fill(lOut, 0, n);
    return 0;
  }
  let iscale = <f32>nmax / mx;
  for (let i = 0; i < n; i++) {
    store<i32>(QP_L + <usize>i * 4, nearestInt(iscale * load<f32>(x + <usize>i * 4)) & 255);
  }
  const scale = <f32>1 / iscale;
  let bestMse: f32 = 0;
  for (let i = 0; i < n; i++) {
    const diff = load<f32>(x + <usize>i * 4) - scale * <f32>load<i32>(QP_L + <usize>i * 4);
    bestMse += load<f32>(w + <usize>i * 4) * diff * diff;
  }
  for (let is = -4; is <= 4; is++) {
    if (is == 0) continue;
    const iscaleIs = (<f32>0.1 * <f32>is + <f32>nmax) / mx;
    const scaleIs = <f32>1 / iscaleIs;
    let mse: f32 = 0;
    for (let i = 0; i < n; i++) {
      const xi = load<f32>(x + <usize>i * 4);
      const l = min(nmax, nearestInt(iscaleIs * xi));
      const diff = xi - scaleIs * <f32>l;
      mse += load<f32>(w + <usize>i * 4) * diff * diff;
    }
    if (mse < bestMse) {
      bestMse = mse;
      iscale = iscaleIs;
    }
  }
  let sumlx: f32 = 0;
  let suml2: f32 = 0;
  for (let i = 0; i < n; i++) {
    const xi = load<f32>(x + <usize>i * 4);
    const l = min(nmax, nearestInt(iscale * xi));
    store<i32>(QP_L + <usize>i * 4, l & 255);
    const wi = load<f32>(w + <usize>i * 4);
    sumlx += wi * xi * <f32>l;
    suml2 += wi * <f32>l * <f32>l;
  }
  for (let itry = 0; itry < 5; itry++) {
    let changed = 0;
    for (let i = 0; i < n; i++) {
      const wi = load<f32>(w + <usize>i * 4);
      const xi = load<f32>(x + <usize>i * 4);
      const li = <f32>load<i32>(QP_L + <usize>i * 4);
      let slx = sumlx - wi * xi * li;
      let sl2 = suml2 - wi * li * li;
      if (slx > 0 && sl2 > 0) {
        const newL = min(nmax, nearestInt(xi * sl2 / slx));
        if (<f32>newL != li) {
          slx += wi * xi * <f32>newL;
          sl2 += wi * <f32>newL * <f32>newL;
          if (slx * slx * suml2 > sumlx * sumlx * sl2) {
            store<i32>(QP_L + <usize>i * 4, newL & 255);
            sumlx = slx;
            suml2 = sl2;
            changed++;
          }
        }
      }
    }
    if (changed == 0) break;
  }
  for (let i = 0; i < n; i++) store<i8>(lOut + <usize>i, <i8>load<i32>(QP_L + <usize>i * 4));
  return suml2 > 0 ? sumlx / suml2 : 0;
}

