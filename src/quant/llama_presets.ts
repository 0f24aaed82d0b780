// This module is browser compatible.

/**
 * llama-quantize's file types (`Q4_K_M`, `IQ2_XXS`, `MXFP4_MOE`, …): which
 * ggml type each tensor of a model gets, exactly as llama.cpp's
 * `llama_tensor_get_type` and the tensor filter of `llama_model_quantize_impl`
 * choose it (src/llama-quant.cpp of the judge's llama.cpp, de3ff81, which
 * node-llama-cpp 3.22.1 bundles; the K-quant presets' rules are also those of
 * c392e50, which made the older fixtures; the rules change across versions).
 * Decisions read tensor names in their GGUF spelling (`blk.3.attn_v.weight`);
 * Hugging Face names of llama-like models are mapped first, as the GGUF
 * writer maps them.
 *
 * For APR output ({@linkcode PresetTypesOptions.apr}; the
 * {@linkcode APR_PRESETS} only) the same choice is made and then mapped to
 * what APR readers decode (docs/QUANTIZATION.md): Q5_K and Q8_0 become Q6_K;
 * rows that are not whole 256-value super-blocks get APR's row fallback
 * instead of llama.cpp's Q5_0/Q5_1/Q8_0/F16 (planQuantization,
 * `apr_row_fallback.ts`).
 *
 * @module
 */

import { type DType, DTYPES } from "../dtype.ts";
import type { ModelMetadata, TensorInfo } from "../tensor.ts";
import { hfToGgufName } from "../arch/names.ts";
import { familyOf } from "../arch/registry.ts";
import { blockCountOf } from "../arch/nextn.ts";

/** llama-quantize's file types (its `QUANT_OPTIONS` that quantize), in llama.cpp's spelling. */
export type LlamaPreset =
  | "Q8_0"
  | "Q6_K"
  | "Q5_K_M"
  | "Q5_K_S"
  | "Q4_K_M"
  | "Q4_K_S"
  | "Q1_0"
  | "Q2_0"
  | "Q4_0"
  | "Q4_1"
  | "MXFP4_MOE"
  | "Q5_0"
  | "Q5_1"
  | "IQ2_XXS"
  | "IQ2_XS"
  | "IQ2_S"
  | "IQ2_M"
  | "IQ1_S"
  | "IQ1_M"
  | "TQ1_0"
  | "TQ2_0"
  | "Q2_K"
  | "Q2_K_S"
  | "IQ3_XXS"
  | "IQ3_S"
  | "IQ3_M"
  | "IQ3_XS"
  | "Q3_K_S"
  | "Q3_K_M"
  | "Q3_K_L"
  | "IQ4_NL"
  | "IQ4_XS";

/** llama.cpp's `llama_ftype` of each preset: GGUF's `general.file_type`. */
export const LLAMA_FTYPES: Readonly<Record<LlamaPreset, number>> = {
  Q4_0: 2,
  Q4_1: 3,
  Q8_0: 7,
  Q5_0: 8,
  Q5_1: 9,
  Q2_K: 10,
  Q3_K_S: 11,
  Q3_K_M: 12,
  Q3_K_L: 13,
  Q4_K_S: 14,
  Q4_K_M: 15,
  Q5_K_S: 16,
  Q5_K_M: 17,
  Q6_K: 18,
  IQ2_XXS: 19,
  IQ2_XS: 20,
  Q2_K_S: 21,
  IQ3_XS: 22,
  IQ3_XXS: 23,
  IQ1_S: 24,
  IQ4_NL: 25,
  IQ3_S: 26,
  IQ3_M: 27,
  IQ2_S: 28,
  IQ2_M: 29,
  IQ4_XS: 30,
  IQ1_M: 31,
  TQ1_0: 36,
  TQ2_0: 37,
  MXFP4_MOE: 38,
  Q1_0: 40,
  Q2_0: 41,
};

/** Every preset, for argument parsing and help (llama-quantize's order of `QUANT_OPTIONS`). */
export const LLAMA_PRESETS: readonly LlamaPreset[] = [
  "Q1_0",
  "Q2_0",
  "Q4_0",
  "Q4_1",
  "MXFP4_MOE",
  "Q5_0",
  "Q5_1",
  "IQ2_XXS",
  "IQ2_XS",
  "IQ2_S",
  "IQ2_M",
  "IQ1_S",
  "IQ1_M",
  "TQ1_0",
  "TQ2_0",
  "Q2_K",
  "Q2_K_S",
  "IQ3_XXS",
  "IQ3_S",
  "IQ3_M",
  "IQ3_XS",
  "Q3_K_S",
  "Q3_K_M",
  "Q3_K_L",
  "IQ4_NL",
  "IQ4_XS",
  "Q4_K_S",
  "Q4_K_M",
  "Q5_K_S",
  "Q5_K_M",
  "Q6_K",
  "Q8_0",
];

/**
 * The presets APR output takes: their K-quant mixes map onto the types APR
 * readers decode (APR_TYPE). The others choose Q2_K, Q3_K, Q4_0, i-quants…,
 * which APR has no code for.
 */
export const APR_PRESETS: ReadonlySet<LlamaPreset> = new Set([
  "Q6_K",
  "Q5_K_M",
  "Q5_K_S",
  "Q4_K_M",
  "Q4_K_S",
]);

