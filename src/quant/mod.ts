// This module is browser compatible.

/**
 * Numeric kernels (pure, browser compatible) and the {@linkcode QuantizeStream}
 * stage: f16/bf16 conversions, APR_Q8/APR_Q4, Q4_K/Q6_K encoders ported from
 * llama.cpp's reference quantizers, bit-exact dequantizers for every dtype,
 * and the streaming decoder.
 *
 * @example Usage
 * ```ts
 * import { decodeToFloat32, encodeF16 } from "./mod.ts";
 * const bytes = encodeF16(new Float32Array([1, 0.5]));
 * console.assert(decodeToFloat32("F16", bytes, [2]).join() === "1,0.5");
 * ```
 *
 * @module
 */

export { decodeF16, encodeF16, f16ToF32, f32BitsToF16Bits, f32ToF16 } from "./f16.ts";
export { bf16ToF32, decodeBf16, encodeBf16, f32BitsToBf16Bits, f32ToBf16 } from "./bf16.ts";
export { aprQ8Absmax, aprQ8Scale, decodeAprQ8, encodeAprQ8, encodeAprQ8Tensor } from "./apr_q8.ts";
export { APR_Q4_BLOCK_BYTES, APR_Q4_BLOCK_ELEMENTS, decodeAprQ4, encodeAprQ4 } from "./apr_q4.ts";
export { decodeQ4K, encodeQ4K, Q4_K_BLOCK_BYTES, Q4_K_BLOCK_ELEMENTS } from "./q4_k.ts";
export { decodeQ6K, encodeQ6K, Q6_K_BLOCK_BYTES, Q6_K_BLOCK_ELEMENTS } from "./q6_k.ts";
export { encodeQ5K, Q5_K_BLOCK_BYTES } from "./q5_k.ts";
export { encodeQ8_0, Q8_0_BLOCK_BYTES } from "./q8_0.ts";
export { encodeQ5_0, encodeQ5_1, Q5_0_BLOCK_BYTES, Q5_1_BLOCK_BYTES } from "./q5_0.ts";
export { encodeQ4_0, encodeQ4_1, Q4_0_BLOCK_BYTES, Q4_1_BLOCK_BYTES } from "./q4_0.ts";
export { encodeQ2K, Q2_K_BLOCK_BYTES } from "./q2_k.ts";
export { encodeQ3K, Q3_K_BLOCK_BYTES } from "./q3_k.ts";
export { encodeQ1_0, encodeQ2_0, encodeTq1_0, encodeTq2_0 } from "./ternary_encoders.ts";
export { encodeMxfp4 } from "./mxfp4_encoder.ts";
export {
  LLAMA_FTYPES,
  LLAMA_PRESETS,
  type LlamaPreset,
  type LlamaQuantizeParams,
  presetTensorTypes,
  type PresetTypesOptions,
  type TensorTypeOverride,
} from "./llama_presets.ts";
export {
  hasLlamaQuantizeFlags,
  type LlamaQuantizeFlags,
  llamaQuantizeParams,
} from "./llama_quantize_params.ts";
export {
  decodeQ4_0,
  decodeQ4_1,
  decodeQ5_0,
  decodeQ5_1,
  decodeQ8_0,
  decodeQ8_1,
} from "./ggml_legacy.ts";
export { decodeQ2K, decodeQ3K, decodeQ5K, decodeQ8K } from "./k_quants.ts";
export { decodeF8E4M3, decodeF8E5M2, decodeF8E8M0 } from "./float8.ts";
export { decodeF4, decodeF6E2M3, decodeF6E3M2 } from "./float6_4.ts";
export { decodeStream, type DecodeStreamOptions, decodeToFloat32 } from "./decode.ts";
export { encodeFromFloat32 } from "./encode.ts";
export { type KernelBackend, kernelBackend, setKernelBackend } from "./kernels.ts";
export {
  ImportanceSizeError,
  isNormOrBias,
  MIN_QUANTIZE_ELEMENTS,
  planModel,
  planQuantization,
  planTensor,
  presetOf,
  QUANTIZE_TARGETS,
  type QuantizeOptions,
  type QuantizeTarget,
  type TensorAction,
  type TensorPlan,
} from "./plan_quantization.ts";
export { QuantizeStream, type QuantizeStreamOptions } from "./quantize_stream.ts";
export type { DType } from "../dtype.ts";
export type { ModelChunk, ModelHeader, ModelMetadata, TensorEntry, TensorInfo } from "../tensor.ts";
