// This module is browser compatible.

/**
 * The header rewrite of {@linkcode QuantizeStream}, as a pure function: which
 * dtype each tensor gets, its exact new payload size, and the metadata's
 * `quantization` record.
 *
 * @module
 */

import { type DType, DTYPES, elementCount, isAprStorable, tensorByteLength } from "../dtype.ts";
import type { ModelHeader, ModelMetadata, TensorInfo } from "../tensor.ts";
import { hfToGgufName } from "../arch/names.ts";
import { familyOf } from "../arch/registry.ts";
import {
  APR_PRESETS,
  keptInFloat32ByConverter,
  LLAMA_PRESETS,
  type LlamaPreset,
  type LlamaQuantizeParams,
  presetDefaultType,
  presetTensorTypes,
  requiresImatrix,
  rowFallbackType,
} from "./llama_presets.ts";
import { isEncodeTarget } from "./_tensor_encoder.ts";
import { usesImportance } from "./_block_encoders.ts";
import { UsageError } from "../errors.ts";
import { aprRowType, type RowFallback } from "./apr_row_fallback.ts";

/**
 * What {@linkcode planQuantization} may convert float weights to: a single
 * type (`"q4_k"` is llama-quantize's `--pure` Q4_K), or one of llama-quantize's
 * file types in lower case (`"q4_k_m"`, `"iq2_xxs"`, …; `"q6_k"` is both, see
 * {@linkcode QuantizeOptions.ggufTypes}).
 */
export type QuantizeTarget =
  | "none"
  | "f16"
  | "bf16"
  | "q8"
  | "q4"
  | "q4_k"
  | Lowercase<LlamaPreset>;

/** Every {@linkcode QuantizeTarget}, for argument parsing. */
export const QUANTIZE_TARGETS: readonly QuantizeTarget[] = [
  "none",
  "f16",
  "bf16",
  "q8",
  "q4",
  "q4_k",
  ...LLAMA_PRESETS.map((p) => p.toLowerCase() as Lowercase<LlamaPreset>),
];

/**
 * The targets whose types a format holds: a target whose type the format
 * has not (APR_Q8 or APR_Q4 in a GGUF, Q4_K in SafeTensors) would be written
 * as F32, bigger than the source, so it is not offered (issue 34 §2). APR
 * takes every target but Q8_0 (its readers do not decode it); llama-quantize's
 * presets other than `q6_k` are GGUF's and APR's.
 *
 * @example Usage
 * ```ts
 * import { quantizeTargetsFor } from "./plan_quantization.ts";
 * console.assert(!quantizeTargetsFor("gguf").includes("q8"));
 * console.assert(quantizeTargetsFor("gguf").includes("q8_0"));
 * ```
 *
 * @param format The output format.
 * @returns The targets, in {@linkcode QUANTIZE_TARGETS} order.
 */
export function quantizeTargetsFor(format: "apr" | "gguf" | "safetensors"): QuantizeTarget[] {
  return QUANTIZE_TARGETS.filter((to) => {
    // APR holds its own types and the K-quant mixes it maps (aprPresetRefusal).
    if (format === "apr") return to !== "q8_0" && aprPresetRefusal(to) === undefined;
    const preset = presetOf(to, format === "gguf");
    if (preset !== undefined) return format === "gguf";
    const dtype = TARGET_DTYPE[to];
    if (dtype === undefined) return true;
    return DTYPES[dtype][format === "gguf" ? "ggufType" : "safetensors"] !== undefined;
  });
}

/**
 * The type a single-type target writes (`"q8"` → `APR_Q8`), or `undefined`
 * for `none` and llama-quantize's presets.
 *
 * @param to The target.
 * @returns The type.
 */
export function targetDType(to: QuantizeTarget): DType | undefined {
  return TARGET_DTYPE[to];
}

/** The targets that are llama-quantize presets, and the preset each names. */
const PRESET_OF: ReadonlyMap<QuantizeTarget, LlamaPreset> = new Map(
  LLAMA_PRESETS.map((p) => [p.toLowerCase() as QuantizeTarget, p]),
);