/** `llama_ftype_get_default_type`: each tensor's type before the per-tensor rules. */
const DEFAULT_TYPE: Readonly<Record<LlamaPreset, DType>> = {
  Q4_0: "Q4_0",
  Q4_1: "Q4_1",
  Q5_0: "Q5_0",
  Q5_1: "Q5_1",
  Q8_0: "Q8_0",
  Q1_0: "Q1_0",
  Q2_0: "Q2_0",
  MXFP4_MOE: "MXFP4",
  Q2_K_S: "Q2_K",
  Q2_K: "Q2_K",
  IQ3_XS: "IQ3_S",
  Q3_K_S: "Q3_K",
  Q3_K_M: "Q3_K",
  Q3_K_L: "Q3_K",
  Q4_K_S: "Q4_K",
  Q4_K_M: "Q4_K",
  Q5_K_S: "Q5_K",
  Q5_K_M: "Q5_K",
  Q6_K: "Q6_K",
  TQ1_0: "TQ1_0",
  TQ2_0: "TQ2_0",
  IQ2_XXS: "IQ2_XXS",
  IQ2_XS: "IQ2_XS",
  IQ2_S: "IQ2_XS",
  IQ2_M: "IQ2_S",
  IQ3_XXS: "IQ3_XXS",
  IQ1_S: "IQ1_S",
  IQ1_M: "IQ1_M",
  IQ4_NL: "IQ4_NL",
  IQ4_XS: "IQ4_XS",
  IQ3_S: "IQ3_S",
  IQ3_M: "IQ3_S",
};

/** `tensor_type_fallback`: the type for rows that are not whole blocks of the chosen one. */
const FALLBACK: Readonly<Partial<Record<DType, DType>>> = {
  IQ1_S: "IQ4_NL",
  IQ1_M: "IQ4_NL",
  IQ2_XXS: "IQ4_NL",
  IQ2_XS: "IQ4_NL",
  IQ2_S: "IQ4_NL",
  IQ3_XXS: "IQ4_NL",
  IQ3_S: "IQ4_NL",
  IQ4_XS: "IQ4_NL",
  Q2_0: "Q4_0",
  Q2_K: "Q4_0",
  Q3_K: "Q4_0",
  TQ1_0: "Q4_0",
  TQ2_0: "Q4_0",
  Q4_K: "Q5_0",
  Q5_K: "Q5_1",
  Q6_K: "Q8_0",
};

/** What APR readers decode in place of each type the APR presets choose (before the fallback). */
const APR_TYPE: Readonly<Partial<Record<DType, DType>>> = {
  Q4_K: "Q4_K",
  Q5_K: "Q6_K",
  Q6_K: "Q6_K",
  Q8_0: "Q6_K",
};

/**
 * The type a preset gives the tensors no rule singles out
 * (`llama_ftype_get_default_type`): Q4_K for Q4_K_M, IQ3_S for IQ3_XS, ….
 *
 * @param preset The preset.
 * @returns Its main ggml type.
 */
export function presetDefaultType(preset: LlamaPreset): DType {
  return DEFAULT_TYPE[preset];
}

/** Elements per block of a type the rules can pick. */
function block(type: DType): number {
  return DTYPES[type].blockElements;
}

/**
 * Names (GGUF spelling, substrings) llama-quantize never quantizes, besides
 * norms: MoE gates, Mamba's conv, RWKV's time-mix tensors, T5's relative bias.
 */
const NEVER_QUANTIZED = [
  "_norm.weight",
  "ffn_gate_inp.weight",
  // Qwen2-MoE's shared-expert gate: [1, hidden], 1-D to llama-quantize (ggml_n_dims)
  // but 2-D to the converter, whose list keeps it F32 too.
  "ffn_gate_inp_shexp.weight",
  // llama-quantize's substring: Mamba's ssm_conv1d and Kimi Linear's ssm_conv1d_{q,k,v}
  // (which the converter's list names too).
  "ssm_conv1d",
  // LFM2's short convolution (the converter's SHORTCONV_CONV; llama-quantize's list too).
  "shortconv.conv.weight",
  "time_mix_first.weight",
  "time_mix_w1.weight",
  "time_mix_w2.weight",
  "time_mix_decay_w1.weight",
  "time_mix_decay_w2.weight",
  "time_mix_lerp_fused.weight",
  "attn_rel_b.weight",
  // Gemma 3n's AltUp coefficients ([4, 4], [16, 4]): the converter's list keeps them F32.
  "altup_correct_coef.weight",
  "altup_predict_coef.weight",
];

/**
 * Names (GGUF spelling, substrings) llama-quantize leaves in their source
 * type though the converter's `--outtype` converts them: Gemma 3n's small
 * AltUp and Laurel tensors and its per-layer projection. The K-quant presets
 * follow llama-quantize; Q8_0, whose GGUF is the converter's `--outtype
 * q8_0` file, the converter.
 */
const NOT_QUANTIZED_BY_LLAMA_QUANTIZE = ["altup", "laurel", "per_layer_model_proj"];

/** Whole names (GGUF spelling) llama-quantize never quantizes (BERT's positions and token types). */
const NEVER_QUANTIZED_NAMES = new Set(["position_embd.weight", "token_types.weight"]);

