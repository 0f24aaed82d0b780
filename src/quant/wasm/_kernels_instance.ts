// This module is browser compatible.

/**
 * Internal: one thread's instance of the WebAssembly SIMD kernels, made from
 * a compiled module given to it ({@linkcode useKernelsModule}), and the
 * wrappers that copy values in and bytes out in slices.
 *
 * This module holds neither the module's bytes nor the TypeScript kernels
 * that a few inputs fall back to (rows too long for the module's memory, an
 * APR_Q4 tail, NF4 blocks larger than a slice): `kernels.ts` compiles the
 * embedded module and registers those fallbacks. An encoder worker, which
 * receives the compiled module from its pool, loads only this (a fallback
 * it lacks throws {@linkcode KernelFallbackMissing}, and the worker then
 * loads `kernels.ts`): its module graph is what it runs (docs/BENCHMARKS.md,
 * "Q4_0/Q4_1, seventh pass").
 *
 * @module
 */

import { countBlocks } from "../_count_blocks.ts";
import type { IQuantTarget } from "../i_quants_encode.ts";

interface Exports {
  memory: WebAssembly.Memory;
  heapBase(): number;
  encodeQ4K(src: number, dst: number, blocks: number, qw: number, cols: number): void;
  encodeQ5K(src: number, dst: number, blocks: number, qw: number, cols: number): void;
  encodeQ8_0(src: number, dst: number, blocks: number): void;
  encodeQ5_0(src: number, dst: number, blocks: number): void;
  encodeQ5_1(src: number, dst: number, blocks: number): void;
  encodeQ4_0(src: number, dst: number, blocks: number): void;
  encodeQ4_1(src: number, dst: number, blocks: number): void;
  widenBf16(src: number, dst: number, n: number): void;
  encodeQ8_0Bf16(src: number, dst: number, blocks: number): void;
  encodeQ4_0Bf16(src: number, dst: number, blocks: number): void;
  encodeQ4_1Bf16(src: number, dst: number, blocks: number): void;
  encodeQ5_0Bf16(src: number, dst: number, blocks: number): void;
  encodeQ5_1Bf16(src: number, dst: number, blocks: number): void;
  encodeQ1_0Bf16(src: number, dst: number, blocks: number): void;
  encodeQ6K(src: number, dst: number, blocks: number, qw: number, cols: number): void;
  encodeQ2K(src: number, dst: number, blocks: number, qw: number, cols: number): void;
  encodeQ3K(src: number, dst: number, blocks: number, qw: number, cols: number): void;
  encodeQ3KBf16(src: number, dst: number, blocks: number): void;
  encodeTq1_0(src: number, dst: number, blocks: number): void;
  encodeTq2_0(src: number, dst: number, blocks: number): void;
  encodeQ1_0(src: number, dst: number, blocks: number): void;
  encodeQ2_0(src: number, dst: number, blocks: number): void;
  encodeMxfp4(src: number, dst: number, blocks: number): void;
  encodeIq4Nl(src: number, dst: number, blocks: number, qw: number, cols: number): void;
  encodeIq4Xs(src: number, dst: number, blocks: number, qw: number, cols: number): void;
  encodeIq3Xxs(src: number, dst: number, blocks: number, qw: number, cols: number): void;
  encodeIq3S(src: number, dst: number, blocks: number, qw: number, cols: number): void;
  encodeIq2Xxs(src: number, dst: number, blocks: number, qw: number, cols: number): void;
  encodeIq2Xs(src: number, dst: number, blocks: number, qw: number, cols: number): void;
  encodeIq2S(src: number, dst: number, blocks: number, qw: number, cols: number): void;
  encodeIq1S(src: number, dst: number, blocks: number, qw: number, cols: number): void;
  encodeIq1M(src: number, dst: number, blocks: number, qw: number, cols: number): void;
  aprQ8Absmax(src: number, n: number, start: number): number;
  encodeAprQ8(src: number, dst: number, n: number, scale: number): void;
  encodeAprQ4(src: number, dst: number, blocks: number): void;
  encodeF16(src: number, dst: number, n: number): void;
  encodeBf16(src: number, dst: number, n: number): void;
  encodeF16FromBf16(src: number, dst: number, n: number): void;
  decodeQ4K(src: number, dst: number, blocks: number): void;
  decodeQ6K(src: number, dst: number, blocks: number): void;
  decodeQ8_0(src: number, dst: number, blocks: number): void;
  decodeQ4_0(src: number, dst: number, blocks: number): void;
  decodeQ4_1(src: number, dst: number, blocks: number): void;
  decodeQ5_0(src: number, dst: number, blocks: number): void;
  decodeQ5_1(src: number, dst: number, blocks: number): void;
  decodeQ2K(src: number, dst: number, blocks: number): void;
  decodeQ3K(src: number, dst: number, blocks: number): void;
  decodeQ5K(src: number, dst: number, blocks: number): void;
  decodeIq2Xxs(src: number, dst: number, blocks: number): void;
  decodeIq2Xs(src: number, dst: number, blocks: number): void;
  decodeIq2S(src: number, dst: number, blocks: number): void;
  decodeIq3Xxs(src: number, dst: number, blocks: number): void;
  decodeIq3S(src: number, dst: number, blocks: number): void;
  decodeIq1S(src: number, dst: number, blocks: number): void;
  decodeIq1M(src: number, dst: number, blocks: number): void;
  decodeIq4Nl(src: number, dst: number, blocks: number): void;
  decodeIq4Xs(src: number, dst: number, blocks: number): void;
  decodeTq1_0(src: number, dst: number, blocks: number): void;
  decodeTq2_0(src: number, dst: number, blocks: number): void;
  decodeQ1_0(src: number, dst: number, blocks: number): void;
  decodeQ2_0(src: number, dst: number, blocks: number): void;
  decodeMxfp4(src: number, dst: number, blocks: number): void;
  decodeNvfp4(src: number, dst: number, blocks: number): void;
  encodeNf4(
    src: number,
    scales: number,
    zeros: number,
    dst: number,
    blocks: number,
    blockSize: number,
  ): void;
  decodeNf4(
    src: number,
    scales: number,
    zeros: number,
    dst: number,
    blocks: number,
    blockSize: number,
  ): void;
}

