// This module is browser compatible.

/**
 * Kimi Linear (`KimiLinearForCausalLM`: Kimi-Linear-48B-A3B), after llama.cpp's
 * `KimiLinearModel` (conversion/kimi_linear.py), GGUF architecture
 * `kimi-linear`.
 *
 * A hybrid: most layers are Kimi delta attention (KDA, a gated DeltaNet whose
 * decay is per channel), the others multi-head latent attention (MLA) without
 * positions; `attention.head_count_kv` says which (0 for a KDA layer, 1 for
 * MLA written as MQA over the latent, as DeepSeek's). On the way to GGUF, as
 * the converter does: each KDA layer's `q/k/v_conv1d` kernel `[channels, 1,
 * kernel]` becomes `[1, channels, 1, kernel]`, `A_log` becomes `ssm_a =
 * −exp(A_log)`, `dt_bias` is `ssm_dt.bias`; MLA's `kv_b_proj` is split per head
 * into `attn_k_b` (transposed) and `attn_v_b` (`deepseek2.ts`). The feed-forward
 * is dense on the first `first_k_dense_replace` layers (`mlp.*`), then
 * experts (`block_sparse_moe.experts.E.w1/w2/w3`, stacked) with shared experts
 * and a sigmoid router whose `e_score_correction_bias` is `exp_probs_b.bias`.
 *
 * The published config.json describes the layers in `linear_attn_config`
 * (1-based `full_attn_layers`, the KDA head size and count, the convolution's
 * kernel) and `first_k_dense_replace`; transformers 5 reads them into its own
 * fields (`layer_types`, `linear_head_dim`, `linear_num_heads`,
 * `linear_conv_kernel_dim`, `mlp_layer_types`) and saves those instead. The
 * converter reads only the published form; aprkit reads either, with
 * transformers' precedence, and writes the same keys.
 *
 * realizar has no Kimi Linear model: APR output keeps the checkpoint's tensors
 * under their Hugging Face names.
 *
 * @module
 */

import type { TensorInfo } from "../../tensor.ts";
import { type Family, LLAMA_BLOCK } from "../family.ts";
import { KIMI_TIKTOKEN } from "../kimi_tiktoken.ts";
import { type KvWriter, record } from "../kv.ts";
import { scoreBiasReadName } from "../router_bias.ts";
import { ssmTensors } from "../ssm.ts";
import { scoringRefusal, writeTextModelKvScoredBy } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";
import { deepseek2ImpliedKeys, deepseek2Made } from "./deepseek2.ts";

/** The layers and KDA sizes transformers' `KimiLinearConfig` derives from either form of config.json. */
interface KimiLayers {
  /** Per layer: whether it is MLA (full attention) rather than KDA. */
  readonly full: readonly boolean[];
  /** Per layer: whether its feed-forward is dense rather than experts. */
  readonly dense: readonly boolean[];
  readonly kdaHeadDim: number;
  readonly kdaHeads: number;
  readonly convKernel: number;
}

/** A positive integer or a RangeError naming the key. */
function positive(value: unknown, key: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`config.json: ${key} is not a positive integer`);
  }
  return value;
}

/**
 * The published plan: 1-based `full_attn_layers` (MLA) and `kda_layers`,
 * each layer in exactly one. The converter reads only `full_attn_layers`
 * (any other layer is KDA); transformers sets each list's layers in turn, so
 * a layer in neither fails its config validation, one past the end raises,
 * 0 wraps to the last layer, and one in both is KDA. A plan otherwise would
 * be written as the converter reads it and run as another model, or as none.
 */
function publishedLayers(n: number, fullLayers: unknown[], kdaLayers: unknown[]): boolean[] {
  const listed = (list: unknown[], key: string) =>
    new Set(list.map((layer) => {
      const at = positive(layer, `linear_attn_config.${key}`);
      if (at > n) {
        throw new RangeError(`config.json: linear_attn_config.${key} names layer ${at} of ${n}`);
      }
      return at;
    }));
  const full = listed(fullLayers, "full_attn_layers");
  const kda = listed(kdaLayers, "kda_layers");
  for (let at = 1; at <= n; at++) {
    if (full.has(at) === kda.has(at)) {
      const both = full.has(at);
      throw new RangeError(
        `config.json: linear_attn_config puts layer ${at} in ` +
          (both
            ? "both full_attn_layers and kda_layers"
            : "neither full_attn_layers nor kda_layers") +
          `; each of the ${n} layers (from 1) must be in one (` +
          (both
            ? "transformers makes it delta attention, the converter latent attention)"
            : "transformers refuses the config, the converter makes it delta attention)"),
      );
    }
  }
  return Array.from({ length: n }, (_, i) => full.has(i + 1));
}