/**
 * The llama-quantize preset a target selects for the output, or `undefined`
 * for a single-type target. `q6_k` is the Q6_K preset for GGUF output (on
 * models whose rows are whole super-blocks it is also what `--pure` gives)
 * and today's single-type Q6_K for APR.
 *
 * @param to The target.
 * @param ggufTypes Whether the output holds every ggml type (GGUF).
 * @returns The preset, if any.
 */
export function presetOf(to: QuantizeTarget, ggufTypes: boolean): LlamaPreset | undefined {
  if (to === "q6_k" && !ggufTypes) return undefined;
  return PRESET_OF.get(to);
}

/** Options of {@linkcode planQuantization} and `QuantizeStream`. */
export interface QuantizeOptions {
  /**
   * Target of the float weights the policy selects: `"f16"`, `"bf16"`, APR's
   * `"q8"` (APR_Q8) and `"q4"` (APR_Q4), or ggml's `"q4_k"` and `"q6_k"`.
   *
   * @default {"none"}
   */
  to?: QuantizeTarget;
  /**
   * Convert every float tensor, including norms, biases and tensors under
   * 1024 elements, which otherwise keep their type (as aprender does).
   *
   * @default {false}
   */
  all?: boolean;
  /**
   * Keep F64 tensors as F64. By default they become F32, because realizar
   * reads APR code 3 as a ggml type for weights (APR_V2.md §5).
   *
   * @default {false}
   */
  keepF64?: boolean;
  /**
   * The output holds every ggml type (GGUF): presets choose llama.cpp's types
   * (Q5_K, Q8_0, the Q5_0/Q5_1/F16 fallbacks), and `f16`/`bf16` take every
   * matrix `.weight` but norms as llama.cpp's converter does, small ones
   * too. Otherwise (APR) their mapping to F32, Q4_K and Q6_K (docs/QUANTIZATION.md).
   *
   * @default {false}
   */
  ggufTypes?: boolean;
  /**
   * Importance matrix (llama-imatrix's per-column weights, by GGUF tensor
   * name): presets and the K-quant targets weight the quantization error with
   * it as `llama-quantize --imatrix` does. A tensor it lacks is quantized
   * without; a wrong size is an error (token_embd's is ignored), as in llama-quantize.
   */
  importance?: ReadonlyMap<string, Float32Array>;
  /**
   * APR output (not `ggufTypes`): what Q4_K/Q6_K tensors whose rows are not
   * whole 256-value super-blocks become (`apr_row_fallback.ts`): APR_Q8, F16,
   * or the row-padded K-quant only realizar's transformer loader decodes.
   *
   * @default {"q8"}
   */
  rowFallback?: RowFallback;
  /**
   * llama-quantize's per-tensor options (`--output-tensor-type`,
   * `--tensor-type`, `--pure`, …) for a preset target with `ggufTypes`.
   */
  llamaQuantize?: LlamaQuantizeParams;
  /**
   * GGUF output of an architecture whose converter class converts every
   * matrix to its `--outtype`, MoE routers too (DBRX's `tensor_force_quant`
   * returns `n_dims > 1`): with `ggufTypes` and a single-type target, every
   * matrix `.weight` but norms takes the target, whatever its size.
   *
   * @default {false}
   */
  everyMatrix?: boolean;
  /**
   * GGUF output: matrices (by GGUF name) the converter converts to its
   * `--outtype` though its F32 list names their kind (Nemotron-H's
   * multi-token-prediction router); presets keep them F32 as llama-quantize does.
   */
  convertedAnyway?: ReadonlySet<string>;
  /**
   * GGUF output of an architecture whose converter class keeps each float
   * tensor in its source type whatever its `--outtype` (DeepSeek-V4's
   * `tensor_force_quant`): with `ggufTypes` and a target that is one of the
   * converter's `--outtype` values (`f16`, `bf16`, `q8_0`), F32 stays F32 and
   * a BF16 matrix BF16 (a 1-D one F32, as always); presets requantize all.
   *
   * @default {false}
   */
  sourceFloats?: boolean;
  /**
   * GGUF output: tensors (by GGUF name) whose type the converter class forces
   * under each of its `--outtype` values (`none`, `f16`, `bf16`, `q8_0`):
   * DeepSeek-V4's matrices dequantized from FP8, Q8_0 whatever the outtype.
   */
  forcedTypes?: ReadonlyMap<string, DType>;
  /**
   * GGUF output whose Q8_0 is llama-quantize's file type, not the
   * converter's `--outtype q8_0` (kept blocks quantized again with
   * `--allow-requantize`): its tensors are the ones llama-quantize quantizes.
   *
   * @default {false}
   */
  llamaQuantizeQ8_0?: boolean;
}