/** A block decoder: whole blocks of bytes in (a trailing partial block is ignored), f32 out. */
export type BlockDecoder = (bytes: Uint8Array, out?: Float32Array) => Float32Array;

/** A block encoder: whole blocks of f32 values in, their bytes out. */
export type BlockEncoder = (values: Float32Array, out?: Uint8Array) => Uint8Array;

/**
 * A block encoder that also takes importance weights (one per column; the
 * values are then whole rows of `importance.length`).
 */
/** The targets whose WebAssembly kernel takes importance weights too. */
export type WeightedKTarget = IQuantTarget | "Q2_K" | "Q3_K" | "Q4_K" | "Q5_K" | "Q6_K";

export type WeightedBlockEncoder = (
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
) => Uint8Array;

/** The 32-value block types {@linkcode WasmKernels.encodeFromBf16} writes (and Q1_0, 128). */
export type LegacyTarget = "Q8_0" | "Q4_0" | "Q4_1" | "Q5_0" | "Q5_1" | "Q1_0";

/** The super-block types {@linkcode WasmKernels.encodeFromBf16} writes (256 values a block). */
export type KBf16Target = "Q2_K" | "Q3_K" | "Q4_K" | "Q5_K" | "Q6_K";

/** Every type {@linkcode WasmKernels.encodeFromBf16} writes (F16: a block of one value). */
export type Bf16Target = LegacyTarget | KBf16Target | "F16";

