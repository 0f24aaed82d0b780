// This module is browser compatible.

/**
 * llama-quantize's presets (`Q4_K_M`, `Q6_K`, …): which ggml type each tensor
 * of a model gets, exactly as llama.cpp's `llama_tensor_get_type` and the
 * tensor filter of `llama_model_quantize_impl` choose it (src/llama-quant.cpp
 * at llama.cpp commit c392e50, the version that made the fixtures, and of the
 * judge's llama.cpp (node-llama-cpp 3.22.1), which counts a fused `attn_qkv`
 * as `attn_v`; the rules change across versions). Decisions read tensor names in their GGUF spelling
 * (`blk.3.attn_v.weight`); Hugging Face names of llama-like models are mapped
 * first, as the GGUF writer maps them.
 *
 * For APR output ({@linkcode PresetTypesOptions.apr}) the same choice is made
 * and then mapped to what APR readers decode (docs/QUANTIZATION.md): Q5_K and
 * Q8_0 become Q6_K; rows that are not whole 256-value super-blocks get APR's
 * row fallback instead of llama.cpp's Q5_0/Q5_1/Q8_0/F16 (planQuantization,
 * `apr_row_fallback.ts`).
 *
 * @module
 */

import type { DType } from "../dtype.ts";
import type { ModelMetadata, TensorInfo } from "../tensor.ts";
import { hfToGgufName } from "../arch/names.ts";
import { familyOf } from "../arch/registry.ts";

/** llama-quantize's preset names aprkit implements, in llama.cpp's spelling. */
export type LlamaPreset = "Q8_0" | "Q6_K" | "Q5_K_M" | "Q5_K_S" | "Q4_K_M" | "Q4_K_S";

/** Every preset, for argument parsing and help. */
export const LLAMA_PRESETS: readonly LlamaPreset[] = [
  "Q8_0",
  "Q6_K",
  "Q5_K_M",
  "Q5_K_S",
  "Q4_K_M",
  "Q4_K_S",
];

/** llama.cpp's `llama_ftype` of each preset: GGUF's `general.file_type`. */
export const LLAMA_FTYPES: Readonly<Record<LlamaPreset, number>> = {
  Q8_0: 7,
  Q4_K_S: 14,
  Q4_K_M: 15,
  Q5_K_S: 16,
  Q5_K_M: 17,
  Q6_K: 18,
};

/** The type a preset gives every tensor it quantizes before the per-tensor rules. */
const DEFAULT_TYPE: Readonly<Record<LlamaPreset, DType>> = {
  Q8_0: "Q8_0",
  Q6_K: "Q6_K",
  Q5_K_M: "Q5_K",
  Q5_K_S: "Q5_K",
  Q4_K_M: "Q4_K",
  Q4_K_S: "Q4_K",
};

/** Elements per block of the types the rules can pick. */
const BLOCK: Readonly<Partial<Record<DType, number>>> = {
  Q4_K: 256,
  Q5_K: 256,
  Q6_K: 256,
  Q8_0: 32,
  Q5_0: 32,
  Q5_1: 32,
  F16: 1,
};

/** llama.cpp's fallback for rows that are not whole blocks of the chosen type. */
const FALLBACK: Readonly<Partial<Record<DType, DType>>> = {
  Q4_K: "Q5_0",
  Q5_K: "Q5_1",
  Q6_K: "Q8_0",
};

/** What APR readers decode in place of each type the presets choose (before the fallback). */
const APR_TYPE: Readonly<Partial<Record<DType, DType>>> = {
  Q4_K: "Q4_K",
  Q5_K: "Q6_K",
  Q6_K: "Q6_K",
  Q8_0: "Q6_K",
};

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
  "ssm_conv1d.weight",
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

/** Options of {@linkcode presetTensorTypes}. */
export interface PresetTypesOptions {
  /**
   * Map the choice to APR's types (F32, Q4_K, Q6_K) instead of returning
   * llama.cpp's.
   *
   * @default {false}
   */
  apr?: boolean;
}

/**
 * The type each tensor gets under a preset, in header order: a ggml type for
 * the tensors llama-quantize quantizes, `undefined` for the others (1-D
 * tensors, norms, …), which stay unquantized.
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
 * @param options APR mapping.
 * @returns One entry per tensor, in the order given.
 * @throws {RangeError} When a tensor's rows fit no type llama-quantize could
 * fall back to (as llama-quantize, which stops there too).
 */
