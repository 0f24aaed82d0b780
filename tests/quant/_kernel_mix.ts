/**
 * Test helper: a seeded mix of super-blocks that exercises every branch of the
 * K-quant search — ordinary rows with per-row scale and bias, outliers,
 * zero/signed-zero/sparse rows, subnormals, ±1e30 and ±3e38, NaN/±inf,
 * constant and one-sign rows, exact rounding ties — mixed per 16-value group
 * as well as per super-block (the WebAssembly kernels run 4 groups in lanes,
 * so a garbage lane must not leak into its neighbours).
 *
 * @module
 */

const KINDS = [
  "normal",
  "outlier",
  "zero",
  "signed-zero",
  "sparse",
  "subnormal",
  "huge",
  "overflow",
  "nan-inf",
  "constant",
  "positive",
  "negative",
  "ties-q4",
  "ties-q5",
  "ties-q6",
  "integers",
] as const;

/** Deterministic xorshift32 in [0, 1). */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 32;
  };
}

/** `n` values (a multiple of 256) of the mix, the same for the same seed. */
export function kernelMix(n: number, seed: number): Float32Array {
  const r = rng(seed);
  const gauss = () => r() + r() + r() + r() - 2;
  const v = new Float32Array(n);
  let rowScale = 1;
  let rowBias = 0;
  for (let g = 0; g < n; g += 16) {
    // A new "row" every 1024 values: its own scale (1e-4 .. 1e2) and bias.
    if (g % 1024 === 0) {
      rowScale = 10 ** (r() * 6 - 4);
      rowBias = r() < 0.5 ? 0 : (r() - 0.5) * rowScale;
    }
    // Most groups follow their super-block's kind; some pick their own.
    const blockKind = KINDS[Math.floor(rng(seed ^ (g >>> 8) * 2654435761)() * KINDS.length)]!;
    const kind = r() < 0.25 ? KINDS[Math.floor(r() * KINDS.length)]! : blockKind;
    const c = (r() - 0.5) * rowScale;
    for (let i = g; i < g + 16; i++) {
      const x = gauss() * rowScale + rowBias;
      let y: number;
      switch (kind) {
        case "normal":
          y = x;
          break;
        case "outlier":
          y = r() < 0.03 ? x * 1000 : x;
          break;
        case "zero":
          y = 0;
          break;
        case "signed-zero":
          y = r() < 0.5 ? -0 : 0;
          break;
        case "sparse":
          y = r() < 0.1 ? x : r() < 0.5 ? -0 : 0;
          break;
        case "subnormal":
          y = r() < 0.8 ? gauss() * 1e-41 : r() < 0.5 ? x * 1e-30 : 0;
          break;
        case "huge":
          y = r() < 0.2 ? (r() < 0.5 ? 1e30 : -1e30) : x;
          break;
        case "overflow":
          y = r() < 0.3 ? (r() < 0.5 ? 3e38 : -3e38) : x * 1e37;
          break;
        case "nan-inf": {
          const u = r();
          y = u < 0.05 ? NaN : u < 0.1 ? Infinity : u < 0.15 ? -Infinity : x;
          break;
        }
        case "constant":
          y = c;
          break;
        case "positive":
          y = Math.abs(x) + Math.abs(c);
          break;
        case "negative":
          y = -Math.abs(x) - Math.abs(c);
          break;
        case "ties-q4":
          // Half-integers on [0, 15] with both ends present: Q4_K's first
          // iscale is exactly 1, so half the levels are rounding ties.
          y = i === g ? 0 : i === g + 1 ? 15 : Math.floor(r() * 31) / 2;
          break;
        case "ties-q5":
          // Half-integers on [0, 31], both ends present: Q5_K's first iscale is 1.
          y = i === g ? 0 : i === g + 1 ? 31 : Math.floor(r() * 63) / 2;
          break;
        case "ties-q6":
          // Half-integers on [-32, 31.5] with -32 the largest magnitude:
          // Q6_K's first iscale is exactly 1.
          y = i === g ? -32 : Math.floor(r() * 127) / 2 - 31.5;
          break;
        default:
          y = Math.round(x * 100 / rowScale);
      }
      v[i] = y;
    }
  }
  return v;
}