/**
 * Whether llama.cpp keeps a tensor (GGUF name) in F32 whatever the type
 * asked for: llama-quantize's never-quantized list, which the converter's
 * `--outtype f16/bf16/q8_0` follows too (MoE routers, positions, …).
 *
 * @param name A GGUF tensor name.
 * @returns True when llama.cpp writes it as F32.
 */
export function keptInFloat32(name: string): boolean {
  return NEVER_QUANTIZED_NAMES.has(name) || NEVER_QUANTIZED.some((part) => name.includes(part));
}

/**
 * Names (GGUF spelling, substrings) the converter's `--outtype f16/bf16/q8_0`
 * keeps in F32 and llama-quantize quantizes as any matrix: the DSA
 * indexer's head weights (DeepSeek-V3.2, GLM-5), Hy4's hyper-connection
 * mixes (`HYV4Model.tensor_force_quant`).
 */
const KEPT_IN_FLOAT32_BY_CONVERTER = [
  "indexer.proj.weight",
  "hc_attn_fn.weight",
  "hc_ffn_fn.weight",
  "output_hc_fn.weight",
];

/**
 * Whether llama.cpp's converter keeps a tensor (GGUF name) in F32 whatever
 * its `--outtype`: {@linkcode keptInFloat32}'s, and its own additions.
 *
 * @param name A GGUF tensor name.
 * @returns True when the converter writes it as F32.
 */
export function keptInFloat32ByConverter(name: string): boolean {
  return keptInFloat32(name) || KEPT_IN_FLOAT32_BY_CONVERTER.some((part) => name.includes(part));
}

/**
 * Names (GGUF spelling, substrings) llama-quantize also leaves unquantized
 * though the converter's `--outtype` converts them (tensor_allows_quantization
 * of llama.cpp de3ff81): DeepSeek-V4's routing table, MiniMax's indexer, RWKV-7's small mixes, multimodal
 * positions and patch embeddings, audio codebooks.
 */
const ALSO_NOT_QUANTIZED_BY_LLAMA_QUANTIZE = [
  "ffn_gate_tid2eid.weight",
  "indexer.k_proj.weight",
  "indexer.q_proj.weight",
  "time_mix_w0.weight",
  "time_mix_v0.weight",
  "time_mix_v1.weight",
  "time_mix_v2.weight",
  "time_mix_a0.weight",
  "time_mix_a1.weight",
  "time_mix_a2.weight",
  "time_mix_g1.weight",
  "time_mix_g2.weight",
  ".position_embd",
  "sam.pos_embd",
  "sam.neck.",
  "sam.net_",
  ".rel_pos",
  ".patch_embd",
  ".patch_merger",
  "a.rvq.codebook",
  "mm.a.code_embd",
];

/**
 * Of {@linkcode ALSO_NOT_QUANTIZED_BY_LLAMA_QUANTIZE}, the names the
 * converter's `--outtype q8_0` quantizes as any matrix (Qwen4-Exp's QSA
 * indexer projections; its F32 list does not name them).
 */
const QUANTIZED_BY_CONVERTER = ["indexer.k_proj.weight", "indexer.q_proj.weight"];

/** One `--tensor-type PATTERN=TYPE` of llama-quantize. */
export interface TensorTypeOverride {
  /** Searched anywhere in the GGUF name (`std::regex_search`). */
  pattern: RegExp;
  /** The type a matching tensor gets (rows that are not whole blocks still fall back). */
  type: DType;
}

/**
 * llama-quantize's per-tensor options (fields of its
 * `llama_model_quantize_params`), for GGUF output.
 */
export interface LlamaQuantizeParams {
  /**
   * `--output-tensor-type`: output.weight's type, as is (no fallback); a
   * tied model's token_embd, which stands for the output, gets it through the
   * mix's rules, so it still falls back.
   */
  outputTensorType?: DType;
  /** `--token-embedding-type`: token_embd's type, as is (no fallback). */
  tokenEmbeddingType?: DType;
  /**
   * `--tensor-type`, in order: the first pattern found in a name gives the
   * tensor its type instead of the mix's rules (which then do not count it).
   */
  tensorTypes?: readonly TensorTypeOverride[];
  /** `--pure`: every quantized tensor the preset's main type (fallbacks still apply). */
  pure?: boolean;
  /** `--leave-output-tensor`: output.weight keeps its source type. */
  leaveOutputTensor?: boolean;
  /**
   * `--allow-requantize`: a tensor already in a ggml block type is decoded
   * and quantized to its new type; without it, that is refused.
   */
  allowRequantize?: boolean;
  /**
   * `--keep-split`: tensors are visited in the source's file order, shard
   * after shard, instead of by layer and name (the per-layer counters count
   * in that order).
   */
  fileOrder?: boolean;
}

