// This module is browser compatible.

/**
 * NF4 (4-bit NormalFloat, QLoRA, Dettmers et al. 2023): 16 levels at the
 * quantiles of a normal distribution, scaled per block by the block's absmax.
 *
 * Rules (docs/QNAT.md §4 is the byte-level contract):
 * - blocks of `blockSize` consecutive elements (default 64, even); the
 *   element count must be a multiple of the block size, else `RangeError`;
 * - per block `s = max|x|` (f32); with zero points, `z = (max + min) / 2`
 *   and `s = (max - min) / 2`, both f32;
 * - each element's code is the index of the level nearest to
 *   `fround((x - z) / s)`, compared in f32 against the midpoints between
 *   adjacent levels: a value exactly on a midpoint takes the LOWER level
 *   (the more negative one); a block with `s == 0` is all code 7 (level 0),
 *   and so is a NaN element;
 * - two codes per byte, element `2i` in the LOW nibble of byte `i`, `2i+1`
 *   in the high nibble (as bitsandbytes' CPU reference does for storage);
 * - dequant `fround(fround(LEVEL[code] * s) + z)`.
 *
 * Double quantization stores each block scale as one byte `q` with one f32
 * `factor` per tensor: `factor = fround(maxScale / 255)`, `q = min(255,
 * round(s / factor))`, stored scale `fround(q * factor)`. The `min` keeps the
 * largest scale at 255: an earlier writer let `round` reach 256, which
 * wrapped to 0 in a byte and zeroed the largest block. Element codes are then
 * computed against the STORED scale, so the decoder sees what the encoder
 * assumed.
 *
 * @module
 */

/**
 * The 16 NF4 levels, exactly the float32 table bitsandbytes uses
 * (`csrc/kernels.cu`, `nf4_dequantization_lut`), from -1 to 1, code = index.
 */
export const NF4_LEVELS: Float32Array = new Float32Array([
  -1.0,
  -0.6961928009986877,
  -0.5250730514526367,
  -0.39491748809814453,
  -0.28444138169288635,
  -0.18477343022823334,
  -0.09105003625154495,
  0.0,
  0.07958029955625534,
  0.16093020141124725,
  0.24611230194568634,
  0.33791524171829224,
  0.44070982933044434,
  0.5626170039176941,
  0.7229568362236023,
  1.0,
]);

/** The code of level 0.0. */
export const NF4_ZERO_CODE = 7;

/** Default elements per block: bitsandbytes' and QLoRA's default. */
export const NF4_DEFAULT_BLOCK_SIZE = 64;

/**
 * Largest block size accepted: larger blocks only lose precision, and a
 * bound keeps carried partial blocks small in streaming code.
 */
export const NF4_MAX_BLOCK_SIZE = 1 << 20;

/** Largest gap between adjacent levels (-1 to -0.6962): the error bound is `s × this / 2`. */
export const NF4_MAX_LEVEL_GAP: number = (() => {
  let gap = 0;
  for (let i = 1; i < 16; i++) gap = Math.max(gap, NF4_LEVELS[i]! - NF4_LEVELS[i - 1]!);
  return gap;
})();

/** Midpoints between adjacent levels, in f32: `MIDPOINTS[i]` separates code i and i+1. */
const MIDPOINTS = new Float32Array(15).map((_, i) =>
  Math.fround((NF4_LEVELS[i]! + NF4_LEVELS[i + 1]!) / 2)
);

/** Double quantization: scale codes run 0..255. */
const SCALE_CODE_MAX = 255;

/**
 * Check a block size: a positive even integer up to {@linkcode NF4_MAX_BLOCK_SIZE}
 * (even, so a block is whole bytes of codes).
 *
 * @param blockSize The block size.
 * @throws {RangeError} When it is not.
 */
export function checkNf4BlockSize(blockSize: number): void {
  if (
    !Number.isSafeInteger(blockSize) || blockSize < 2 || blockSize % 2 !== 0 ||
    blockSize > NF4_MAX_BLOCK_SIZE
  ) {
    throw new RangeError(
      `Cannot use NF4 block size ${blockSize}: expected an even integer in [2, ${NF4_MAX_BLOCK_SIZE}]`,
    );
  }
}

/**
 * The NF4 code nearest to a normalized value (ties to the lower level).
 *
 * @param v A value, normally in [-1, 1]; values outside clamp to code 0 or 15.
 * @returns The code, 0..15.
 */