/** The kernels the module provides. */
export interface WasmKernels {
  /** Q4_K encoder, with or without importance weights (same bytes as `encodeQ4K` in q4_k.ts). */
  encodeQ4K: WeightedBlockEncoder;
  /** Q5_K encoder, with or without importance weights (same bytes as `encodeQ5K` in q5_k.ts). */
  encodeQ5K: WeightedBlockEncoder;
  /** Q8_0 encoder (same contract and bytes as `encodeQ8_0` in q8_0.ts). */
  encodeQ8_0: BlockEncoder;
  /**
   * Encode BF16 payload bytes (whole blocks: 64 bytes each, Q1_0's 256, the
   * K-quants' 512) to `target` in `out`, widening them to f32 inside the
   * module: the same bytes as decoding them, then `target`'s encoder (the
   * K-quants without importance weights), without the host's f32 pass.
   * F16 (any number of values) is llama-quantize's conversion, whose NaN is
   * 0x7e00 with its sign (`encodeF16` keeps the top payload bits).
   */
  encodeFromBf16(target: Bf16Target, bytes: Uint8Array, out: Uint8Array): void;
  /** Q5_0 encoder (same contract and bytes as `encodeQ5_0` in q5_0.ts, no importance). */
  encodeQ5_0: BlockEncoder;
  /** Q5_1 encoder (same contract and bytes as `encodeQ5_1` in q5_0.ts, no importance). */
  encodeQ5_1: BlockEncoder;
  /** Q4_0 encoder (same contract and bytes as `encodeQ4_0` in q4_0.ts, no importance). */
  encodeQ4_0: BlockEncoder;
  /** Q4_1 encoder (same contract and bytes as `encodeQ4_1` in q4_0.ts, no importance). */
  encodeQ4_1: BlockEncoder;
  /** Q6_K encoder, with or without importance weights (same bytes as `encodeQ6K` in q6_k.ts). */
  encodeQ6K: WeightedBlockEncoder;
  /** Q2_K encoder, with or without importance weights (same bytes as `encodeQ2K` in q2_k.ts). */
  encodeQ2K: WeightedBlockEncoder;
  /** Q3_K encoder, with or without importance weights (same bytes as `encodeQ3K` in q3_k.ts). */
  encodeQ3K: WeightedBlockEncoder;
  /** TQ1_0 encoder (same contract and bytes as `encodeTq1_0` in ternary_encoders.ts). */
  encodeTq1_0: BlockEncoder;
  /** TQ2_0 encoder (same contract and bytes as `encodeTq2_0` in ternary_encoders.ts). */
  encodeTq2_0: BlockEncoder;
  /** Q1_0 encoder (same contract and bytes as `encodeQ1_0` in ternary_encoders.ts). */
  encodeQ1_0: BlockEncoder;
  /** Q2_0 encoder (same contract and bytes as `encodeQ2_0` in ternary_encoders.ts). */
  encodeQ2_0: BlockEncoder;
  /** MXFP4 encoder (same contract and bytes as `encodeMxfp4` in mxfp4_encoder.ts). */
  encodeMxfp4: BlockEncoder;
  /** IQ4_NL encoder, with or without importance weights (same bytes as `encodeIq4Nl` in iq4_encode.ts). */
  encodeIq4Nl: WeightedBlockEncoder;
  /** IQ4_XS encoder, with or without importance weights (same bytes as `encodeIq4Xs` in iq4_encode.ts). */
  encodeIq4Xs: WeightedBlockEncoder;
  /** IQ3_XXS encoder (same contract and bytes as `encodeIq3Xxs` in iq3_encode.ts). */
  encodeIq3Xxs: WeightedBlockEncoder;
  /** IQ3_S encoder (same contract and bytes as `encodeIq3S` in iq3_encode.ts). */
  encodeIq3S: WeightedBlockEncoder;
  /** IQ2_XXS encoder (same contract and bytes as `encodeIq2Xxs` in iq2_encode.ts). */
  encodeIq2Xxs: WeightedBlockEncoder;
  /** IQ2_XS encoder (same contract and bytes as `encodeIq2Xs` in iq2_encode.ts). */
  encodeIq2Xs: WeightedBlockEncoder;
  /** IQ2_S encoder (same contract and bytes as `encodeIq2S` in iq2_encode.ts). */
  encodeIq2S: WeightedBlockEncoder;
  /** IQ1_S encoder (same contract and bytes as `encodeIq1S` in iq1_encode.ts). */
  encodeIq1S: WeightedBlockEncoder;
  /** IQ1_M encoder (same contract and bytes as `encodeIq1M` in iq1_encode.ts). */
  encodeIq1M: WeightedBlockEncoder;
  /** APR_Q8 absmax (same contract and result as `aprQ8Absmax` in apr_q8.ts). */
  aprQ8Absmax(values: Float32Array, start?: number): number;
  /** APR_Q8 encoder (same contract and bytes as `encodeAprQ8` in apr_q8.ts). */
  encodeAprQ8(values: Float32Array, scale: number, out?: Uint8Array): Uint8Array;
  /** APR_Q4 encoder (same contract and bytes as `encodeAprQ4` in apr_q4.ts). */
  encodeAprQ4: BlockEncoder;
  /** F16 encoder (same contract and bytes as `encodeF16` in f16.ts). */
  encodeF16: BlockEncoder;
  /** BF16 encoder (same contract and bytes as `encodeBf16` in bf16.ts). */
  encodeBf16: BlockEncoder;
  /** Q4_K decoder (same contract and values as `decodeQ4K` in q4_k.ts). */
  decodeQ4K: BlockDecoder;
  /** Q6_K decoder (same contract and values as `decodeQ6K` in q6_k.ts). */
  decodeQ6K: BlockDecoder;
  /** Q8_0 decoder (same contract and values as `decodeQ8_0` in ggml_legacy.ts). */
  decodeQ8_0: BlockDecoder;
  /** Q4_0 decoder (same contract and values as `decodeQ4_0` in ggml_legacy.ts). */
  decodeQ4_0: BlockDecoder;
  /** Q4_1 decoder (same contract and values as `decodeQ4_1` in ggml_legacy.ts). */
  decodeQ4_1: BlockDecoder;
  /** Q5_0 decoder (same contract and values as `decodeQ5_0` in ggml_legacy.ts). */
  decodeQ5_0: BlockDecoder;
  /** Q5_1 decoder (same contract and values as `decodeQ5_1` in ggml_legacy.ts). */
  decodeQ5_1: BlockDecoder;
  /** Q2_K decoder (same contract and values as `decodeQ2K` in k_quants.ts). */
  decodeQ2K: BlockDecoder;
  /** Q3_K decoder (same contract and values as `decodeQ3K` in k_quants.ts). */
  decodeQ3K: BlockDecoder;
  /** Q5_K decoder (same contract and values as `decodeQ5K` in k_quants.ts). */
  decodeQ5K: BlockDecoder;
  /** IQ2_XXS decoder (same contract and values as `decodeIq2Xxs` in i_quants.ts). */
  decodeIq2Xxs: BlockDecoder;
  /** IQ2_XS decoder (same contract and values as `decodeIq2Xs` in i_quants.ts). */
  decodeIq2Xs: BlockDecoder;
  /** IQ2_S decoder (same contract and values as `decodeIq2S` in i_quants.ts). */
  decodeIq2S: BlockDecoder;
  /** IQ3_XXS decoder (same contract and values as `decodeIq3Xxs` in i_quants.ts). */
  decodeIq3Xxs: BlockDecoder;
  /** IQ3_S decoder (same contract and values as `decodeIq3S` in i_quants.ts). */
  decodeIq3S: BlockDecoder;
  /** IQ1_S decoder (same contract and values as `decodeIq1S` in i_quants.ts). */
  decodeIq1S: BlockDecoder;
  /** IQ1_M decoder (same contract and values as `decodeIq1M` in i_quants.ts). */
  decodeIq1M: BlockDecoder;
  /** IQ4_NL decoder (same contract and values as `decodeIq4Nl` in i_quants.ts). */
  decodeIq4Nl: BlockDecoder;
  /** IQ4_XS decoder (same contract and values as `decodeIq4Xs` in i_quants.ts). */
  decodeIq4Xs: BlockDecoder;
  /** TQ1_0 decoder (same contract and values as `decodeTq1_0` in ternary.ts). */
  decodeTq1_0: BlockDecoder;
  /** TQ2_0 decoder (same contract and values as `decodeTq2_0` in ternary.ts). */
  decodeTq2_0: BlockDecoder;
  /** Q1_0 decoder (same contract and values as `decodeQ1_0` in ternary.ts). */
  decodeQ1_0: BlockDecoder;
  /** Q2_0 decoder (same contract and values as `decodeQ2_0` in ternary.ts). */
  decodeQ2_0: BlockDecoder;
  /** MXFP4 decoder (same contract and values as `decodeMxfp4` in fp4_blocks.ts). */
  decodeMxfp4: BlockDecoder;
  /** NVFP4 decoder (same contract and values as `decodeNvfp4` in fp4_blocks.ts). */
  decodeNvfp4: BlockDecoder;

