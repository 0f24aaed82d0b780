// This module is browser compatible.

/**
 * Nemotron-H (`NemotronHForCausalLM`: Nemotron-H, Nemotron Nano 2, and
 * Nemotron 3 Nano's MoE variant), after llama.cpp's `NemotronHModel`
 * (conversion/nemotron.py, a `GraniteHybridModel`): one mixer per layer under
 * `backbone.layers.N.mixer`, each after its own RMSNorm (`norm`, GGUF
 * `attn_norm`) — Mamba-2 (made as Mamba-2's: `ssm.ts`), attention without
 * positions (Q/K permuted as Llama's, which changes nothing without RoPE),
 * a ReLU² MLP (`up_proj`, `down_proj`, no gate) or a MoE block (ReLU² experts
 * stacked, a sigmoid router with its selection bias, a shared expert). The
 * pattern is `hybrid_override_pattern` (`M` Mamba-2, `*` attention, `-` MLP,
 * `E` MoE; transformers 5 saves it as `layers_block_type`), written as
 * `attention.head_count_kv` and `feed_forward_length` per layer (0 where the
 * layer has none). A pattern with MoE layers is llama.cpp's `nemotron_h_moe`,
 * a GGUF architecture of its own. Older configs' `mamba_`-prefixed names
 * (`mamba_n_groups`, `mamba_d_conv`, `mamba_dt_limit`), which transformers
 * renames on load and the converter finds with its prefix, are read too.
 *
 * Nemotron 3 Super's LatentMoE (`moe_latent_size`): the routed experts run in
 * a narrower space, `mixer.fc1_latent_proj` down to it and `fc2_latent_proj`
 * back (GGUF `ffn_latent_down`, `ffn_latent_up`), the router and the shared
 * expert on the hidden state. Its multi-token-prediction layer (`mtp.layers.0`
 * the input fusion and an attention layer, `mtp.layers.1` a MoE layer and the
 * final norm) the converter folds into one block after the trunk, counted in
 * `block_count`, attention and MoE in the per-layer lists (`mtpSourceName`);
 * llama.cpp loads it only for speculative decoding.
 *
 * @module
 */

import { activation, type ConfigFields, SILU } from "../config_fields.ts";
import { type Family, NVFP4_UNSCALED } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { NEXTN_BLOCK, nextnLayers } from "../nextn.ts";
import { scoreBiasHfName, scoreBiasReadName } from "../router_bias.ts";
import { ssmTensors } from "../ssm.ts";
import { writeGraniteKv } from "./granite.ts";
import { clampRefusal, DT_BIAS_NAMES, mamba2Tensors, READ_BACK_REFUSAL } from "./mamba.ts";

const BLOCKS = "backbone.layers";

/** A layer's kind as `hybrid_override_pattern` spells it. */
type Kind = "M" | "*" | "-" | "E";

/** transformers 5's names of the layer kinds (`layers_block_type`). */
const KINDS: Readonly<Record<string, Kind>> = {
  linear_attention: "M",
  mamba: "M",
  full_attention: "*",
  attention: "*",
  mlp: "-",
  moe: "E",
};

/** Each layer's kind: `hybrid_override_pattern`, else `layers_block_type`. */
function pattern(hparams: Readonly<Record<string, unknown>>): Kind[] {
  const given = hparams["hybrid_override_pattern"] ?? hparams["layers_block_type"];
  if (typeof given === "string") return [...given] as Kind[];
  return Array.isArray(given) ? given.map((t) => KINDS[String(t)] ?? (String(t) as Kind)) : [];
}

/**
 * The multi-token-prediction layers' kinds `NemotronHModel` hard-codes:
 * `mtp.layers.0` attention, `mtp.layers.1` MoE (transformers'
 * `mtp_layers_block_type` default, which it builds none of).
 */
const MTP_PATTERN = "*E";

/**
 * The multi-token-prediction layers' kinds a config gives, as transformers
 * reads them: `mtp_layers_block_type`, unless it is the default and the
 * older `mtp_hybrid_override_pattern` is given; `undefined` where neither is.
 */