/** How one tensor's payload is produced. */
export type TensorAction =
  /** The source bytes verbatim. */
  | "copy"
  /** Integer widening or BOOL → U8, byte by byte. */
  | "integer"
  /** Decode to f32, then encode to the new dtype. */
  | "float";

/** The plan for one tensor. */
export interface TensorPlan {
  /** The tensor as it arrives. */
  readonly source: TensorInfo;
  /** The tensor as it leaves (dtype and byteLength rewritten). */
  readonly info: TensorInfo;
  /** How the payload is produced. */
  readonly action: TensorAction;
  /** True when the policy quantized it to the requested target. */
  readonly quantized: boolean;
  /** Importance weights for its encoder (one per column of each matrix). */
  readonly importance?: Float32Array;
  /**
   * The K-quant the policy chose, when the tensor's rows are not whole
   * super-blocks and APR output gets {@linkcode QuantizeOptions.rowFallback}'s type instead.
   */
  readonly rowFallbackFrom?: DType;
}

/** Tensors smaller than this keep their float type (aprender's rule). */
export const MIN_QUANTIZE_ELEMENTS = 1024;

/** The single-type targets' dtypes (presets choose per tensor; `q6_k` is also APR's single Q6_K). */
const TARGET_DTYPE: Readonly<Partial<Record<QuantizeTarget, DType>>> = {
  f16: "F16",
  bf16: "BF16",
  q8: "APR_Q8",
  q4: "APR_Q4",
  q4_k: "Q4_K",
  q6_k: "Q6_K",
};

/** The `quantization` record of a target: APR's own two, or the main type of a ggml one. */
function quantizationRecord(
  to: QuantizeTarget,
): NonNullable<ModelMetadata["quantization"]> | undefined {
  if (to === "q8") return { quant_type: "q8", bits: 8, block_size: null, symmetric: true };
  if (to === "q4") return { quant_type: "q4", bits: 4, block_size: 32, symmetric: true };
  const preset = PRESET_OF.get(to);
  const main = to === "q4_k"
    ? "Q4_K"
    : preset === undefined
    ? undefined
    : presetDefaultType(preset);
  if (main === undefined) return undefined;
  const spec = DTYPES[main];
  return {
    quant_type: to,
    // Whole bits per value (Q4_K's 4.5 is 4, as aprender records it).
    bits: Math.floor((spec.blockBytes * 8) / spec.blockElements),
    block_size: spec.blockElements,
    // The types that store a min per block besides the scale.
    symmetric: !["Q2_K", "Q4_K", "Q5_K", "Q4_1", "Q5_1"].includes(main),
  };
}

/** Integer types APR cannot hold, and the wider type that holds every value. */
const INTEGER_WIDENING: Partial<Record<DType, DType>> = {
  BOOL: "U8",
  I16: "I32",
  U16: "I32",
  U32: "I64",
  U64: "I64",
};

/**
 * Lossless float types for the small floats APR cannot hold: every F8_E4M3,
 * F8_E5M2, F6 and F4 value is exact in F16; F8_E8M0's powers of two from
 * 2^-127 to 2^127 are exact in BF16.
 */
const LOSSLESS_FLOAT: Partial<Record<DType, DType>> = {
  F8_E4M3: "F16",
  F8_E5M2: "F16",
  F6_E2M3: "F16",
  F6_E3M2: "F16",
  F4: "F16",
  F8_E8M0: "BF16",
};

/** Already-quantized types APR stores: never re-quantized (APR_V2.md §5). */
const KEEP_QUANTIZED = new Set<DType>(["Q4_K", "Q6_K", "APR_Q4", "APR_Q8"]);

/**
 * Whether aprender's policy keeps `name` in its float type: norms and biases
 * (`*norm*`, `*.bias`, GPT-2's `ln_*`).
 */