/**
 * `KimiLinearConfig.__post_init__`: `layer_types` if given, else
 * `linear_attn_config`'s 1-based `full_attn_layers`/`kda_layers`, else every
 * 4th layer from layer 4 on; the KDA sizes from `linear_attn_config` before
 * the `linear_*` fields; `mlp_layer_types`, else `first_k_dense_replace` (1)
 * dense layers.
 */
export function kimiLayers(hparams: Readonly<Record<string, unknown>>): KimiLayers {
  const n = positive(hparams["num_hidden_layers"], "num_hidden_layers");
  const linear = record(hparams["linear_attn_config"]) ?? {};
  const types = hparams["layer_types"];
  let full: boolean[];
  if (Array.isArray(types)) {
    if (
      types.length !== n || types.some((t) => t !== "full_attention" && t !== "linear_attention")
    ) {
      throw new RangeError(
        `config.json: layer_types is not ${n} of "full_attention" / "linear_attention"`,
      );
    }
    full = types.map((t) => t === "full_attention");
  } else if (Array.isArray(linear["full_attn_layers"]) && Array.isArray(linear["kda_layers"])) {
    full = publishedLayers(n, linear["full_attn_layers"], linear["kda_layers"]);
  } else full = Array.from({ length: n }, (_, i) => i > 0 && i % 4 === 0);
  const mlp = hparams["mlp_layer_types"];
  let dense: boolean[];
  if (Array.isArray(mlp)) {
    if (mlp.length !== n || mlp.some((t) => t !== "dense" && t !== "sparse")) {
      throw new RangeError(`config.json: mlp_layer_types is not ${n} of "dense" / "sparse"`);
    }
    dense = mlp.map((t) => t === "dense");
  } else {
    const k = hparams["first_k_dense_replace"] ?? 1;
    if (typeof k !== "number" || !Number.isSafeInteger(k) || k < 0) {
      throw new RangeError("config.json: first_k_dense_replace is not a whole number");
    }
    dense = Array.from({ length: n }, (_, i) => i < k);
  }
  const pick = (inner: string, field: string, fallback: number) =>
    positive(linear[inner] ?? hparams[field] ?? fallback, `linear_attn_config.${inner} / ${field}`);
  return {
    full,
    dense,
    kdaHeadDim: pick("head_dim", "linear_head_dim", 128),
    kdaHeads: pick("num_heads", "linear_num_heads", 32),
    convKernel: pick("short_conv_kernel_size", "linear_conv_kernel_dim", 4),
  };
}

/** The number of leading dense layers, when the dense ones lead (else `undefined`). */
function leadingDense(dense: readonly boolean[]): number | undefined {
  const k = dense.indexOf(false) < 0 ? dense.length : dense.indexOf(false);
  return dense.slice(k).some((d) => d) ? undefined : k;
}

/** `KimiLinearModel.set_gguf_parameters`. */
function writeKv(w: KvWriter): void {
  const h = w.hparams;
  const layers = kimiLayers(h);
  const rope = w.need("qk_rope_head_dim");
  const kvLora = w.need("kv_lora_rank");
  // The converter's hparams are transformers' (AutoConfig), whose head_dim is
  // config.json's (the published 72), else qk_rope_head_dim; MLA as MQA: one
  // KV head. transformers always scores the experts with a sigmoid (the
  // published moe_router_activation_func).
  const headDim = h["head_dim"] ?? rope;
  w.writeOver(
    { ...h, num_key_value_heads: 1, head_dim: headDim },
    (common) => writeTextModelKvScoredBy(common, "sigmoid"),
  );
  w.setArray("attention.head_count_kv", "INT32", layers.full.map((f) => f ? 1 : 0));
  w.u32("vocab_size", w.need("vocab_size"));
  w.cite("linear_conv_kernel_dim");
  w.findIn("linear_attn_config", "short_conv_kernel_size");
  w.u32("ssm.conv_kernel", layers.convKernel);
  w.findIn("linear_attn_config", "head_dim");
  w.cite("linear_head_dim");
  w.u32("kda.head_dim", layers.kdaHeadDim);
  w.u32("attention.q_lora_rank", w.find("q_lora_rank"));
  w.u32("attention.kv_lora_rank", kvLora);
  w.u32("rope.dimension_count", rope);
  w.u32("attention.key_length", kvLora + rope);
  w.u32("attention.key_length_mla", w.need("qk_nope_head_dim") + rope);
  w.u32("attention.value_length_mla", w.need("v_head_dim"));
  w.u32("expert_feed_forward_length", w.need("moe_intermediate_size"));
  w.u32("expert_shared_count", w.need("num_shared_experts", "n_shared_experts"));
  w.u32("leading_dense_block_count", leadingDense(layers.dense));
  w.f32("expert_weights_scale", w.need("routed_scaling_factor"));
}

