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

/** What {@linkcode planQuantization} may convert float weights to. */
export type QuantizeTarget = "none" | "f16" | "bf16" | "q8" | "q4" | "q4_k" | "q6_k";

/** Every {@linkcode QuantizeTarget}, for argument parsing. */
export const QUANTIZE_TARGETS: readonly QuantizeTarget[] = [
  "none",
  "f16",
  "bf16",
  "q8",
  "q4",
  "q4_k",
  "q6_k",
];

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
}

/** Tensors smaller than this keep their float type (aprender's rule). */
export const MIN_QUANTIZE_ELEMENTS = 1024;

const TARGET_DTYPE: Record<QuantizeTarget, DType | undefined> = {
  none: undefined,
  f16: "F16",
  bf16: "BF16",
  q8: "APR_Q8",
  q4: "APR_Q4",
  q4_k: "Q4_K",
  q6_k: "Q6_K",
};

const QUANTIZATION_RECORD: Partial<
  Record<QuantizeTarget, NonNullable<ModelMetadata["quantization"]>>
> = {
  q8: { quant_type: "q8", bits: 8, block_size: null, symmetric: true },
  q4: { quant_type: "q4", bits: 4, block_size: 32, symmetric: true },
  q4_k: { quant_type: "q4_k", bits: 4, block_size: 256, symmetric: false },
  q6_k: { quant_type: "q6_k", bits: 6, block_size: 256, symmetric: true },
};

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
  if (KEEP_QUANTIZED.has(dtype)) return plan(dtype, "copy");
  const target = TARGET_DTYPE[options.to ?? "none"];
  const eligible = target !== undefined &&
    (options.all === true ||
      (!isNormOrBias(info.name) && elementCount(info.shape) >= MIN_QUANTIZE_ELEMENTS));
  if (eligible) return plan(target, "float", target !== "F16" && target !== "BF16");
  // What a quantizing import keeps in float (norms, biases, small tensors) is
  // written as F32, which every reader decodes; BF16 (APR dtype 30) is not
  // read by aprender 0.26 or realizar's get_tensor_f32 (docs/INTEROP.md).
  if (target !== undefined && target !== "BF16" && (dtype === "BF16" || dtype === "F16")) {
    return plan("F32", "float");
  }
  if (dtype === "F64" && options.keepF64 !== true) return plan("F32", "float");
  if (isAprStorable(dtype)) return plan(dtype, "copy");
  return plan(LOSSLESS_FLOAT[dtype] ?? "F32", "float");
}

/**
 * Rewrite a model header for quantization: each tensor's dtype and exact
 * payload size, `metadata.quantization` when the target quantizes at least
 * one tensor, and `metadata.total_size` when present.
 *
 * Policy (like aprender): float tensors that are not norms or biases and have
 * at least 1024 elements go to the target (`all: true` takes every float
 * tensor); Q4_K, Q6_K, APR_Q4 and APR_Q8 sources pass through verbatim.
 * Whatever the target, every tensor becomes APR-storable: other ggml types
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
    throw new TypeError(
      `Cannot quantize to "${to}": expected one of ${QUANTIZE_TARGETS.join(", ")}`,
    );
  }
  const plans = header.tensors.map((t) => planTensor(t, options));
  const metadata: ModelMetadata = { ...header.metadata };
  const record = QUANTIZATION_RECORD[to];
  if (record !== undefined && plans.some((p) => p.quantized)) {
    metadata.quantization = { ...record };
  }
  if (metadata.total_size !== undefined) {
    metadata.total_size = plans.reduce((s, p) => s + p.info.byteLength, 0);
  }
  return { header: { ...header, metadata, tensors: plans.map((p) => p.info) }, plans };
}