export function isNormOrBias(name: string): boolean {
  return /norm/i.test(name) || /bias$/i.test(name) || /(^|\.)ln_[^.]*\./i.test(name);
}

/**
 * Plan one tensor.
 *
 * @param info The tensor as it arrives.
 * @param options Target and policy.
 * @returns Its plan.
 * @throws {TypeError} For C64, which APR cannot store in any form.
 */
export function planTensor(info: TensorInfo, options: QuantizeOptions = {}): TensorPlan {
  const dtype = info.dtype;
  const spec = DTYPES[dtype];
  const plan = (to: DType, action: TensorAction, quantized = false): TensorPlan => {
    if (to === dtype) return { source: info, info, action: "copy", quantized: false };
    const byteLength = tensorByteLength(to, info.shape);
    return { source: info, info: { ...info, dtype: to, byteLength }, action, quantized };
  };
  if (dtype === "C64") {
    throw new TypeError(
      `Cannot store tensor "${info.name}" in APR: C64 (complex) values have no APR dtype`,
    );
  }
  if (!spec.isFloat) return plan(INTEGER_WIDENING[dtype] ?? dtype, "integer");
  if (KEEP_QUANTIZED.has(dtype) || keptForGguf(info, options)) return plan(dtype, "copy");
  const kept = forcedPlan(info, options) ?? sourceFloatPlan(info, options);
  if (kept !== undefined) return kept;
  const target = TARGET_DTYPE[options.to ?? "none"];
  // GGUF F16/BF16 follow llama.cpp's converter (--outtype f16/bf16): every matrix
  // `.weight` but norms and what llama.cpp keeps in F32 (MoE routers…),
  // whatever its size; 1-D tensors stay F32.
  const gguf = options.ggufTypes === true;
  // As the converter: a tensor whose GGUF name does not end in `.weight`
  // (gpt-oss's 2-D expert biases) is F32 whatever the --outtype.
  const matrix = info.shape.length >= 2 && info.name.endsWith(".weight") &&
    !isNormOrBias(info.name);
  const everyMatrix = gguf && matrix &&
    (options.everyMatrix === true || options.convertedAnyway?.has(info.name) === true);
  if (
    gguf && target !== undefined && !everyMatrix &&
    (keptInFloat32ByConverter(info.name) || !info.name.endsWith(".weight"))
  ) {
    return plan("F32", "float");
  }
  const converterFloat = gguf &&
    (everyMatrix || ((target === "F16" || target === "BF16") && matrix));
  const eligible = target !== undefined &&
    (options.all === true || converterFloat ||
      (!isNormOrBias(info.name) && elementCount(info.shape) >= MIN_QUANTIZE_ELEMENTS));
  if (eligible) {
    // GGUF cannot hold row-padded K-quants: rows that are not whole blocks get
    // llama-quantize's fallback type, encoded from the source (not from a
    // padded K-quant decoded again at the sink).
    const to = options.ggufTypes === true
      ? (DTYPES[target].ggufType !== undefined ? rowFallbackType(target, lastDim(info)) : target)
      : aprRowType(target, lastDim(info), options.rowFallback);
    const planned = plan(to, "float", target !== "F16" && target !== "BF16");
    return to === target ? planned : { ...planned, rowFallbackFrom: target };
  }
  // What a quantizing import keeps in float (norms, biases, small tensors) is
  // written as F32, which every reader decodes; BF16 (APR dtype 30) is not
  // read by aprender 0.26 or realizar's get_tensor_f32 (docs/INTEROP.md).
  if (target !== undefined && target !== "BF16" && (dtype === "BF16" || dtype === "F16")) {
    return plan("F32", "float");
  }
  if (dtype === "F64" && options.keepF64 !== true) return plan("F32", "float");
  // i-quants, ternary and FP4 blocks: APR has no code for them and aprkit no
  // encoder; F16 holds their values nearly exactly at a fraction of F32's size.
  if (spec.decodeOnly) return plan("F16", "float");
  if (isAprStorable(dtype)) return plan(dtype, "copy");
  return plan(LOSSLESS_FLOAT[dtype] ?? "F32", "float");
}