/** Options of {@linkcode presetTensorTypes}. */
export interface PresetTypesOptions {
  /**
   * Map the choice to APR's types (F32, Q4_K, Q6_K) instead of returning
   * llama.cpp's (only the {@linkcode APR_PRESETS}).
   *
   * @default {false}
   */
  apr?: boolean;
  /**
   * An importance matrix is given (llama-quantize's `--imatrix`): some
   * presets choose differently with one (IQ3_XXS, IQ4_NL/IQ4_XS, Q4_0/Q5_0's
   * first ffn_down layers).
   *
   * @default {false}
   */
  imatrix?: boolean;
  /** llama-quantize's per-tensor options (GGUF types only, not with `apr`). */
  params?: LlamaQuantizeParams;
  /**
   * The model's converter converts every matrix to its `--outtype`, MoE
   * routers too (DBRX): Q8_0, the converter's `--outtype q8_0`, takes them.
   *
   * @default {false}
   */
  everyMatrix?: boolean;
  /**
   * Matrices (GGUF names) the converter converts though its F32 list names
   * their kind (Nemotron-H's multi-token-prediction router): Q8_0, the
   * converter's `--outtype q8_0`, takes them.
   */
  convertedAnyway?: ReadonlySet<string>;
  /**
   * Tensors whose blocks stay as they are (GGUF's kept MXFP4 and NVFP4
   * without `--allow-requantize`): where the mix would choose another type,
   * they are left out (`undefined`) as a `--tensor-type` naming them with
   * their own type would leave them, and the per-layer counters skip them.
   */
  keep?: (info: TensorInfo) => boolean;
  /**
   * Q8_0 is llama-quantize's file type (its `ggml_n_dims` and never-quantized
   * list) rather than the converter's `--outtype q8_0`: kept blocks
   * quantized again with `--allow-requantize`.
   *
   * @default {false}
   */
  llamaQuantizeQ8_0?: boolean;
}

/**
 * The type each tensor gets under a preset, in header order: a ggml type for
 * the tensors llama-quantize quantizes, `undefined` for the others (1-D
 * tensors, norms, …, and `keep`'s), which stay as they are or unquantized.
 *
 * @example Usage
 * ```ts
 * import { presetTensorTypes } from "./llama_presets.ts";
 * const t = (name: string, shape: number[]) => ({ name, dtype: "F32" as const, shape, byteLength: 0 });
 * const types = presetTensorTypes([
 *   t("token_embd.weight", [512, 256]),
 *   t("blk.0.attn_v.weight", [128, 256]),
 *   t("blk.0.attn_norm.weight", [256]),
 * ], { architecture: "llama", num_layers: 1 }, "Q4_K_M");
 * console.assert(types[0] === "Q6_K"); // tied embeddings are the output
 * console.assert(types[1] === "Q6_K"); // attn_v of a layer that uses more bits
 * console.assert(types[2] === undefined);
 * ```
 *
 * @param tensors The model's tensors, in any order.
 * @param metadata The model's metadata (architecture, layers, heads, experts).
 * @param preset The preset.
 * @param options APR mapping, importance matrix, flags, kept tensors.
 * @returns One entry per tensor, in the order given.
 * @throws {RangeError} When a tensor's rows fit no type llama-quantize could
 * fall back to, or an MoE tensor's layer is out of range (as llama-quantize,
 * which stops there too).
 */
export function presetTensorTypes(
  tensors: readonly TensorInfo[],
  metadata: ModelMetadata,
  preset: LlamaPreset,
  options: PresetTypesOptions = {},
): (DType | undefined)[] {
  const names = tensors.map((t) => hfToGgufName(t.name, familyOf(metadata.architecture)));
  const state = modelState(names, metadata, options.imatrix === true);
  const params = options.params ?? {};
  state.outputTensorType = params.outputTensorType;
  // llama.cpp visits tensors by layer, then name: its per-layer counters
  // (i_attention_wv, i_ffn_down, …) count in that order.
  const order = names.map((_, i) => i);
  if (params.fileOrder !== true) order.sort((a, b) => compareWeights(names[a]!, names[b]!));
  const result: (DType | undefined)[] = new Array(tensors.length).fill(undefined);
  for (const i of order) {
    const info = tensors[i]!;
    const name = names[i]!;
    // Q8_0 is the converter's --outtype q8_0 unless it is llama-quantize's file type here.
    const converterQ8_0 = preset === "Q8_0" && options.llamaQuantizeQ8_0 !== true;
    const every = options.everyMatrix === true || options.convertedAnyway?.has(name) === true;
    if (!quantized(name, info.shape, every, converterQ8_0)) continue;
    // tensor_allows_quantization: the output left as it is (--leave-output-tensor).
    if (params.leaveOutputTensor === true && name === "output.weight") {
      result[i] = info.dtype;
      continue;
    }
    const shape = info.shape;
    const cols = shape.length === 0 ? 1 : shape[shape.length - 1]!;
    const experts = shape.length >= 3 ? shape[shape.length - 3]! : 1;
    const cat = category(name);
    const given = cat === "token_embd" &&
        !(name === "per_layer_token_embd.weight" && overrideOf(params, name) !== undefined)
      ? params.tokenEmbeddingType
      : cat === "output"
      ? params.outputTensorType
      : undefined;
    if (given !== undefined) {
      result[i] = asGiven(name, cols, given);
      continue;
    }
    const manual = overrideOf(params, name);
    // A kept tensor the mix would give another type stays as llama-quantize's
    // `--tensor-type NAME=ITS_TYPE` keeps it: chosen and counted by no rule.
    if (
      manual === undefined && params.pure !== true && options.keep?.(info) === true &&
      fallback(name, cols, tensorType({ ...state }, name, cols, experts, preset)) !== info.dtype
    ) {
      continue;
    }
    const chosen = manual ??
      (params.pure === true
        ? DEFAULT_TYPE[preset]
        : tensorType(state, name, cols, experts, preset));
    result[i] = options.apr === true ? APR_TYPE[chosen] ?? chosen : fallback(name, cols, chosen);
  }
  return result;
}