  /** NF4 encoder: `encodeNf4Block` in nf4.ts over `scales.length` blocks. */
  encodeNf4Blocks: Nf4BlocksEncoder;
  /** NF4 decoder (same contract and values as `decodeNf4Blocks` in nf4.ts). */
  decodeNf4Blocks: Nf4BlocksDecoder;
}

/**
 * Decode `scales.length` NF4 blocks of `blockSize` values: codes (`blockSize / 2`
 * bytes a block), one scale and optionally one zero point a block, into `out`.
 */
export type Nf4BlocksDecoder = (
  codes: Uint8Array,
  scales: Float32Array,
  zeros: Float32Array | undefined,
  blockSize: number,
  out: Float32Array,
) => void;

/**
 * Encode `scales.length` NF4 blocks of `blockSize` values with their scales
 * (and zero points) into packed codes (`blockSize / 2` bytes a block) in `out`.
 */
export type Nf4BlocksEncoder = (
  values: Float32Array,
  scales: Float32Array,
  zeros: Float32Array | undefined,
  blockSize: number,
  out: Uint8Array,
) => void;

/**
 * Values per call: input is copied into the module's memory in slices of
 * 64 Ki f32 (256 KiB), so that memory stays small whatever the batch size.
 */
const SLICE = 1 << 16;

/**
 * The TypeScript kernels a few inputs fall back to (`kernels.ts` registers
 * them): the weighted encoders for rows longer than half a slice (and the
 * i-quants that refuse to encode without weights), APR_Q4's partial last
 * block, NF4 blocks larger than a slice.
 */
export interface KernelFallbacks {
  /** The TypeScript encoder of each weighted target. */
  weighted: Readonly<Record<WeightedKTarget, WeightedBlockEncoder>>;
  /** `encodeAprQ4` of apr_q4.ts. */
  encodeAprQ4(values: Float32Array, out?: Uint8Array): Uint8Array;
  /** `encodeNf4Blocks` of nf4.ts. */
  encodeNf4Blocks: Nf4BlocksEncoder;
  /** `decodeNf4Blocks` of nf4.ts. */
  decodeNf4Blocks: Nf4BlocksDecoder;
}

/**
 * Thrown when an input needs a TypeScript fallback that this thread has not
 * loaded (an encoder worker that loaded only this module): nothing was
 * written to the caller's output, so the caller can load `kernels.ts` and
 * encode the same input again.
 */