/** The targets that are llama.cpp converter `--outtype` values, which `sourceFloats` applies to. */
const CONVERTER_OUTTYPES: ReadonlySet<QuantizeTarget> = new Set(["f16", "bf16", "q8_0"]);

/**
 * The plan of a tensor whose type the converter class forces under its
 * `--outtype` values (`QuantizeOptions.forcedTypes`), or `undefined`.
 */
function forcedPlan(info: TensorInfo, options: QuantizeOptions): TensorPlan | undefined {
  const to = options.ggufTypes === true ? options.forcedTypes?.get(info.name) : undefined;
  const target = options.to ?? "none";
  if (to === undefined || (target !== "none" && !CONVERTER_OUTTYPES.has(target))) return undefined;
  if (to === info.dtype) return { source: info, info, action: "copy", quantized: false };
  return {
    source: info,
    info: { ...info, dtype: to, byteLength: tensorByteLength(to, info.shape) },
    action: "float",
    quantized: false,
  };
}

/**
 * The plan of an F32 or BF16 tensor a converter class keeps in its source
 * type (`QuantizeOptions.sourceFloats`), or `undefined` for the others.
 */
function sourceFloatPlan(info: TensorInfo, options: QuantizeOptions): TensorPlan | undefined {
  if (
    options.ggufTypes !== true || options.sourceFloats !== true ||
    !CONVERTER_OUTTYPES.has(options.to ?? "none") || (info.dtype !== "F32" && info.dtype !== "BF16")
  ) {
    return undefined;
  }
  const to = info.dtype === "BF16" && info.shape.length >= 2 ? "BF16" : "F32";
  if (to === info.dtype) return { source: info, info, action: "copy", quantized: false };
  const byteLength = tensorByteLength(to, info.shape);
  return {
    source: info,
    info: { ...info, dtype: to, byteLength },
    action: "float",
    quantized: false,
  };
}

/**
 * MXFP4 and NVFP4 blocks a checkpoint brings (gpt-oss's experts, ModelOpt's
 * and compressed-tensors' NVFP4 weights) stay so in GGUF: llama.cpp's
 * converter writes them as they are whatever its --outtype.
 */
function keptForGguf(info: TensorInfo, options: QuantizeOptions): boolean {
  return options.ggufTypes === true && (info.dtype === "MXFP4" || info.dtype === "NVFP4");
}

/** Values per row: the last dimension (1 for a scalar). */
function lastDim(info: TensorInfo): number {
  return info.shape.length === 0 ? 1 : info.shape[info.shape.length - 1]!;
}

/**
 * Rewrite a model header for quantization: each tensor's dtype and exact
 * payload size, `metadata.quantization` when the target quantizes at least
 * one tensor (naming the type written when every such tensor fell back to
 * another: its record, or none for F16), and `metadata.total_size`
 * when present.
 *
 * Policy (like aprender): float tensors that are not norms or biases and have
 * at least 1024 elements go to the target (`all: true` takes every float
 * tensor); Q4_K, Q6_K, APR_Q4 and APR_Q8 sources pass through verbatim.
 * Presets (`q4_k_m`, …, and `q6_k` with `ggufTypes`) instead give each
 * tensor llama-quantize's type ({@linkcode presetTensorTypes}), F32 to the
 * float tensors they leave unquantized, and an importance matrix to the
 * weighted encoders. Otherwise, every tensor becomes APR-storable: other ggml types
 * are dequantized to F32, BOOL → U8, I16/U16 → I32, U32/U64 → I64, F8/F6/F4
 * → F16 (F8_E8M0 → BF16), F64 → F32 (unless `keepF64`).
 *
 * @param header The incoming header.
 * @param options Target and policy.
 * @returns The outgoing header (the input is not modified).
 * @throws {TypeError} For an unknown target or a C64 tensor (named).
 *
 * @example Usage
 * ```ts
 * import { planQuantization } from "./plan_quantization.ts";
 * const header = {
 *   format: "safetensors",
 *   metadata: {},
 *   tensors: [
 *     { name: "w", dtype: "F32" as const, shape: [64, 256], byteLength: 65536 },
 *     { name: "norm.weight", dtype: "F32" as const, shape: [256], byteLength: 1024 },
 *   ],
 * };
 * const out = planQuantization(header, { to: "q4_k" });
 * console.assert(out.tensors[0]!.dtype === "Q4_K" && out.tensors[0]!.byteLength === 64 * 144);
 * console.assert(out.tensors[1]!.dtype === "F32");
 * ```
 */