export function presetTensorTypes(
  tensors: readonly TensorInfo[],
  metadata: ModelMetadata,
  preset: LlamaPreset,
  options: PresetTypesOptions = {},
): (DType | undefined)[] {
  const names = tensors.map((t) => hfToGgufName(t.name, familyOf(metadata.architecture)));
  const state = modelState(names, metadata);
  // llama.cpp visits tensors by layer, then name: its per-layer counters
  // (i_attention_wv, i_ffn_down) count in that order.
  const order = names.map((_, i) => i).sort((a, b) => compareWeights(names[a]!, names[b]!));
  const result: (DType | undefined)[] = new Array(tensors.length).fill(undefined);
  for (const i of order) {
    const info = tensors[i]!;
    const name = names[i]!;
    if (!quantized(name, info.shape, preset)) continue;
    const cols = info.shape.length === 0 ? 1 : info.shape[info.shape.length - 1]!;
    const chosen = tensorType(state, name, cols, preset);
    result[i] = options.apr === true ? APR_TYPE[chosen] ?? chosen : fallback(name, cols, chosen);
  }
  return result;
}

/** What `llama_tensor_get_type` knows about the model, and its running counters. */
interface ModelState {
  arch: string;
  nLayer: number;
  nExpert: number;
  is70B: boolean;
  hasOutput: boolean;
  nAttentionWv: number;
  iAttentionWv: number;
  iFfnDown: number;
}