/** `--tensor-type`: the first pattern found in the name (llama-quantize's order), if any. */
function overrideOf(params: LlamaQuantizeParams, name: string): DType | undefined {
  return params.tensorTypes?.find((o) => o.pattern.test(name))?.type;
}

/**
 * `--output-tensor-type`/`--token-embedding-type`: llama-quantize takes the
 * type as is, without a fallback, so rows that are not whole blocks of it
 * would stop it mid-file: refused before anything is written.
 */
function asGiven(name: string, cols: number, type: DType): DType {
  if (cols % block(type) === 0) return type;
  throw new RangeError(
    `Cannot quantize tensor "${name}" to ${type}: its rows of ${cols} values are not whole ` +
      `${block(type)}-value blocks, and llama-quantize has no fallback for a type given by flag`,
  );
}

/**
 * llama-quantize's `tensor_requires_imatrix`: the tensors it refuses to
 * quantize without an importance matrix ("the result will be garbage") —
 * every IQ1/IQ2/IQ3_XXS tensor but the embeddings and output, and Q2_K_S's
 * Q2_K tensors.
 *
 * @param name The tensor's GGUF name.
 * @param type The type chosen for it (after the fallback).
 * @param preset The preset.
 * @returns True when quantizing it needs importance weights.
 */
export function requiresImatrix(name: string, type: DType, preset: LlamaPreset): boolean {
  if (name === "output.weight" || tokenEmbedding(name)) return false;
  switch (type) {
    case "IQ3_XXS":
    case "IQ2_XXS":
    case "IQ2_XS":
    case "IQ2_S":
    case "IQ1_M":
    case "IQ1_S":
      return true;
    case "Q2_K":
      return preset === "Q2_K_S";
    default:
      return false;
  }
}

/** What `llama_tensor_get_type` knows about the model, and its running counters. */
interface ModelState {
  arch: string;
  nLayer: number;
  /** hparams.n_expert as read (0 for dense models). */
  nExpert: number;
  /** hparams.n_gqa(): heads per KV head (integer division), 0 when unknown. */
  nGqa: number;
  is70B: boolean;
  hasOutput: boolean;
  hasImatrix: boolean;
  /** `--output-tensor-type`, which a tied token_embd takes as the output. */
  outputTensorType?: DType | undefined;
  nAttentionWv: number;
  iAttentionWv: number;
  iFfnDown: number;
  iFfnGate: number;
  iFfnUp: number;
}

function modelState(
  names: readonly string[],
  metadata: ModelMetadata,
  imatrix: boolean,
): ModelState {
  const arch = typeof metadata.architecture === "string" ? metadata.architecture : "";
  let maxLayer = -1;
  for (const name of names) maxLayer = Math.max(maxLayer, layerOf(name));
  // llama-quantize counts every block of the GGUF (n_layer_all): with the
  // layers the converter appends past num_hidden_layers (GLM-4.5's MTP).
  const config = metadata.hf_config;
  const hasConfig = config !== null && typeof config === "object" && !Array.isArray(config);
  const extra = hasConfig
    ? familyOf(arch)?.gguf?.extraBlocks?.(config as Record<string, unknown>) ?? 0
    : 0;
  // A model read back from GGUF has no config: its MTP blocks are the GGUF's.
  const layers = positive(hasConfig ? metadata.num_layers : blockCountOf(metadata));
  const nLayer = layers !== undefined ? layers + extra : maxLayer + 1;
  const nExpert = positive(metadata.num_experts) ?? 0;
  const heads = positive(metadata.num_heads);
  const kvHeads = positive(metadata.num_kv_heads) ?? heads;
  // llama.cpp's LLM_TYPE_70B (llama-model.cpp): 80 layers of llama with
  // grouped KV heads (equal counts are LLaMA-1 65B), of qwen2, or of deci.
  // llama.cpp's own names: the GGUF architecture (Mistral's is llama).
  const ggufArch = familyOf(arch)?.ggufArchitecture ?? arch;
  const is70B = nLayer === 80 && nExpert !== 8 &&
    ((ggufArch === "llama" && heads !== undefined && heads !== kvHeads) ||
      ggufArch === "qwen2" || ggufArch === "deci");
  return {
    arch: ggufArch,
    nLayer,
    nExpert,
    nGqa: heads !== undefined && kvHeads !== undefined ? Math.floor(heads / kvHeads) : 0,
    is70B,
    // A tied model's output layer is its embedding: an APR file's lm_head is
    // only a copy of it (tied_embeddings, dropped again on export), so
    // token_embd gets the output's type as in llama-quantize's tied GGUF.
    hasOutput: names.includes("output.weight") && metadata.tied_embeddings !== true,
    hasImatrix: imatrix,
    nAttentionWv: names.filter((n) => isAttnV(category(n))).length,
    iAttentionWv: 0,
    iFfnDown: 0,
    iFfnGate: 0,
    iFfnUp: 0,
  };
}