export function planQuantization(header: ModelHeader, options: QuantizeOptions = {}): ModelHeader {
  return planModel(header, options).header;
}

/**
 * Plan every tensor and the outgoing header.
 *
 * @param header The incoming header.
 * @param options Target and policy.
 * @returns The outgoing header and one plan per tensor, in header order.
 */
export function planModel(
  header: ModelHeader,
  options: QuantizeOptions = {},
): { header: ModelHeader; plans: TensorPlan[] } {
  const to = options.to ?? "none";
  if (!QUANTIZE_TARGETS.includes(to)) {
    throw new UsageError(
      `Cannot quantize to "${to}": expected one of ${QUANTIZE_TARGETS.join(", ")}`,
    );
  }
  const ggufTypes = options.ggufTypes === true;
  const preset = ggufTypes ? ggufPresetOf(header, to) : presetOf(to, false);
  // q4_k's llama-quantize file is the --pure one.
  if (preset !== undefined && presetOf(to, ggufTypes) === undefined) {
    options = { ...options, llamaQuantize: { ...options.llamaQuantize, pure: true } };
  }
  let plans: TensorPlan[];
  if (preset === undefined) {
    plans = header.tensors.map((t) => withImportance(planTensor(t, options), options));
  } else {
    const refusal = ggufTypes ? undefined : aprPresetRefusal(to);
    if (refusal !== undefined) throw new UsageError(refusal);
    const types = presetTensorTypes(header.tensors, header.metadata, preset, {
      apr: !ggufTypes,
      imatrix: options.importance !== undefined,
      ...(options.llamaQuantize !== undefined ? { params: options.llamaQuantize } : {}),
      ...(options.everyMatrix === true && ggufTypes ? { everyMatrix: true } : {}),
      ...(options.convertedAnyway !== undefined && ggufTypes
        ? { convertedAnyway: options.convertedAnyway }
        : {}),
      ...(options.llamaQuantize?.allowRequantize === true
        ? {}
        : { keep: (info: TensorInfo) => keptForGguf(info, options) }),
      ...(options.llamaQuantizeQ8_0 === true ? { llamaQuantizeQ8_0: true } : {}),
    });
    checkPresetTypes(header, types, preset, options);
    plans = header.tensors.map((t, i) =>
      forcedPlan(t, options) ?? sourceFloatPlan(t, options) ??
        planPresetTensor(t, types[i], options)
    );
  }
  const metadata: ModelMetadata = { ...header.metadata };
  const record = writtenQuantization(to, plans);
  if (record !== undefined) metadata.quantization = { ...record };
  if (metadata.total_size !== undefined) {
    metadata.total_size = plans.reduce((s, p) => s + p.info.byteLength, 0);
  }
  return { header: { ...header, metadata, tensors: plans.map((p) => p.info) }, plans };
}

/**
 * The llama-quantize file type whose file a target's GGUF is:
 * {@linkcode presetOf}'s, and for the single type `q4_k` of a source already
 * in ggml blocks (a quantized GGUF) Q4_K_M, planned with `--pure`: a block
 * tensor whose type changes is then refused as llama-quantize refuses it
 * ("requantizing from type q8_0 is disabled") unless `allowRequantize`, and
 * is its bytes with it. aprkit's own mix would decode and quantize such
 * tensors again unasked (and keep Q6_K, and small matrices, where
 * llama-quantize makes Q4_K). The MXFP4/NVFP4 blocks kept for GGUF do not
 * count (kept_block_targets.ts says what becomes of them).
 *
 * @param header The incoming header.
 * @param to The target.
 * @returns The preset, or `undefined` for a single type of float tensors.
 */
export function ggufPresetOf(header: ModelHeader, to: QuantizeTarget): LlamaPreset | undefined {
  if (to !== "q4_k") return presetOf(to, true);
  const gguf = { ggufTypes: true };
  return header.tensors.some((t) => isGgmlBlock(t.dtype) && !keptForGguf(t, gguf))
    ? "Q4_K_M"
    : undefined;
}