/** What of a config llama.cpp's kimi-linear would compute otherwise than transformers. */
function unsupported(w: KvWriter): string | undefined {
  const h = w.hparams;
  const layers = kimiLayers(h);
  const heads = w.need("num_attention_heads");
  const pre = "its config.json has";
  if (h["q_lora_rank"] != null) {
    return `${pre} q_lora_rank ${h["q_lora_rank"]}; llama.cpp's kimi-linear graph projects ` +
      `MLA's queries with attn_q alone (no q LoRA)`;
  }
  if (layers.kdaHeads !== heads) {
    return `${pre} ${layers.kdaHeads} linear-attention heads (linear_attn_config.num_heads) and ` +
      `num_attention_heads ${heads}; llama.cpp's kimi-linear runs KDA with num_attention_heads`;
  }
  const kvHeads = w.num("num_key_value_heads") ?? heads;
  if (kvHeads !== heads) {
    return `${pre} num_key_value_heads ${kvHeads} and num_attention_heads ${heads}; MLA's ` +
      `kv_b_proj is one block per attention head`;
  }
  const renormalize = h["moe_renormalize"] ?? h["norm_topk_prob"] ?? true;
  if (renormalize !== true) {
    return `${pre} moe_renormalize ${JSON.stringify(renormalize)}; llama.cpp's kimi-linear ` +
      `reads no key for it and always normalises the top-k expert weights`;
  }
  const groups = w.num("num_expert_group", "n_group") ?? 1;
  const used = w.num("topk_group") ?? groups;
  if (used < groups) {
    return `${pre} num_expert_group ${groups} with topk_group ${used}; the converter writes ` +
      `no expert_group_count for it, so llama.cpp would not limit the experts to groups`;
  }
  if (leadingDense(layers.dense) === undefined) {
    return `${pre} dense layers after expert ones (mlp_layer_types); llama.cpp's kimi-linear ` +
      `takes the dense layers to be the first leading_dense_block_count`;
  }
  const freq = h["moe_layer_freq"] ?? 1;
  if (freq !== 1) {
    return `${pre} moe_layer_freq ${JSON.stringify(freq)}; transformers and llama.cpp put ` +
      `experts in every layer after the dense ones`;
  }
  if (h["mla_use_nope"] === false) {
    return `${pre} mla_use_nope false; transformers' KimiLinear and llama.cpp's kimi-linear ` +
      `rotate no MLA dims`;
  }
  return scoringRefusal(w, "sigmoid", "Kimi Linear");
}

/**
 * Nothing, or a RangeError for a checkpoint without `lm_head.weight` (a
 * `KimiLinearModel` saved without its head): llama.cpp's kimi-linear loads
 * `output.weight` always and never falls back to the embedding.
 */
function headRequired(tensors: readonly TensorInfo[]): never[] {
  if (!tensors.some((t) => t.name === "lm_head.weight")) {
    throw new RangeError(
      "Cannot convert a Kimi Linear checkpoint without lm_head.weight (a KimiLinearModel " +
        "saved without its head) to GGUF: llama.cpp's kimi-linear needs output.weight",
    );
  }
  return [];
}

/** KDA's depthwise kernels `[channels, 1, kernel]` (or `[channels, kernel]`) as `[1, channels, 1, kernel]`. */
function kdaConv(shape: readonly number[]): readonly number[] {
  const [channels, kernel] = [shape[0]!, shape[shape.length - 1]!];
  return [1, channels, 1, kernel];
}

/** `dt_bias` read as `dt_proj.bias` and the router bias as `e_score_correction.bias`, as the converter maps them. */
function hfName(name: string): string {
  const read = scoreBiasReadName(name);
  return read.endsWith(".self_attn.dt_bias")
    ? `${read.slice(0, -".dt_bias".length)}.dt_proj.bias`
    : read;
}