export function nearestNf4Code(v: number): number {
  // NaN compares false with everything: give it level 0 rather than level -1.
  if (v !== v) return NF4_ZERO_CODE;
  // Binary search over the 15 midpoints: code = number of midpoints strictly below v.
  let lo = 0;
  let hi = 15;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (v > MIDPOINTS[mid]!) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Per-block statistics of NF4: scale and (optional) zero point. */
export interface Nf4BlockStats {
  /** Block scale: absmax, or half the range with zero points. */
  scale: number;
  /** Zero point (0 without zero points). */
  zero: number;
}

/**
 * Scale (and zero point) of one block.
 *
 * @param values The block's values.
 * @param zeroPoint Use `(max+min)/2` as zero point and half the range as scale.
 * @returns The block's scale and zero.
 */
export function nf4BlockStats(values: Float32Array, zeroPoint: boolean): Nf4BlockStats {
  if (!zeroPoint) {
    let absmax = 0;
    for (let i = 0; i < values.length; i++) {
      const a = Math.abs(values[i]!);
      if (a > absmax) absmax = a;
    }
    return { scale: absmax, zero: 0 };
  }
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (values.length === 0) return { scale: 0, zero: 0 };
  return {
    scale: Math.fround(Math.fround(max - min) / 2),
    zero: Math.fround(Math.fround(max + min) / 2),
  };
}

/**
 * The double-quantization factor of a tensor whose largest block scale is `maxScale`.
 *
 * @param maxScale The largest block scale (≥ 0, finite).
 * @returns `fround(maxScale / 255)`.
 */
export function nf4ScaleFactor(maxScale: number): number {
  return Math.fround(maxScale / SCALE_CODE_MAX);
}

/**
 * The 8-bit code of a block scale under double quantization; never wraps:
 * the largest scale is 255 even when `maxScale / factor` rounds above it.
 *
 * @param scale The block scale (≥ 0).
 * @param factor The tensor's factor from {@linkcode nf4ScaleFactor}.
 * @returns The code, 0..255.
 */
export function nf4ScaleCode(scale: number, factor: number): number {
  if (!(factor > 0)) return 0;
  return Math.min(SCALE_CODE_MAX, Math.max(0, Math.round(scale / factor)));
}

/**
 * Quantize one block of values into packed nibbles.
 *
 * @param values The block (even length).
 * @param scale The scale the decoder will use.
 * @param zero The zero point the decoder will use.
 * @param out Destination, `values.length / 2` bytes.
 */
export function encodeNf4Block(
  values: Float32Array,
  scale: number,
  zero: number,
  out: Uint8Array,
): void {
  const n = values.length;
  if (!(scale > 0)) {
    // All codes are level 0: 7 | 7 << 4.
    out.fill(NF4_ZERO_CODE | (NF4_ZERO_CODE << 4), 0, n >> 1);
    return;
  }
  for (let i = 0; i < n; i += 2) {
    const a = nearestNf4Code(Math.fround(Math.fround(values[i]! - zero) / scale));
    const b = nearestNf4Code(Math.fround(Math.fround(values[i + 1]! - zero) / scale));
    out[i >> 1] = a | (b << 4);
  }
}

/**
 * Dequantize packed nibbles of one block.
 *
 * @param codes `out.length / 2` bytes of codes.
 * @param scale The block scale.
 * @param zero The block zero point.
 * @param out Destination values.
 */
export function decodeNf4Block(
  codes: Uint8Array,
  scale: number,
  zero: number,
  out: Float32Array,
): void {
  for (let i = 0; i < out.length; i += 2) {
    const byte = codes[i >> 1]!;
    out[i] = Math.fround(Math.fround(NF4_LEVELS[byte & 15]! * scale) + zero);
    out[i + 1] = Math.fround(Math.fround(NF4_LEVELS[byte >> 4]! * scale) + zero);
  }
}

/**
 * Dequantize `scales.length` consecutive blocks (the batch form of
 * {@linkcode decodeNf4Block}; its WebAssembly form is picked by
 * `nf4Decoder()` in kernels.ts).
 *
 * @param codes `blockSize / 2` bytes of codes per block.
 * @param scales One scale per block.
 * @param zeros One zero point per block, or `undefined` for none.
 * @param blockSize Values per block (even).
 * @param out Destination, `scales.length * blockSize` values.
 */
export function decodeNf4Blocks(
  codes: Uint8Array,
  scales: Float32Array,
  zeros: Float32Array | undefined,
  blockSize: number,
  out: Float32Array,
): void {
  const half = blockSize / 2;
  for (let b = 0; b < scales.length; b++) {
    decodeNf4Block(
      codes.subarray(b * half, (b + 1) * half),
      scales[b]!,
      zeros ? zeros[b]! : 0,
      out.subarray(b * blockSize, (b + 1) * blockSize),
    );
  }
}

/**
 * Quantize `scales.length` consecutive blocks with their scales and zero
 * points (the batch form of {@linkcode encodeNf4Block}; its WebAssembly form
 * is picked by `nf4Encoder()` in kernels.ts).
 *
 * @param values `scales.length * blockSize` values.
 * @param scales One scale per block (as the decoder will use it).
 * @param zeros One zero point per block, or `undefined` for none.
 * @param blockSize Values per block (even).
 * @param out Destination, `blockSize / 2` bytes of codes per block.
 */
export function encodeNf4Blocks(
  values: Float32Array,
  scales: Float32Array,
  zeros: Float32Array | undefined,
  blockSize: number,
  out: Uint8Array,
): void {
  const half = blockSize / 2;
  for (let b = 0; b < scales.length; b++) {
    encodeNf4Block(
      values.subarray(b * blockSize, (b + 1) * blockSize),
      scales[b]!,
      zeros ? zeros[b]! : 0,
      out.subarray(b * half, (b + 1) * half),
    );
  }
}

/** Options of {@linkcode quantizeNf4}. */
export interface QuantizeNf4Options {
  /** Elements per block (even). @default {64} */
  blockSize?: number;
  /** Store each block scale as 8 bits plus one f32 factor per tensor. @default {false} */
  doubleQuant?: boolean;
  /** Store a zero point per block (asymmetric). @default {false} */
  zeroPoint?: boolean;
}

/** An NF4-quantized tensor (see {@linkcode quantizeNf4}). */
export interface Nf4Tensor {
  /** Elements per block. */
  readonly blockSize: number;
  /** Packed codes, `n / 2` bytes, even element in the low nibble. */
  readonly codes: Uint8Array;
  /** The scale of each block as the decoder uses it (after double quantization, if any). */
  readonly scales: Float32Array;
  /** Double quantization: the 8-bit scale codes; `undefined` without it. */
  readonly scaleCodes: Uint8Array | undefined;
  /** Double quantization: the per-tensor factor; 0 without it. */
  readonly scaleFactor: number;
  /** Zero point of each block; `undefined` without zero points. */
  readonly zeros: Float32Array | undefined;
}

/**
 * Quantize a whole tensor to NF4 in memory.
 *
 * @example Usage
 * ```ts
 * import { dequantizeNf4, quantizeNf4 } from "./nf4.ts";
 * const q = quantizeNf4(new Float32Array([1, -1, 0.5, 0]), { blockSize: 4 });
 * console.assert(q.codes[0] === (15 | (0 << 4)));
 * console.assert(dequantizeNf4(q)[1] === -1);
 * ```
 *
 * @param values The values.
 * @param options Block size, double quantization, zero points.
 * @returns Codes and scales.
 * @throws {RangeError} When the block size is invalid or does not divide the element count.
 */
export function quantizeNf4(values: Float32Array, options: QuantizeNf4Options = {}): Nf4Tensor {
  const blockSize = options.blockSize ?? NF4_DEFAULT_BLOCK_SIZE;
  checkNf4BlockSize(blockSize);
  checkNf4Divides(values.length, blockSize);
  const blocks = values.length / blockSize;
  const zeroPoint = options.zeroPoint === true;
  const scales = new Float32Array(blocks);
  const zeros = zeroPoint ? new Float32Array(blocks) : undefined;
  for (let b = 0; b < blocks; b++) {
    const s = nf4BlockStats(values.subarray(b * blockSize, (b + 1) * blockSize), zeroPoint);
    scales[b] = s.scale;
    if (zeros) zeros[b] = s.zero;
  }
  let scaleCodes: Uint8Array | undefined;
  let scaleFactor = 0;
  if (options.doubleQuant) {
    let max = 0;
    for (const s of scales) if (s > max) max = s;
    scaleFactor = nf4ScaleFactor(max);
    scaleCodes = new Uint8Array(blocks);
    for (let b = 0; b < blocks; b++) {
      const q = nf4ScaleCode(scales[b]!, scaleFactor);
      scaleCodes[b] = q;
      scales[b] = Math.fround(q * scaleFactor);
    }
  }
  const codes = new Uint8Array(values.length / 2);
  for (let b = 0; b < blocks; b++) {
    encodeNf4Block(
      values.subarray(b * blockSize, (b + 1) * blockSize),
      scales[b]!,
      zeros ? zeros[b]! : 0,
      codes.subarray(b * blockSize / 2, (b + 1) * blockSize / 2),
    );
  }
  return { blockSize, codes, scales, scaleCodes, scaleFactor, zeros };
}

/**
 * Dequantize a whole NF4 tensor.
 * Never throws. Lengths are not checked: pass the codes and scales of one tensor,
 * as the QNAT reader does.
 *
 * @param tensor Codes, scales (as used by the decoder) and zero points.
 * @returns The values.
 */
export function dequantizeNf4(
  tensor: Pick<Nf4Tensor, "blockSize" | "codes" | "scales" | "zeros">,
): Float32Array {
  const { blockSize, codes, scales, zeros } = tensor;
  const out = new Float32Array(codes.length * 2);
  for (let b = 0; b < scales.length; b++) {
    decodeNf4Block(
      codes.subarray(b * blockSize / 2, (b + 1) * blockSize / 2),
      scales[b]!,
      zeros ? zeros[b]! : 0,
      out.subarray(b * blockSize, (b + 1) * blockSize),
    );
  }
  return out;
}

/**
 * Check that `blockSize` divides `elements`.
 *
 * @param elements The element count.
 * @param blockSize The block size.
 * @param what What is being quantized, for the message.
 * @throws {RangeError} When it does not.
 */
export function checkNf4Divides(elements: number, blockSize: number, what = "tensor"): void {
  if (elements % blockSize !== 0) {
    throw new RangeError(
      `Cannot quantize ${what} to NF4: ${elements} elements are not a multiple of the block size ${blockSize}`,
    );
  }
}