function mtpPattern(
  hparams: Readonly<Record<string, unknown>>,
): (Kind[] & { field: string; given: unknown }) | undefined {
  const kinds = (field: string) => {
    const given = hparams[field];
    if (given == null) return undefined;
    const list = typeof given === "string"
      ? [...given] as Kind[]
      : Array.isArray(given)
      ? given.map((t) => KINDS[String(t)] ?? (String(t) as Kind))
      : [String(given) as Kind];
    return Object.assign(list, { field, given });
  };
  const list = kinds("mtp_layers_block_type");
  const legacy = kinds("mtp_hybrid_override_pattern");
  return legacy !== undefined && (list === undefined || list.join("") === MTP_PATTERN)
    ? legacy
    : list;
}

/** Whether a config is the MoE variant: its pattern has MoE layers. */
function isMoe(hparams: Readonly<Record<string, unknown>>): boolean {
  return pattern(hparams).includes("E");
}

/**
 * The blocks the converter appends for the multi-token-prediction layers:
 * `num_nextn_predict_layers` (one, which it folds both `mtp.layers` into) for
 * the MoE variant; a dense model's converter writes none.
 */
function mtpBlocks(hparams: Readonly<Record<string, unknown>>): number {
  return isMoe(hparams) ? Math.max(0, nextnLayers(hparams)) : 0;
}

/**
 * `mtp.layers.0.*` and `mtp.layers.1.*` as the block after the trunk, as
 * `NemotronHModel.modify_tensors` renames them: the input fusion's tensors
 * and the two norms of their own under GLM-4.5's names, the rest as the
 * block's mixer.
 */
const MTP_RENAMES: Readonly<Record<string, string>> = {
  "mtp.layers.0.enorm.weight": "enorm.weight",
  "mtp.layers.0.hnorm.weight": "hnorm.weight",
  "mtp.layers.0.eh_proj.weight": "eh_proj.weight",
  "mtp.layers.1.norm.weight": "post_attention_layernorm.weight",
  "mtp.layers.1.final_layernorm.weight": "shared_head.norm.weight",
};

/** A multi-token-prediction tensor under the name the converter maps it by; others as they are. */
function mtpSourceName(name: string, hparams: Readonly<Record<string, unknown>>): string {
  const m = /^mtp\.layers\.[01]\.(.+)$/.exec(name);
  if (m === null || mtpBlocks(hparams) === 0) return name;
  return `${BLOCKS}.${pattern(hparams).length}.${MTP_RENAMES[name] ?? m[1]}`;
}

/** The SSM's inner width (`mamba_num_heads × mamba_head_dim`) and group count. */
function sizes(w: KvWriter): { inner: number; groups: number } {
  return {
    inner: w.need("mamba_num_heads") * w.need("mamba_head_dim"),
    groups: w.need("n_groups", "mamba_n_groups"),
  };
}

/** The MoE variant's fields that TextModel's keys read (expert and group counts). */
const MOE_FIELDS = ["n_routed_experts", "num_experts_per_tok", "n_group", "topk_group"];

/**
 * Per layer: `value` on the layers of `kinds`, else 0; the
 * multi-token-prediction block is both an attention and a MoE layer.
 */
function perLayer(w: KvWriter, kinds: readonly Kind[], value: number): number[] {
  w.find("hybrid_override_pattern", "layers_block_type"); // the list's source, for messages
  const mtp = kinds.some((k) => MTP_PATTERN.includes(k)) ? value : 0;
  return [
    ...pattern(w.hparams).map((k) => kinds.includes(k) ? value : 0),
    ...Array<number>(mtpBlocks(w.hparams)).fill(mtp),
  ];
}

/**
 * `NemotronHModel.set_gguf_parameters`: `GraniteHybridModel`'s keys (Granite's
 * without multipliers, the SSM's, no rotation and a 2²⁰ context), the head
 * sizes, and the feed-forward width per layer; the MoE variant's expert keys,
 * the latent width and the multi-token-prediction block.
 */