function modelState(names: readonly string[], metadata: ModelMetadata): ModelState {
  const arch = typeof metadata.architecture === "string" ? metadata.architecture : "";
  let maxLayer = -1;
  for (const name of names) maxLayer = Math.max(maxLayer, layerOf(name));
  // llama-quantize counts every block of the GGUF (n_layer_all): with the
  // layers the converter appends past num_hidden_layers (GLM-4.5's MTP).
  const config = metadata.hf_config;
  const extra = config !== null && typeof config === "object" && !Array.isArray(config)
    ? familyOf(arch)?.gguf?.extraBlocks?.(config as Record<string, unknown>) ?? 0
    : 0;
  const layers = positive(metadata.num_layers);
  const nLayer = layers !== undefined ? layers + extra : maxLayer + 1;
  const nExpert = Math.max(1, positive(metadata.num_experts) ?? 1);
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
    is70B,
    // A tied model's output layer is its embedding: an APR file's lm_head is
    // only a copy of it (tied_embeddings, dropped again on export), so
    // token_embd gets the output's type as in llama-quantize's tied GGUF.
    hasOutput: names.includes("output.weight") && metadata.tied_embeddings !== true,
    nAttentionWv:
      names.filter((n) =>
        n.includes("attn_v.weight") || n.includes("attn_qkv.weight") ||
        n.includes("attn_kv_b.weight")
      ).length,
    iAttentionWv: 0,
    iFfnDown: 0,
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

/** llama-quantize's filter: weights of 2 or more dimensions that are not norms, gates, … */
function quantized(name: string, shape: readonly number[], preset: LlamaPreset): boolean {
  if (!name.endsWith("weight")) return false;
  // ggml_n_dims: trailing dimensions of size 1 do not count (ne runs innermost first).
  // Q8_0 is the converter's --outtype q8_0, which counts numpy's dimensions:
  // a one-row matrix (a reranker's `cls.output`) is quantized there.
  let dims = preset === "Q8_0" ? shape.length : 0;
  for (let i = 0; i < shape.length && preset !== "Q8_0"; i++) {
    if (shape[i]! > 1) {
      dims = shape.length - i;
      break;
    }
  }
  if (dims < 2) return false;
  if (keptInFloat32(name)) return false;
  return preset === "Q8_0" || !NOT_QUANTIZED_BY_LLAMA_QUANTIZE.some((p) => name.includes(p));
}

/** `use_more_bits`: the first and last eighth of the layers, and every third in between. */
function useMoreBits(i: number, n: number): boolean {
  const eighth = Math.trunc(n / 8);
  return i < eighth || i >= Math.trunc((7 * n) / 8) || (i - eighth) % 3 === 2;
}

/** `layer_info`: MoE tensors are not consecutive, so their layer comes from the name. */
function layerInfo(state: ModelState, counter: number, name: string): number {
  if (state.nExpert <= 1) return counter;
  const layer = layerOf(name);
  if (layer < 0 || layer >= state.nLayer) {
    throw new RangeError(
      `Cannot choose a type for tensor "${name}": its layer is not in [0, ${state.nLayer})`,
    );
  }
  return layer;
}

/**
 * `llama_tensor_get_type` for the presets aprkit implements, before the
 * fallback for rows that are not whole blocks.
 */
function tensorType(state: ModelState, name: string, cols: number, preset: LlamaPreset): DType {
  let type = DEFAULT_TYPE[preset];
  const falcon = state.arch === "falcon";
  // llama.cpp's token embedding category: Gemma 3n's per-layer embedding too.
  const tokenEmbd = name === "token_embd.weight" || name === "per_layer_token_embd.weight";
  if (name === "output.weight" || (!state.hasOutput && tokenEmbd)) {
    if (falcon || cols % BLOCK[type]! !== 0) type = "Q8_0";
    else if (type !== "Q8_0") type = "Q6_K";
    return type;
  }
  if (tokenEmbd) return type;
  // llama.cpp's `category_is_attn_v`: a fused QKV (Phi-3) and DeepSeek's
  // kv_b count as attn_v, with its rules and its counter.
  if (
    name.includes("attn_v.weight") || name.includes("attn_qkv.weight") ||
    name.includes("attn_kv_b.weight")
  ) {
    if (
      (preset === "Q4_K_M" || preset === "Q5_K_M") &&
      useMoreBits(state.iAttentionWv, state.nAttentionWv)
    ) {
      type = "Q6_K";
    } else if (preset === "Q4_K_S" && state.iAttentionWv < 4) {
      type = "Q5_K";
    }
    if (state.is70B && type === "Q4_K") type = "Q5_K";
    if (state.nExpert === 8) type = "Q8_0";
    state.iAttentionWv++;
    return type;
  }
  if (name.includes("attn_k.weight")) return state.nExpert === 8 ? "Q8_0" : type;
  if (name.includes("attn_q.weight")) return type;
  if (name.includes("ffn_down")) {
    const i = layerInfo(state, state.iFfnDown, name);
    const n = state.nLayer;
    if (preset === "Q4_K_M") {
      if (falcon) type = i < Math.trunc(n / 16) ? "Q6_K" : useMoreBits(i, n) ? "Q5_K" : "Q4_K";
      else if (useMoreBits(i, n)) type = "Q6_K";
    } else if (preset === "Q5_K_M" && useMoreBits(i, n)) {
      type = "Q6_K";
    } else if (preset === "Q4_K_S" && !falcon && i < Math.trunc(n / 8)) {
      type = "Q5_K";
    }
    state.iFfnDown++;
    return type;
  }
  if (name.includes("attn_output.weight")) {
    if (!falcon && state.nExpert === 8 && (preset === "Q4_K_S" || preset === "Q4_K_M")) {
      type = "Q5_K";
    }
    return type;
  }
  return type;
}

/**
 * llama.cpp's fallback for rows that are not whole blocks: Q4_K → Q5_0,
 * Q5_K → Q5_1, Q6_K → Q8_0, then F16; a 32-value type (DeepSeek's 16-wide
 * `attn_k_b` rows in Q8_0) straight to F16 (`tensor_type_fallback`).
 */
function fallback(name: string, cols: number, type: DType): DType {
  if (cols % BLOCK[type]! === 0) return type;
  const next = FALLBACK[type] ?? (BLOCK[type]! <= 32 ? type : undefined);
  if (next === undefined) {
    throw new RangeError(
      `Cannot quantize tensor "${name}" to ${type}: its rows of ${cols} values are not whole ` +
        `${BLOCK[type]}-value blocks, and llama-quantize has no fallback type for it`,
    );
  }
  return cols % BLOCK[next]! === 0 ? next : "F16";
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
  const block = BLOCK[type];
  if (block !== undefined && cols % block === 0) return type;
  const next = FALLBACK[type];
  return next !== undefined && cols % BLOCK[next]! === 0 ? next : "F16";
}