/** Kimi Linear. */
export const KIMI_LINEAR: Family = {
  name: "kimi-linear",
  source: "llama.cpp conversion/kimi_linear.py KimiLinearModel; transformers KimiLinearForCausalLM",
  configFields: {
    written: [
      "kv_lora_rank",
      "qk_rope_head_dim",
      "qk_nope_head_dim",
      "v_head_dim",
      "moe_intermediate_size",
      "n_shared_experts",
      "num_shared_experts",
      "routed_scaling_factor",
      "layer_types",
      "linear_head_dim",
      "linear_conv_kernel_dim",
      "linear_attn_config",
      "first_k_dense_replace",
      "model_max_length",
      "num_experts_per_token",
    ],
    checked: [
      "q_lora_rank",
      "linear_num_heads",
      "norm_topk_prob",
      "moe_renormalize",
      "n_group",
      "num_expert_group",
      "topk_group",
      "mlp_layer_types",
      "moe_layer_freq",
      "mla_use_nope",
      "moe_router_activation_func",
    ],
    assumed: [
      activation("hidden_act", SILU),
      // llama.cpp's kimi-linear loads no attention biases.
      { field: "attention_bias", hfDefault: false, llamaCpp: false },
    ],
    irrelevant: {
      qk_head_dim: "qk_nope_head_dim + qk_rope_head_dim, which are written",
      use_grouped_topk: "transformers groups by num_expert_group and topk_group, which are checked",
      num_nextn_predict_layers: "the multi-token-prediction layers, which neither transformers " +
        "nor llama.cpp's main pass runs",
    },
  },
  hfArchitectures: ["KimiLinearForCausalLM", "KimiLinearModel"],
  hfModelTypes: ["kimi_linear"],
  ggufArchitecture: "kimi-linear",
  // KimiLinearModel.set_vocab writes the remote tokenizer's eos_id over SpecialVocab's.
  tiktoken: { ...KIMI_TIKTOKEN, eosFromTokenizer: true },
  ggufRopeType: "none",
  noRope: true,
  hybrid: true,
  blockNames: [
    ...LLAMA_BLOCK.filter(([g]) => g !== "attn_q_norm" && g !== "attn_k_norm"),
    // MLA.
    ["attn_kv_a_mqa", "self_attn.kv_a_proj_with_mqa"],
    ["attn_kv_a_norm", "self_attn.kv_a_layernorm"],
    // KDA.
    ["ssm_f_a", "self_attn.f_a_proj"],
    ["ssm_f_b", "self_attn.f_b_proj"],
    ["ssm_beta", "self_attn.b_proj"],
    ["ssm_g_a", "self_attn.g_a_proj"],
    ["ssm_g_b", "self_attn.g_b_proj"],
    ["ssm_norm", "self_attn.o_norm"],
    ["ssm_dt", "self_attn.dt_proj"],
    // Experts' router (and its selection bias) and shared experts.
    ["ffn_gate_inp", "block_sparse_moe.gate"],
    ["exp_probs_b", "block_sparse_moe.gate.e_score_correction"],
    ["ffn_gate_shexp", "block_sparse_moe.shared_experts.gate_proj"],
    ["ffn_up_shexp", "block_sparse_moe.shared_experts.up_proj"],
    ["ffn_down_shexp", "block_sparse_moe.shared_experts.down_proj"],
    // The dense MLP as transformers 5 saves it (it renames every layer's `mlp.`
    // to `block_sparse_moe.` on save; the converter maps only `mlp.`).
    ["ffn_gate", "block_sparse_moe.gate_proj"],
    ["ffn_up", "block_sparse_moe.up_proj"],
    ["ffn_down", "block_sparse_moe.down_proj"],
  ],
  experts: {
    prefix: "block_sparse_moe.experts",
    stacks: [
      { hf: "w1", gguf: "ffn_gate_exps" },
      { hf: "w2", gguf: "ffn_down_exps" },
      { hf: "w3", gguf: "ffn_up_exps" },
    ],
  },
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    writeKv,
    // As DeepSeek-V2's: transformers sets head_dim and qk_head_dim on loading.
    impliedKeys: deepseek2ImpliedKeys,
    llamaKeys: true,
    unsupported,
    made: (tensors, w) => [
      ...headRequired(tensors),
      ...deepseek2Made(tensors, w),
      ...ssmTensors(tensors, w, "model.layers", [
        { piece: "self_attn.A_log", gguf: "ssm_a", shape: (s) => s, negExp: true },
        ...(["q", "k", "v"] as const).map((x) => ({
          piece: `self_attn.${x}_conv1d.weight`,
          gguf: `ssm_conv1d_${x}.weight`,
          shape: kdaConv,
        })),
      ]),
    ],
    hfName,
  },
  ggufReadBackRefusal: "aprkit does not read a Kimi Linear GGUF back into Hugging Face's layout " +
    "(ssm_a is −exp(A_log), MLA's kv_b_proj is split and transposed per head); --keep-names " +
    "keeps its GGUF tensors",
};