function writeKv(w: KvWriter): void {
  const layers = pattern(w.hparams).length + mtpBlocks(w.hparams);
  // The converter counts the layers from the pattern. A dense model's
  // config.json as transformers 5 saves it holds NemotronHConfig's MoE
  // defaults, which the published dense configs (and so the converter's
  // files) do not have.
  const dense = isMoe(w.hparams) ? {} : Object.fromEntries(MOE_FIELDS.map((f) => [f, undefined]));
  const hparams = { ...w.hparams, ...dense, num_hidden_layers: layers };
  w.writeOver(hparams, writeGraniteKv);
  w.u32("ssm.conv_kernel", w.need("conv_kernel", "mamba_d_conv"));
  w.u32("ssm.state_size", w.need("ssm_state_size"));
  w.u32("ssm.group_count", sizes(w).groups);
  // Read again here: the inner width's key names the fields it came from.
  const width = sizes(w).inner;
  w.u32("ssm.inner_size", width);
  w.u32("ssm.time_step_rank", w.need("mamba_num_heads"));
  w.setArray("attention.head_count_kv", "INT32", perLayer(w, ["*"], w.need("num_key_value_heads")));
  w.set("rope.scaling.finetuned", "BOOL", false);
  w.u32("context_length", 2 ** 20);
  const headDim = w.need("head_dim");
  w.u32("attention.key_length", headDim);
  w.u32("attention.value_length", headDim);
  if (!isMoe(w.hparams)) {
    w.setArray("feed_forward_length", "INT32", perLayer(w, ["-"], w.need("intermediate_size")));
    return;
  }
  const ff = w.need("moe_intermediate_size");
  w.setArray("feed_forward_length", "INT32", perLayer(w, ["E"], ff));
  w.u32("expert_used_count", w.need("num_experts_per_tok"));
  w.u32("expert_feed_forward_length", ff);
  w.u32("expert_shared_feed_forward_length", w.need("moe_shared_expert_intermediate_size"));
  w.u32("expert_count", w.need("n_routed_experts"));
  w.u32("expert_shared_count", w.need("n_shared_experts"));
  w.set("expert_weights_norm", "BOOL", w.hparams["norm_topk_prob"] === true);
  w.f32("expert_weights_scale", w.need("routed_scaling_factor"));
  w.u32("expert_group_count", w.need("n_group"));
  const latent = w.hparams["moe_latent_size"];
  if (latent != null) w.u32("moe_latent_size", w.need("moe_latent_size"));
  const mtp = mtpBlocks(w.hparams);
  if (mtp > 0) w.u32("nextn_predict_layers", mtp);
}

function unsupported(w: KvWriter): string | undefined {
  const kinds = pattern(w.hparams);
  const unknown = kinds.find((k) => !["M", "*", "-", "E"].includes(k));
  if (unknown !== undefined) {
    return `its config.json's layer pattern has a layer kind ${JSON.stringify(unknown)}, ` +
      `which llama.cpp's converter does not know (M, *, -, E)`;
  }
  if (kinds.includes("E") && kinds.includes("-")) {
    return "its layer pattern has both MLP (-) and MoE (E) layers; llama.cpp's converter " +
      "writes only the one its num_experts_per_tok says";
  }
  if (!kinds.includes("M")) {
    return "its layer pattern has no Mamba-2 layer (M); aprkit writes only the hybrid";
  }
  const clamped = clampRefusal(w, w.hparams["time_step_limit"] ?? w.hparams["mamba_dt_limit"]);
  if (clamped !== undefined) return clamped;
  if (isMoe(w.hparams)) {
    // transformers gives the shared expert and the latent projections biases by it;
    // llama.cpp's nemotron_h_moe loads none.
    if (w.hparams["mlp_bias"] === true) {
      return "its config.json has mlp_bias true; llama.cpp's nemotron_h_moe loads no bias for " +
        "the shared expert or the latent projections, which transformers adds";
    }
    // Read only where there are MTP layers: with none, neither transformers nor
    // llama.cpp builds what the field describes.
    const mtp = w.num("num_nextn_predict_layers") ?? 0;
    const mtpKinds = mtp > 0 ? mtpPattern(w.hparams) : undefined;
    if (mtpKinds !== undefined && mtpKinds.join("") !== MTP_PATTERN) {
      return `its config.json has ${mtpKinds.field} ${JSON.stringify(mtpKinds.given)}; ` +
        `llama.cpp's converter folds Nemotron-H's multi-token-prediction layers into one ` +
        `block as attention, then MoE (["full_attention","moe"], "${MTP_PATTERN}")`;
    }
    if (mtp > 1) {
      return `its config.json has num_nextn_predict_layers ${mtp}; llama.cpp's converter ` +
        `folds Nemotron-H's multi-token-prediction layers into one block (it asserts 1)`;
    }
  }
  return undefined;
}