export class KernelFallbackMissing extends Error {
  /** @param what The kernel that needs its fallback. */
  constructor(what: string) {
    super(`Cannot encode ${what} here: its TypeScript fallback is not loaded`);
    this.name = "KernelFallbackMissing";
  }
}

let kernels: WasmKernels | null | undefined;
/** The compiled module: null where WebAssembly cannot run, undefined until known. */
let compiled: WebAssembly.Module | null | undefined;
let fallbacks: KernelFallbacks | undefined;

/**
 * This thread's kernels from the module given to {@linkcode useKernelsModule},
 * instantiated on first use.
 *
 * @returns The kernels, or `undefined` when no module was given (or it was
 *   null, or cannot be instantiated here).
 */
export function kernelsInstance(): WasmKernels | undefined {
  if (kernels === undefined && compiled !== undefined) {
    kernels = compiled === null ? null : instantiate(compiled);
  }
  return kernels ?? undefined;
}

/**
 * The module this thread's kernels are (or will be) made from.
 *
 * @returns The module; null where WebAssembly cannot run; undefined until given.
 */
export function givenKernelsModule(): WebAssembly.Module | null | undefined {
  return compiled;
}

/**
 * Make this thread's kernels from `module` (compiled here by `kernels.ts`, or
 * in another thread and posted): the first module given is kept.
 *
 * @param module The kernels' compiled module, or null where WebAssembly cannot run.
 */
export function useKernelsModule(module: WebAssembly.Module | null): void {
  if (compiled === undefined) compiled = module;
}

/**
 * Register the TypeScript fallbacks (`kernels.ts` does, once per thread).
 *
 * @param f The fallbacks.
 */
export function registerKernelFallbacks(f: KernelFallbacks): void {
  fallbacks = f;
}

function fallback(what: string): KernelFallbacks {
  if (fallbacks === undefined) throw new KernelFallbackMissing(what);
  return fallbacks;
}