/** `ggml_is_quantized`: a ggml block type (not F32/F16/BF16, not APR's own). */
function isGgmlBlock(dtype: DType): boolean {
  const spec = DTYPES[dtype];
  return spec.ggufType !== undefined && spec.blockElements > 1;
}

/**
 * Why APR output refuses a target, if it does: APR holds F32/F16/BF16, Q4_K,
 * Q6_K and its own APR_Q8/APR_Q4, and the llama-quantize mixes other than
 * the Q4_K/Q5_K/Q6_K ones choose types it has no code for; a substitute
 * would not be the file asked for (docs/QUANTIZATION.md).
 *
 * @param to The target.
 * @returns One line naming the target and what to use instead, or `undefined`.
 */
export function aprPresetRefusal(to: QuantizeTarget): string | undefined {
  const preset = presetOf(to, false);
  if (preset === undefined || APR_PRESETS.has(preset)) return undefined;
  const main = presetDefaultType(preset);
  const hint = preset === "Q4_0" || preset === "Q4_1"
    ? 'use "q4" (APR_Q4, its own 4-bit blocks) or '
    : preset === "Q8_0"
    ? 'use "q8" (APR_Q8) or '
    : 'use "q4_k_m", "q4_k_s", "q5_k_m", "q5_k_s" or "q6_k" (mapped to Q4_K/Q6_K) or ';
  return `Cannot quantize to "${to}" for APR: its ${main} tensors have no APR type ` +
    `(APR holds Q4_K, Q6_K, APR_Q8 and APR_Q4); ${hint}write GGUF`;
}

/**
 * Refuse, as llama-quantize does or cannot yet do, before anything is
 * written: first a very-low-bit tensor without importance weights
 * (`tensor_requires_imatrix`: "the result will be garbage"), as
 * llama-quantize checks every tensor before it writes; then a type aprkit has
 * no encoder for (the i-quants until theirs land).
 */
function checkPresetTypes(
  header: ModelHeader,
  types: readonly (DType | undefined)[],
  preset: LlamaPreset,
  options: QuantizeOptions,
): void {
  const chosen = header.tensors.flatMap((info, i) => {
    const type = types[i];
    return type === undefined || !DTYPES[info.dtype].isFloat ? [] : [{ info, type }];
  });
  const family = familyOf(header.metadata.architecture);
  for (const { info, type } of chosen) {
    // The role by the family's names, as the type was chosen; the entry by the
    // name withImportance looks up.
    if (!requiresImatrix(hfToGgufName(info.name, family), type, preset)) continue;
    const name = hfToGgufName(info.name);
    if (options.importance === undefined) {
      throw new UsageError(
        `Cannot quantize to ${preset} without an importance matrix: tensor "${name}" gets ` +
          `${type}, which llama-quantize refuses to make without one (--imatrix FILE)`,
      );
    }
    if (!options.importance.has(name)) {
      throw new UsageError(
        `Cannot quantize to ${preset}: the importance matrix has no entry for tensor "${name}" ` +
          `(${type} needs one; llama-quantize stops here too)`,
      );
    }
  }
  // llama-quantize quantizes a tensor already in a block type again only
  // with --allow-requantize (a tensor whose type stays is copied).
  if (options.ggufTypes === true && options.llamaQuantize?.allowRequantize !== true) {
    // MXFP4/NVFP4 blocks kept for GGUF are copied whatever the type chosen.
    const again = chosen.find(({ info, type }) =>
      !keptForGguf(info, options) && requantized(info.dtype, type)
    );
    if (again !== undefined) {
      const { info, type } = again;
      throw new UsageError(
        `Cannot quantize tensor "${hfToGgufName(info.name)}" from ${info.dtype} to ${type}: ` +
          `requantizing from type ${info.dtype.toLowerCase()} is disabled, as in llama-quantize ` +
          "(allowRequantize: true decodes and quantizes it again)",
      );
    }
  }
  const missing = chosen.find(({ type }) => !isEncodeTarget(type));
  if (missing !== undefined) {
    throw new UsageError(
      `Cannot quantize to ${preset}: tensor "${missing.info.name}" gets ${missing.type}, which ` +
        "aprkit cannot encode yet",
    );
  }
}