const NEMOTRON_H_FIELDS: ConfigFields = {
  written: [
    "layers_block_type",
    "layer_types",
    "hybrid_override_pattern",
    "mamba_num_heads",
    "mamba_head_dim",
    "n_groups",
    "ssm_state_size",
    "conv_kernel",
    "layer_norm_epsilon",
    // Its bias tensor, which llama.cpp loads when the file has it.
    "use_conv_bias",
    "moe_intermediate_size",
    "moe_shared_expert_intermediate_size",
    "n_shared_experts",
    "norm_topk_prob",
    "routed_scaling_factor",
    "moe_latent_size",
    // As nextn_predict_layers and the block after the trunk (one; more refused).
    "num_nextn_predict_layers",
  ],
  checked: [
    "time_step_limit",
    // Against the attention-then-MoE layer the converter hard-codes (the MoE variant's);
    // the published configs' spelling too, which transformers reads into it.
    "mtp_layers_block_type",
    "mtp_hybrid_override_pattern",
  ],
  assumed: [
    activation("mamba_hidden_act", SILU),
    { field: "mlp_hidden_act", hfDefault: "relu2", llamaCpp: "relu2" },
    // llama.cpp loads no bias for the SSM's in/out projections.
    { field: "use_bias", hfDefault: false, llamaCpp: false },
    { field: "mamba_proj_bias", hfDefault: false, llamaCpp: false },
  ],
  irrelevant: {
    attention_bias: "transformers' NemotronH attention has no biases whatever it says",
    sliding_window: "transformers' NemotronH attends to the whole context (no window mask)",
    expand: "transformers' NemotronH mixer is mamba_num_heads × mamba_head_dim wide",
    chunk_size: "the chunked scan computes the same values as one pass",
    mamba_ssm_cache_dtype: "the type of the generation cache's states (F32 in llama.cpp)",
    use_mamba_kernels: "deprecated; no effect",
    residual_in_fp32: "the residual's type in half-precision runs; llama.cpp adds it in F32",
    rescale_prenorm_residual: "initialisation only",
    time_step_min: "initialisation only",
    time_step_max: "initialisation only",
    time_step_floor: "initialisation only",
    num_logits_to_keep: "how many positions transformers computes logits for",
    moe_shared_expert_overlap: "not read by transformers' NemotronH",
  },
};

const NEMOTRON_H_BLOCK: readonly (readonly [string, string])[] = [
  ["attn_norm", "norm"],
  ["ssm_in", "mixer.in_proj"],
  ["ssm_conv1d", "mixer.conv1d"],
  ["ssm_dt", "mixer.dt_proj"],
  ["ssm_out", "mixer.out_proj"],
  ["attn_q", "mixer.q_proj"],
  ["attn_k", "mixer.k_proj"],
  ["attn_v", "mixer.v_proj"],
  ["attn_output", "mixer.o_proj"],
  ["ffn_up", "mixer.up_proj"],
  ["ffn_down", "mixer.down_proj"],
];

const SSM = mamba2Tensors("mixer", sizes);