function positive(v: unknown): number | undefined {
  return typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v : undefined;
}

/** `sscanf(name, "blk.%d.", &layer)`, or -1. */
function layerOf(name: string): number {
  const m = /^blk\.([+-]?\d+)/.exec(name);
  return m === null ? -1 : Number(m[1]);
}

/**
 * llama-model-loader's `weight_name_comparer`: by layer (`blk.N.`; whole-model
 * tensors first), then by name. The order llama-quantize visits and writes
 * tensors in.
 *
 * @example Usage
 * ```ts
 * import { compareWeights } from "./llama_presets.ts";
 * const names = ["blk.1.attn_q.weight", "token_embd.weight", "blk.0.ffn_up.weight", "output_norm.weight"];
 * console.assert(names.sort(compareWeights).join() ===
 *   "output_norm.weight,token_embd.weight,blk.0.ffn_up.weight,blk.1.attn_q.weight");
 * ```
 *
 * @param a A GGUF tensor name.
 * @param b Another.
 * @returns Negative, zero or positive, as for `Array.prototype.sort`.
 */
export function compareWeights(a: string, b: string): number {
  const la = layerOf(a);
  const lb = layerOf(b);
  if (la !== lb) return la - lb;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * llama-quantize's filter: weights of 2 or more dimensions that are not
 * norms, gates, …; for Q8_0 of a converter that converts every matrix
 * (`everyMatrix`), every weight of 2 or more dimensions but norms.
 */
function quantized(
  name: string,
  shape: readonly number[],
  everyMatrix: boolean,
  converterQ8_0: boolean,
): boolean {
  if (!name.endsWith("weight")) return false;
  // ggml_n_dims: trailing dimensions of size 1 do not count (ne runs innermost first).
  // Q8_0 as the converter's --outtype q8_0 counts numpy's dimensions:
  // a one-row matrix (a reranker's `cls.output`) is quantized there.
  let dims = converterQ8_0 ? shape.length : 0;
  for (let i = 0; i < shape.length && !converterQ8_0; i++) {
    if (shape[i]! > 1) {
      dims = shape.length - i;
      break;
    }
  }
  if (dims < 2) return false;
  if (converterQ8_0 && everyMatrix) return !name.endsWith("_norm.weight");
  if (converterQ8_0 ? keptInFloat32ByConverter(name) : keptInFloat32(name)) return false;
  if (
    ALSO_NOT_QUANTIZED_BY_LLAMA_QUANTIZE.some((p) => name.includes(p)) &&
    !(converterQ8_0 && QUANTIZED_BY_CONVERTER.some((p) => name.includes(p)))
  ) return false;
  return converterQ8_0 || !NOT_QUANTIZED_BY_LLAMA_QUANTIZE.some((p) => name.includes(p));
}

/** llama-quant.cpp's `tensor_category`: broad roles, by name. */
type Category =
  | "output"
  | "token_embd"
  | "attn_qkv"
  | "attn_kv_b"
  | "attn_v"
  | "attn_k"
  | "attn_q"
  | "attn_output"
  | "ffn_up"
  | "ffn_gate"
  | "ffn_down"
  | "other";

/** llama.cpp's token embedding category: Gemma 3n's per-layer embedding too. */
function tokenEmbedding(name: string): boolean {
  return name === "token_embd.weight" || name === "per_layer_token_embd.weight";
}

/** `tensor_get_category`, in its order of tests. */
function category(name: string): Category {
  if (name === "output.weight") return "output";
  if (tokenEmbedding(name)) return "token_embd";
  if (name.includes("attn_qkv.weight")) return "attn_qkv";
  if (name.includes("attn_kv_b.weight")) return "attn_kv_b";
  if (name.includes("attn_v.weight")) return "attn_v";
  if (name.includes("attn_k.weight")) return "attn_k";
  if (name.includes("attn_q.weight")) return "attn_q";
  if (name.includes("attn_output.weight")) return "attn_output";
  if (name.includes("ffn_up")) return "ffn_up";
  if (name.includes("ffn_gate")) return "ffn_gate";
  if (name.includes("ffn_down")) return "ffn_down";
  return "other";
}

/** `category_is_attn_v`: a fused QKV (Phi-3) and DeepSeek's kv_b count as attn_v. */
function isAttnV(c: Category): boolean {
  return c === "attn_v" || c === "attn_qkv" || c === "attn_kv_b";
}

/** `use_more_bits`: the first and last eighth of the layers, and every third in between. */
function useMoreBits(i: number, n: number): boolean {
  const eighth = Math.trunc(n / 8);
  return i < eighth || i >= Math.trunc((7 * n) / 8) || (i - eighth) % 3 === 2;
}

/** `layer_info`: MoE tensors are not consecutive, so their layer comes from the name. */
function layerInfo(state: ModelState, counter: number, name: string): number {
  if (Math.max(1, state.nExpert) <= 1) return counter;
  const layer = layerOf(name);
  if (layer < 0 || layer >= state.nLayer) {
    throw new RangeError(
      `Cannot choose a type for tensor "${name}": its layer is not in [0, ${state.nLayer})`,
    );
  }
  return layer;
}

/** The i-quant mixes whose output is Q5_K and whose low-bit rules are grouped in llama.cpp. */
const IQ2_MIXES = new Set<LlamaPreset>(["IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M"]);

/**
 * `llama_tensor_get_type_impl` of llama.cpp de3ff81 (src/llama-quant.cpp),
 * before the fallback for rows that are not whole blocks: the output and
 * token embedding, MXFP4_MOE's experts, the i-quant mixes' low-bit choices,
 * then the bumps by role (attn_v, attn_k, attn_q, ffn_down, attn_output,
 * ffn_gate, ffn_up) with their per-layer counters.
 */
function tensorType(
  state: ModelState,
  name: string,
  cols: number,
  experts: number,
  preset: LlamaPreset,
): DType {
  let type = DEFAULT_TYPE[preset];
  const falcon = state.arch === "falcon";
  const cat = category(name);
  const gqa = state.nGqa;
  const nExpert = state.nExpert;
  if (cat === "output" || (!state.hasOutput && cat === "token_embd")) {
    if (state.outputTensorType !== undefined) return state.outputTensorType;
    if (preset === "MXFP4_MOE") return "Q8_0";
    if (falcon || cols % block(type) !== 0) return "Q8_0";
    if (
      preset === "IQ2_XXS" || preset === "IQ2_XS" || preset === "IQ3_XXS" || preset === "IQ1_S" ||
      preset === "IQ2_S" || preset === "IQ2_M" || preset === "IQ1_M"
    ) {
      return "Q5_K";
    }
    return type !== "Q8_0" ? "Q6_K" : type;
  }
  if (preset === "MXFP4_MOE") {
    // Experts (3-D) → MXFP4, the rest → Q8_0; Ling's MLA projections are 3-D too.
    const bailing = state.arch === "bailingmoe3";
    const expertRole = cat === "ffn_up" || cat === "ffn_gate" || cat === "ffn_down";
    return experts > 1 && (!bailing || expertRole) ? "MXFP4" : "Q8_0";
  }
  if (cat === "token_embd") {
    if (preset === "IQ2_XXS" || preset === "IQ2_XS" || preset === "IQ1_S" || preset === "IQ1_M") {
      return "Q2_K";
    }
    if (preset === "IQ2_S" || preset === "IQ2_M" || preset === "IQ3_XXS") return "IQ3_S";
    if (preset === "TQ1_0" || preset === "TQ2_0" || preset === "Q2_0") return "Q4_K";
    return type;
  }
  if (IQ2_MIXES.has(preset)) {
    const iq3s = preset === "IQ2_S" || preset === "IQ2_M";
    if (isAttnV(cat)) {
      type = gqa >= 4 || nExpert >= 4 ? "Q4_K" : iq3s ? "IQ3_S" : "Q2_K";
      state.iAttentionWv++;
    } else if (nExpert === 8 && cat === "attn_k") {
      type = "Q4_K";
    } else if (cat === "ffn_down") {
      // The counter itself, not layer_info: an MoE's ffn_down tensors all count.
      if (state.iFfnDown < Math.trunc(state.nLayer / 8)) type = iq3s ? "IQ3_S" : "Q2_K";
      state.iFfnDown++;
    } else if (cat === "attn_output") {
      if (nExpert === 8) type = "Q5_K";
      else if (preset === "IQ1_S" || preset === "IQ1_M") type = "IQ2_XXS";
      else if (iq3s) type = "IQ3_S";
    }
    return type;
  }
  if (isAttnV(cat)) {
    if (preset === "Q2_K") type = gqa >= 4 ? "Q4_K" : "Q3_K";
    else if (preset === "Q2_K_S" && gqa >= 4) type = "Q4_K";
    else if (preset === "IQ3_XXS") {
      type = gqa >= 4 ? "Q4_K" : !state.hasImatrix ? "IQ3_S" : "IQ3_XXS";
    } else if ((preset === "IQ3_XS" || preset === "IQ3_S") && gqa >= 4) type = "Q4_K";
    else if (preset === "IQ3_M") type = "Q4_K";
    else if (preset === "Q3_K_M") type = state.iAttentionWv < 2 ? "Q5_K" : "Q4_K";
    else if (preset === "Q3_K_L") type = "Q5_K";
    else if ((preset === "IQ4_NL" || preset === "IQ4_XS") && gqa >= 4) type = "Q5_K";
    else if (
      (preset === "Q4_K_M" || preset === "Q5_K_M") &&
      useMoreBits(state.iAttentionWv, state.nAttentionWv)
    ) {
      type = "Q6_K";
    } else if (preset === "Q4_K_S" && state.iAttentionWv < 4) type = "Q5_K";
    // 70B: eight heads share attn_v, so more bits cost little.
    if (state.is70B && (type === "Q3_K" || type === "Q4_K")) type = "Q5_K";
    if (nExpert === 8) type = "Q8_0";
    state.iAttentionWv++;
    return type;
  }
  if (cat === "attn_k") {
    if (nExpert === 8) return "Q8_0";
    if (preset === "IQ3_XS") return "IQ3_XXS";
    if (preset === "IQ3_XXS") return "IQ2_S";
    return type;
  }
  if (cat === "attn_q") {
    if (preset === "IQ3_XS") return "IQ3_XXS";
    if (preset === "IQ3_XXS") return "IQ2_S";
    return type;
  }
  if (cat === "ffn_down") {
    const i = layerInfo(state, state.iFfnDown, name);
    const n = state.nLayer;
    if (preset === "Q2_K") type = "Q3_K";
    else if (preset === "Q2_K_S") {
      if (i < Math.trunc(n / 8)) type = "Q4_K";
    } else if (preset === "IQ3_XXS" && !state.hasImatrix) {
      type = i < Math.trunc(n / 8) ? "Q4_K" : "Q3_K";
    } else if (preset === "Q3_K_M") {
      type = i < Math.trunc(n / 16) ? "Q5_K" : !falcon || useMoreBits(i, n) ? "Q4_K" : "Q3_K";
    } else if (
      preset === "IQ3_M" && (i < Math.trunc(n / 8) || (nExpert === 8 && useMoreBits(i, n)))
    ) {
      type = "Q4_K";
    } else if (preset === "Q3_K_L") {
      type = falcon ? "Q4_K" : "Q5_K";
    } else if (preset === "Q4_K_M") {
      if (falcon) type = i < Math.trunc(n / 16) ? "Q6_K" : useMoreBits(i, n) ? "Q5_K" : "Q4_K";
      else if (useMoreBits(i, n)) type = "Q6_K";
    } else if (
      i < Math.trunc(n / 8) && (preset === "IQ4_NL" || preset === "IQ4_XS") && !state.hasImatrix
    ) {
      type = "Q5_K";
    } else if (preset === "Q5_K_M" && useMoreBits(i, n)) {
      type = "Q6_K";
    } else if (preset === "Q4_K_S" && !falcon && i < Math.trunc(n / 8)) {
      type = "Q5_K";
    } else if (
      (preset === "Q4_0" || preset === "Q5_0") && state.hasImatrix && i < Math.trunc(n / 8)
    ) {
      // llama.cpp's guard against the first ffn_down layers going wrong with an imatrix.
      type = preset === "Q4_0" ? "Q4_1" : "Q5_1";
    }
    state.iFfnDown++;
    return type;
  }
  if (cat === "attn_output") {
    if (falcon) return preset === "Q3_K_L" ? "Q4_K" : type;
    if (nExpert === 8) {
      const bumped: readonly LlamaPreset[] = [
        "Q2_K",
        "IQ3_XS",
        "IQ3_XXS",
        "Q3_K_S",
        "Q3_K_M",
        "IQ4_NL",
        "Q4_K_S",
        "Q4_K_M",
        "IQ3_S",
        "IQ3_M",
        "IQ4_XS",
      ];
      return bumped.includes(preset) ? "Q5_K" : type;
    }
    if (preset === "Q2_K") return "Q3_K";
    if (preset === "IQ3_XXS") return "IQ3_S";
    if (preset === "Q3_K_M" || preset === "IQ3_M") return "Q4_K";
    if (preset === "Q3_K_L") return "Q5_K";
    return type;
  }
  if (cat === "ffn_gate" || cat === "ffn_up") {
    const counter = cat === "ffn_gate" ? state.iFfnGate : state.iFfnUp;
    const i = layerInfo(state, counter, name);
    const n = state.nLayer;
    if (preset === "IQ3_XS" && i >= Math.trunc(n / 8) && i < Math.trunc((7 * n) / 8)) {
      type = "IQ3_XXS";
    }
    if (cat === "ffn_gate") state.iFfnGate++;
    else state.iFfnUp++;
    return type;
  }
  return type;
}

/**
 * llama.cpp's `tensor_type_fallback` for rows that are not whole blocks: the
 * i-quants → IQ4_NL; Q2_K, Q3_K, Q2_0 and the ternary types → Q4_0; Q4_K →
 * Q5_0, Q5_K → Q5_1, Q6_K → Q8_0; a 32-value type (DeepSeek's 16-wide
 * `attn_k_b` rows in Q8_0) as it is; then F16 when the rows are not whole
 * blocks of that either.
 */
function fallback(name: string, cols: number, type: DType): DType {
  if (cols % block(type) === 0) return type;
  const next = FALLBACK[type] ?? (block(type) <= 32 ? type : undefined);
  if (next === undefined) {
    throw new RangeError(
      `Cannot quantize tensor "${name}" to ${type}: its rows of ${cols} values are not whole ` +
        `${block(type)}-value blocks, and llama-quantize has no fallback type for it`,
    );
  }
  return cols % block(next) === 0 ? next : "F16";
}

/**
 * The type llama-quantize gives a tensor of `type` whose rows of `cols`
 * values are not whole blocks: Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0 when
 * the rows are whole 32-value blocks, else F16 (also used by GGUF export for
 * APR's row-padded K-quants, which GGUF cannot hold).
 *
 * @param type The block type the tensor has or would get.
 * @param cols Values per row.
 * @returns `type` itself when the rows are whole blocks, else the fallback.
 */
export function rowFallbackType(type: DType, cols: number): DType {
  if (cols % block(type) === 0) return type;
  const next = FALLBACK[type];
  return next !== undefined && cols % block(next) === 0 ? next : "F16";
}