/** `ggml_is_quantized(source) && source != target`: a ggml block type quantized again. */
function requantized(source: DType, target: DType): boolean {
  return isGgmlBlock(source) && source !== target;
}

/**
 * The `quantization` record of what is written: the target's, when some
 * tensor has the target's type; when every quantized tensor fell back to
 * another type because of its rows (APR's row fallback), the record of that
 * type (APR_Q8's `q8`; F16 or none claims no quantization), so a reader (or
 * a later export choosing `general.file_type`) is not told of a type the
 * file does not hold.
 */
function writtenQuantization(
  to: QuantizeTarget,
  plans: readonly TensorPlan[],
): NonNullable<ModelMetadata["quantization"]> | undefined {
  const quantized = plans.filter((p) => p.quantized);
  if (quantized.some((p) => p.rowFallbackFrom === undefined)) return quantizationRecord(to);
  if (quantized.some((p) => p.info.dtype === "APR_Q8")) return quantizationRecord("q8");
  return undefined;
}

/**
 * Plan one tensor under a preset: the type the preset chose, or F32 for a
 * float tensor it leaves unquantized (norms, biases: what llama.cpp's
 * converter writes for them). Integer tensors follow {@linkcode planTensor}.
 */
function planPresetTensor(
  info: TensorInfo,
  chosen: DType | undefined,
  options: QuantizeOptions,
): TensorPlan {
  // Kept blocks are quantized again only as llama-quantize --allow-requantize does.
  const again = chosen !== undefined && options.llamaQuantize?.allowRequantize === true;
  if (!DTYPES[info.dtype].isFloat || (keptForGguf(info, options) && !again)) {
    return planTensor(info, { ...options, to: "none" });
  }
  const to = chosen === undefined
    ? "F32"
    : options.ggufTypes === true
    ? chosen
    : aprRowType(chosen, lastDim(info), options.rowFallback);
  const fellBack = chosen !== undefined && to !== chosen ? { rowFallbackFrom: chosen } : {};
  if (to === info.dtype) {
    return { source: info, info, action: "copy", quantized: false, ...fellBack };
  }
  const plan: TensorPlan = {
    source: info,
    info: { ...info, dtype: to, byteLength: tensorByteLength(to, info.shape) },
    action: "float",
    quantized: chosen !== undefined,
    ...fellBack,
  };
  return withImportance(plan, options);
}

/**
 * Attach the tensor's importance-matrix entry, checked as llama-quantize
 * checks it: one value per column of each matrix (`ne[0] * ne[2]`), except
 * token_embd's, which is ignored when its size is wrong.
 */
function withImportance(plan: TensorPlan, options: QuantizeOptions): TensorPlan {
  const matrix = options.importance;
  if (matrix === undefined || plan.action !== "float" || !usesImportance(plan.info.dtype)) {
    return plan;
  }
  const name = hfToGgufName(plan.info.name);
  const weights = matrix.get(name);
  if (weights === undefined) return plan;
  const shape = plan.info.shape;
  const cols = shape.length === 0 ? 1 : shape[shape.length - 1]!;
  const experts = shape.length >= 3 ? shape[shape.length - 3]! : 1;
  if (weights.length !== cols * experts) {
    if (name === "token_embd.weight") return plan;
    throw new ImportanceSizeError(name, weights.length, cols * experts);
  }
  return { ...plan, importance: weights };
}

/** An importance matrix entry whose size does not match its tensor (llama-quantize stops too). */
export class ImportanceSizeError extends RangeError {
  /** The tensor's GGUF name. */
  readonly tensor: string;

  /**
   * Describe the mismatch.
   *
   * @param tensor The tensor's GGUF name.
   * @param size The entry's values.
   * @param expected Columns times matrices of the tensor.
   */
  constructor(tensor: string, size: number, expected: number) {
    super(
      `Cannot use the importance matrix: its size ${size} is different from tensor size ` +
        `${expected} for ${tensor}`,
    );
    this.name = "ImportanceSizeError";
    this.tensor = tensor;
  }
}