/** Nemotron-H with MLP layers (Nemotron-H, Nemotron Nano 2). */
export const NEMOTRON_H: Family = {
  name: "nemotron_h",
  source: "llama.cpp conversion/nemotron.py NemotronHModel; transformers NemotronHForCausalLM",
  configFields: NEMOTRON_H_FIELDS,
  hfArchitectures: ["NemotronHForCausalLM"],
  hfModelTypes: ["nemotron_h"],
  variantOf: (hparams) => isMoe(hparams) ? "nemotron_h_moe" : undefined,
  ggufArchitecture: "nemotron_h",
  ggufRopeType: "none",
  hfBlockPrefix: BLOCKS,
  blockNames: NEMOTRON_H_BLOCK,
  globalNames: [["token_embd", "backbone.embeddings"], ["output_norm", "backbone.norm_f"]],
  hybrid: true,
  // The converter's set_vocab (not the MoE variant's): the published
  // tokenizers add a BOS by their post-processor without saying add_bos_token.
  addBosToken: true,
  // The published tokenizer (131072 tokens, Mistral's) hashes as
  // mistral-community/pixtral-12b's: `pixtral`, which llama.cpp runs with
  // Llama 3's regex and ignore_merges (aprkit's `llama-bpe`), so only a file
  // with those steps is renamed. Nemotron 3's own has Tekken's steps, which
  // aprkit writes `tekken` (llama.cpp splits them as transformers does only
  // under that name).
  preTokenizer: "pixtral",
  permutesQk: true,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  ggufReadBackRefusal: READ_BACK_REFUSAL.replace("a Mamba GGUF", "a Nemotron-H GGUF"),
  gguf: {
    writeKv,
    unsupported,
    llamaKeys: true,
    made: (tensors, w) => ssmTensors(tensors, w, BLOCKS, SSM),
    // Multi-token-prediction tensors where config.json counts none (or the model is
    // dense), left out as --no-mtp does: the converter could not map them.
    drops: (name, w) => name.startsWith("mtp.") && mtpBlocks(w.hparams) === 0,
    ...DT_BIAS_NAMES,
  },
};

const { variantOf: _variant, addBosToken: _bos, ...DENSE } = NEMOTRON_H;

/** Nemotron-H with MoE layers (Nemotron 3 Nano): llama.cpp's `nemotron_h_moe`. */
export const NEMOTRON_H_MOE: Family = {
  ...DENSE,
  name: "nemotron_h_moe",
  // Found through NEMOTRON_H's variantOf: one family per Hugging Face class.
  hfArchitectures: [],
  hfModelTypes: [],
  ggufArchitecture: "nemotron_h_moe",
  blockNames: [
    ...NEMOTRON_H_BLOCK,
    ["ffn_gate_inp", "mixer.gate"],
    ["exp_probs_b", "mixer.gate.e_score_correction"],
    ["ffn_up_shexp", "mixer.shared_experts.up_proj"],
    ["ffn_down_shexp", "mixer.shared_experts.down_proj"],
    ["ffn_latent_down", "mixer.fc1_latent_proj"],
    ["ffn_latent_up", "mixer.fc2_latent_proj"],
    // The multi-token-prediction block's own (mtpSourceName): it shares the embedding and head.
    ...NEXTN_BLOCK.filter(([g]) => !["nextn.embed_tokens", "nextn.shared_head_head"].includes(g)),
    ["post_attention_norm", "post_attention_layernorm"],
  ],
  experts: {
    prefix: "mixer.experts",
    stacks: [
      { hf: "down_proj", gguf: "ffn_down_exps" },
      { hf: "up_proj", gguf: "ffn_up_exps" },
    ],
  },
  gguf: {
    ...NEMOTRON_H.gguf!,
    hfName: (name) => DT_BIAS_NAMES.hfName(scoreBiasReadName(name)),
    hfNameBack: (name) => scoreBiasHfName(DT_BIAS_NAMES.hfNameBack(name)),
    sourceName: mtpSourceName,
    extraBlocks: mtpBlocks,
    mtpBlocksRequired: true,
    // The converter's F32 list is matched with block 1 (mtp.layers.1's number).
    convertedAnyway: (h) =>
      mtpBlocks(h) > 0 ? [`blk.${pattern(h).length}.ffn_gate_inp.weight`] : [],
    // NVFP4 (Nemotron 3's published form): the graph multiplies the Mamba, attention,
    // shared-expert and head weights' .scale (build_lora_mm) and each stacked expert's
    // (build_moe_ffn *_exps_s), not those of build_ffn_layer's router and latent projections.
    nvfp4Scales: true,
    nvfp4Unscaled: {
      ...NVFP4_UNSCALED,
      ffn_gate_inp: "the router's build_lora_mm is given none",
      ffn_latent_down: "the latent projections are a plain ggml_mul_mat",
      ffn_latent_up: "the latent projections are a plain ggml_mul_mat",
    },
  },
};