function instantiate(module: WebAssembly.Module): WasmKernels | null {
  let exports: Exports;
  try {
    exports = new WebAssembly.Instance(module, {}).exports as unknown as Exports;
  } catch {
    // CSP without wasm-unsafe-eval, or no SIMD support: the TypeScript kernels.
    return null;
  }
  // Layout: [kernels' scratch | SLICE f32 in | up to SLICE bytes out | SLICE bf16 in].
  const base = (exports.heapBase() + 15) & ~15;
  const outBase = base + 4 * SLICE;
  const bf16Base = outBase + SLICE;
  const need = bf16Base + 2 * SLICE;
  const have = exports.memory.buffer.byteLength;
  if (need > have) exports.memory.grow(Math.ceil((need - have) / 65536));
  // The memory never grows after this, so the views stay valid.
  const src = new Float32Array(exports.memory.buffer, base, SLICE);
  const dst = new Uint8Array(exports.memory.buffer, outBase, SLICE);
  const bf16 = new Uint8Array(exports.memory.buffer, bf16Base, 2 * SLICE);

  // A K-quant kernel (no importance weights) on bf16 at `src`: widened to the
  // f32 region first (a slice of 256 super-blocks stays in cache), except
  // Q3_K, whose kernel widens one super-block at a time.
  const widened = (
    run: (src: number, dst: number, blocks: number, qw: number, cols: number) => void,
  ) =>
  (src: number, dst: number, blocks: number): void => {
    exports.widenBf16(src, base, 256 * blocks);
    run(base, dst, blocks, 0, 0);
  };
  // Each kernel, its block's bytes, and its block's values.
  const legacy: Record<
    Bf16Target,
    [(src: number, dst: number, blocks: number) => void, number, number]
  > = {
    Q8_0: [exports.encodeQ8_0Bf16, 34, 32],
    Q4_0: [exports.encodeQ4_0Bf16, 18, 32],
    Q4_1: [exports.encodeQ4_1Bf16, 20, 32],
    Q5_0: [exports.encodeQ5_0Bf16, 22, 32],
    Q5_1: [exports.encodeQ5_1Bf16, 24, 32],
    Q1_0: [exports.encodeQ1_0Bf16, 18, 128],
    Q2_K: [widened(exports.encodeQ2K), 84, 256],
    Q3_K: [exports.encodeQ3KBf16, 110, 256],
    Q4_K: [widened(exports.encodeQ4K), 144, 256],
    Q5_K: [widened(exports.encodeQ5K), 176, 256],
    Q6_K: [widened(exports.encodeQ6K), 210, 256],
    F16: [exports.encodeF16FromBf16, 2, 1],
  };
  const encodeFromBf16 = (target: Bf16Target, bytes: Uint8Array, out: Uint8Array): void => {
    const [run, blockBytes, blockValues] = legacy[target];
    const inBlock = 2 * blockValues;
    const nb = bytes.length / inBlock;
    if (!Number.isInteger(nb) || out.length < nb * blockBytes) {
      throw new RangeError(
        `Cannot encode ${target} from bf16: ${bytes.length} bytes are not whole ${blockValues}-value blocks, or the output is short`,
      );
    }
    // Slices fit the bf16 region and the byte region.
    const sliceBlocks = Math.min(SLICE / blockValues, Math.floor(SLICE / blockBytes));
    for (let b = 0; b < nb; b += sliceBlocks) {
      const k = Math.min(sliceBlocks, nb - b);
      bf16.set(bytes.subarray(b * inBlock, (b + k) * inBlock));
      run(bf16Base, outBase, k);
      out.set(dst.subarray(0, k * blockBytes), b * blockBytes);
    }
  };

  const blockKernel = (
    name: string,
    run: (src: number, dst: number, blocks: number) => void,
    blockBytes: number,
    blockValues = 256,
  ): BlockEncoder =>
  (values, out) => {
    if (values.length % blockValues !== 0) {
      throw new RangeError(
        `Cannot encode ${name}: ${values.length} values are not a whole number of ${blockValues}-value blocks`,
      );
    }
    const nb = values.length / blockValues;
    const y = out ?? new Uint8Array(nb * blockBytes);
    // Q8_0 takes 34 bytes per 32 values: slices fit both regions.
    const sliceBlocks = Math.min(SLICE / blockValues, Math.floor(SLICE / blockBytes));
    for (let b = 0; b < nb; b += sliceBlocks) {
      const k = Math.min(sliceBlocks, nb - b);
      src.set(values.subarray(b * blockValues, (b + k) * blockValues));
      run(base, outBase, k);
      y.set(dst.subarray(0, k * blockBytes), b * blockBytes);
    }
    return y;
  };

  // The i-quant and Q2_K encoders take importance weights: they sit at the end of the
  // f32 region and each call gets whole rows before them (rows longer than
  // half a slice go to the TypeScript encoder).
  const weightedKernel = (
    type: WeightedKTarget,
    run: (src: number, dst: number, blocks: number, qw: number, cols: number) => void,
    blockBytes: number,
    blockValues: number,
    needsImportance = false,
  ): WeightedBlockEncoder =>
  (values, out, importance) => {
    const nb = countBlocks(type, values, importance);
    const cols = importance?.length ?? 0;
    // The TypeScript encoder also refuses IQ2_XXS and IQ2_XS without weights.
    if (cols > SLICE / 2 || (cols === 0 && needsImportance)) {
      return fallback(type).weighted[type](values, out, importance);
    }
    const y = out ?? new Uint8Array(nb * blockBytes);
    let step = Math.min(SLICE / blockValues, Math.floor(SLICE / blockBytes));
    let qw = 0;
    if (importance !== undefined) {
      qw = base + 4 * (SLICE - cols);
      src.set(importance, SLICE - cols);
      // Whole rows that leave the weights in place.
      const rowBlocks = cols / blockValues;
      step = Math.floor(Math.min(step, (SLICE - cols) / blockValues) / rowBlocks) * rowBlocks;
    }
    for (let b = 0; b < nb; b += step) {
      const k = Math.min(step, nb - b);
      src.set(values.subarray(b * blockValues, (b + k) * blockValues));
      run(base, outBase, k, qw, cols);
      y.set(dst.subarray(0, k * blockBytes), b * blockBytes);
    }
    return y;
  };

  // f16/bf16: two bytes a value, so half a slice of values per call.
  const halfKernel = (
    name: string,
    run: (src: number, dst: number, n: number) => void,
  ): BlockEncoder =>
  (values, out) => {
    const n = values.length;
    const y = out ?? new Uint8Array(2 * n);
    if (y.length < 2 * n) {
      throw new RangeError(
        `Cannot encode ${name}: output holds ${y.length} bytes, ${2 * n} needed`,
      );
    }
    for (let i = 0; i < n; i += SLICE / 2) {
      const part = values.subarray(i, i + SLICE / 2);
      src.set(part);
      run(base, outBase, part.length);
      y.set(dst.subarray(0, 2 * part.length), 2 * i);
    }
    return y;
  };

  // Decoders: encoded bytes go to the byte region (no format takes more than
  // a byte per value), f32 values come back from the f32 region.
  const decodeKernel = (
    run: (src: number, dst: number, blocks: number) => void,
    blockBytes: number,
    blockValues = 256,
  ): BlockDecoder =>
  (bytes, out) => {
    // As the TypeScript decoders: whole blocks only, and no more than `out` holds.
    const nb = Math.min(
      Math.floor(bytes.length / blockBytes),
      out === undefined ? Infinity : Math.floor(out.length / blockValues),
    );
    const y = out ?? new Float32Array(nb * blockValues);
    // Q8_0 takes 34 bytes per 32 values: slices fit both regions.
    const sliceBlocks = Math.min(Math.floor(SLICE / blockBytes), SLICE / blockValues);
    for (let b = 0; b < nb; b += sliceBlocks) {
      const k = Math.min(sliceBlocks, nb - b);
      dst.set(bytes.subarray(b * blockBytes, (b + k) * blockBytes));
      run(outBase, base, k);
      y.set(src.subarray(0, k * blockValues), b * blockValues);
    }
    return y;
  };

  // NF4 blocks per call: values use the f32 region; codes (half a byte per
  // value) and the per-block f32 scales (and zero points) share the byte region.
  const nf4SliceBlocks = (blockSize: number, zeros: Float32Array | undefined): number => {
    const perBlock = blockSize / 2 + (zeros === undefined ? 4 : 8);
    return Math.min(Math.floor(SLICE / blockSize), Math.floor(SLICE / perBlock));
  };
  // Copy blocks b..b+k's scales (and zero points) in after the codes, at a
  // 4-byte boundary; their addresses (0 for no zero points).
  const placeNf4Fields = (
    scales: Float32Array,
    zeros: Float32Array | undefined,
    b: number,
    k: number,
    codeBytes: number,
  ): [number, number] => {
    const scalesAt = outBase + ((codeBytes + 3) & ~3);
    new Float32Array(exports.memory.buffer, scalesAt, k).set(scales.subarray(b, b + k));
    if (zeros === undefined) return [scalesAt, 0];
    const zerosAt = scalesAt + 4 * k;
    new Float32Array(exports.memory.buffer, zerosAt, k).set(zeros.subarray(b, b + k));
    return [scalesAt, zerosAt];
  };

  return {
    encodeQ4K: weightedKernel("Q4_K", exports.encodeQ4K, 144, 256),
    encodeQ5K: weightedKernel("Q5_K", exports.encodeQ5K, 176, 256),
    encodeQ8_0: blockKernel("Q8_0", exports.encodeQ8_0, 34, 32),
    encodeFromBf16,
    encodeQ5_0: blockKernel("Q5_0", exports.encodeQ5_0, 22, 32),
    encodeQ5_1: blockKernel("Q5_1", exports.encodeQ5_1, 24, 32),
    encodeQ4_0: blockKernel("Q4_0", exports.encodeQ4_0, 18, 32),
    encodeQ4_1: blockKernel("Q4_1", exports.encodeQ4_1, 20, 32),
    encodeQ6K: weightedKernel("Q6_K", exports.encodeQ6K, 210, 256),
    encodeQ2K: weightedKernel("Q2_K", exports.encodeQ2K, 84, 256),
    encodeQ3K: weightedKernel("Q3_K", exports.encodeQ3K, 110, 256),
    encodeTq1_0: blockKernel("TQ1_0", exports.encodeTq1_0, 54),
    encodeTq2_0: blockKernel("TQ2_0", exports.encodeTq2_0, 66),
    encodeQ1_0: blockKernel("Q1_0", exports.encodeQ1_0, 18, 128),
    encodeQ2_0: blockKernel("Q2_0", exports.encodeQ2_0, 18, 64),
    encodeMxfp4: blockKernel("MXFP4", exports.encodeMxfp4, 17, 32),
    encodeIq4Nl: weightedKernel("IQ4_NL", exports.encodeIq4Nl, 18, 32),
    encodeIq4Xs: weightedKernel("IQ4_XS", exports.encodeIq4Xs, 136, 256),
    encodeIq3Xxs: weightedKernel("IQ3_XXS", exports.encodeIq3Xxs, 98, 256),
    encodeIq3S: weightedKernel("IQ3_S", exports.encodeIq3S, 110, 256),
    encodeIq2Xxs: weightedKernel("IQ2_XXS", exports.encodeIq2Xxs, 66, 256, true),
    encodeIq2Xs: weightedKernel("IQ2_XS", exports.encodeIq2Xs, 74, 256, true),
    encodeIq2S: weightedKernel("IQ2_S", exports.encodeIq2S, 82, 256),
    encodeIq1S: weightedKernel("IQ1_S", exports.encodeIq1S, 50, 256, true),
    encodeIq1M: weightedKernel("IQ1_M", exports.encodeIq1M, 56, 256),
    aprQ8Absmax(values, start = 0) {
      let m = start;
      for (let i = 0; i < values.length; i += SLICE) {
        const part = values.subarray(i, i + SLICE);
        src.set(part);
        m = exports.aprQ8Absmax(base, part.length, m);
      }
      return m;
    },
    encodeAprQ8(values, scale, out) {
      const y = out ?? new Uint8Array(values.length);
      for (let i = 0; i < values.length; i += SLICE) {
        const part = values.subarray(i, i + SLICE);
        src.set(part);
        exports.encodeAprQ8(base, outBase, part.length, scale);
        y.set(dst.subarray(0, part.length), i);
      }
      return y;
    },
    encodeAprQ4(values, out) {
      const blocks = Math.ceil(values.length / 32);
      const y = out ?? new Uint8Array(blocks * 18);
      const whole = Math.floor(values.length / 32);
      for (let b = 0; b < whole; b += SLICE / 32) {
        const k = Math.min(SLICE / 32, whole - b);
        src.set(values.subarray(b * 32, (b + k) * 32));
        exports.encodeAprQ4(base, outBase, k);
        y.set(dst.subarray(0, k * 18), b * 18);
      }
      // A last partial block (padded with code 8): the TypeScript kernel.
      if (whole < blocks) {
        fallback("APR_Q4").encodeAprQ4(values.subarray(whole * 32), y.subarray(whole * 18));
      }
      return y;
    },
    encodeF16: halfKernel("f16", exports.encodeF16),
    encodeBf16: halfKernel("bf16", exports.encodeBf16),
    decodeQ4K: decodeKernel(exports.decodeQ4K, 144),
    decodeQ6K: decodeKernel(exports.decodeQ6K, 210),
    decodeQ8_0: decodeKernel(exports.decodeQ8_0, 34, 32),
    decodeQ4_0: decodeKernel(exports.decodeQ4_0, 18, 32),
    decodeQ4_1: decodeKernel(exports.decodeQ4_1, 20, 32),
    decodeQ5_0: decodeKernel(exports.decodeQ5_0, 22, 32),
    decodeQ5_1: decodeKernel(exports.decodeQ5_1, 24, 32),
    decodeQ2K: decodeKernel(exports.decodeQ2K, 84),
    decodeQ3K: decodeKernel(exports.decodeQ3K, 110),
    decodeQ5K: decodeKernel(exports.decodeQ5K, 176),
    decodeIq2Xxs: decodeKernel(exports.decodeIq2Xxs, 66),
    decodeIq2Xs: decodeKernel(exports.decodeIq2Xs, 74),
    decodeIq2S: decodeKernel(exports.decodeIq2S, 82),
    decodeIq3Xxs: decodeKernel(exports.decodeIq3Xxs, 98),
    decodeIq3S: decodeKernel(exports.decodeIq3S, 110),
    decodeIq1S: decodeKernel(exports.decodeIq1S, 50),
    decodeIq1M: decodeKernel(exports.decodeIq1M, 56),
    decodeIq4Nl: decodeKernel(exports.decodeIq4Nl, 18, 32),
    decodeIq4Xs: decodeKernel(exports.decodeIq4Xs, 136),
    decodeTq1_0: decodeKernel(exports.decodeTq1_0, 54),
    decodeTq2_0: decodeKernel(exports.decodeTq2_0, 66),
    decodeQ1_0: decodeKernel(exports.decodeQ1_0, 18, 128),
    decodeQ2_0: decodeKernel(exports.decodeQ2_0, 18, 64),
    decodeMxfp4: decodeKernel(exports.decodeMxfp4, 17, 32),
    decodeNvfp4: decodeKernel(exports.decodeNvfp4, 36, 64),
    encodeNf4Blocks(values, scales, zeros, blockSize, out) {
      const sliceBlocks = nf4SliceBlocks(blockSize, zeros);
      if (sliceBlocks < 1) {
        return fallback("NF4").encodeNf4Blocks(values, scales, zeros, blockSize, out);
      }
      for (let b = 0; b < scales.length; b += sliceBlocks) {
        const k = Math.min(sliceBlocks, scales.length - b);
        const codeBytes = (k * blockSize) / 2;
        src.set(values.subarray(b * blockSize, (b + k) * blockSize));
        const [scalesAt, zerosAt] = placeNf4Fields(scales, zeros, b, k, codeBytes);
        exports.encodeNf4(base, scalesAt, zerosAt, outBase, k, blockSize);
        out.set(dst.subarray(0, codeBytes), (b * blockSize) / 2);
      }
    },
    decodeNf4Blocks(codes, scales, zeros, blockSize, out) {
      const sliceBlocks = nf4SliceBlocks(blockSize, zeros);
      if (sliceBlocks < 1) {
        return fallback("NF4").decodeNf4Blocks(codes, scales, zeros, blockSize, out);
      }
      for (let b = 0; b < scales.length; b += sliceBlocks) {
        const k = Math.min(sliceBlocks, scales.length - b);
        const codeBytes = (k * blockSize) / 2;
        dst.set(codes.subarray((b * blockSize) / 2, (b * blockSize) / 2 + codeBytes));
        const [scalesAt, zerosAt] = placeNf4Fields(scales, zeros, b, k, codeBytes);
        exports.decodeNf4(outBase, scalesAt, zerosAt, base, k, blockSize);
        out.set(src.subarray(0, k * blockSize), b * blockSize);
      }
    },
  };
}
