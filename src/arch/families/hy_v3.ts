// This module is browser compatible.

/**
 * Hy3 (`HYV3ForCausalLM`: Tencent's Hy3), after llama.cpp's `HYV3Model`
 * (conversion/hunyuan.py), GGUF architecture `hy_v3`.
 *
 * Llama's pre-norms with per-head Q/K RMSNorms (Apertus' attention, RoPE on
 * `rotate_half`'s halves: llama.cpp's NEOX, nothing permuted). Dense layers
 * where `mlp_layer_types` says `dense` (the first, by default), MoE layers
 * elsewhere: experts `mlp.experts.E.*_proj` stacked into `ffn_*_exps`, the
 * router `mlp.router.gate`, a shared MLP `mlp.shared_mlp.*` (`*_shexp`), and
 * the selection bias `mlp.expert_bias`, a parameter without a suffix that the
 * converter writes as `blk.N.exp_probs_b` (no suffix either, as llama.cpp
 * loads it). transformers scores the experts with a sigmoid, normalises the
 * top-k weights and scales them by `router_scaling_factor`, which the
 * converter writes as its keys. llama.cpp tells dense from MoE layers by
 * their tensors, so any `mlp_layer_types` pattern runs as written.
 *
 * Multi-token prediction: the converter writes the `num_nextn_predict_layers`
 * layers past `num_hidden_layers` (GLM-4.5's layout, a whole MoE decoder
 * block with `eh_proj`, `enorm`, `hnorm`) as `blk.N.nextn.*` and the block's
 * own tensors, counted in `block_count`; the block's `final_layernorm` as
 * `nextn.shared_head_norm`.
 *
 * realizar has no Hy3 model: APR output keeps the checkpoint's tensors, the
 * router and shared MLP under the names realizar's MoE loader asks for
 * (`mlp.gate`, `mlp.shared_expert.*`).
 *
 * @module
 */

import type { TensorInfo } from "../../tensor.ts";
import { type Family, LLAMA_BLOCK, type MadeTensor, type MoeLayers } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { GATING_FUNC, writeTextModelKv } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";
import { QWEN_MOE_EXPERTS } from "./qwen2moe.ts";
import { firstNextnBlock, NEXTN_BLOCK, nextnLayers } from "../nextn.ts";

/** `HYV3Model.set_gguf_parameters`. */
function writeHyV3Kv(w: KvWriter): void {
  const h = w.hparams;
  const nextn = nextnLayers(h);
  // block_count is the class's: the trunk and the MTP layers.
  w.writeOver({ ...h, num_hidden_layers: w.need("num_hidden_layers") + nextn }, writeTextModelKv);
  const ff = w.need("moe_intermediate_size");
  w.u32("expert_feed_forward_length", ff);
  w.u32("expert_shared_feed_forward_length", ff * (w.num("num_shared_experts") ?? 1));
  // transformers always normalises the top-k weights (the converter reads a
  // route_norm no HYV3Config has, true when absent).
  w.set("expert_weights_norm", "BOOL", true);
  w.f32("expert_weights_scale", w.num("router_scaling_factor") ?? 1);
  w.u32("expert_gating_func", GATING_FUNC["sigmoid"]);
  if (nextn > 0) w.u32("nextn_predict_layers", nextn);
}

const MTP_FINAL_NORM = /^model\.layers\.(\d+)\.final_layernorm\.weight$/;

/** An MTP block's `final_layernorm` as `shared_head.norm`, as the converter reads it; every other name as it is. */
function mtpFinalNorm(name: string, hparams: Readonly<Record<string, unknown>>): string {
  const m = MTP_FINAL_NORM.exec(name);
  const trunk = hparams["num_hidden_layers"];
  return m !== null && typeof trunk === "number" && Number(m[1]) >= trunk
    ? `model.layers.${m[1]}.shared_head.norm.weight`
    : name;
}

/** What of a config llama.cpp's `hy_v3` would run otherwise than transformers, or `undefined`. */
function unsupported(w: KvWriter): string | undefined {
  const type = w.fullRope["rope_type"] ?? "default";
  if (type !== "default") {
    return `its config.json has rope_type ${JSON.stringify(type)}; the converter writes no ` +
      "RoPE scaling for hy_v3 and llama.cpp rotates without";
  }
  return undefined;
}

/** The inverse of {@linkcode mtpFinalNorm}, for a GGUF read back: an MTP block's (from the first with `nextn.*` tensors) `shared_head.norm` as its `final_layernorm`. */
function mtpFinalNormBack(name: string, ggufNames: ReadonlySet<string> | undefined): string {
  const m = /^model\.layers\.(\d+)\.shared_head\.norm\.weight$/.exec(name);
  const trunk = m === null || ggufNames === undefined ? undefined : firstNextnBlock(ggufNames);
  return trunk !== undefined && Number(m![1]) >= trunk
    ? `model.layers.${m![1]}.final_layernorm.weight`
    : name;
}

const EXPERT_BIAS = /^model\.layers\.(\d+)\.mlp\.expert_bias$/;
const EXP_PROBS_B = /^blk\.(\d+)\.exp_probs_b$/;

/** A GGUF read back: `blk.N.exp_probs_b` (no suffix, which the block table cannot map) as the router's `mlp.expert_bias`. */
function hfNameBack(name: string, ggufNames?: ReadonlySet<string>): string {
  const bias = EXP_PROBS_B.exec(name);
  return bias !== null
    ? `model.layers.${bias[1]}.mlp.expert_bias`
    : mtpFinalNormBack(name, ggufNames);
}

/** The router's selection bias as `blk.N.exp_probs_b`, without a suffix, as the converter names it. */
function expertBias(tensors: readonly TensorInfo[]): MadeTensor[] {
  return tensors.flatMap((info): MadeTensor[] => {
    const m = EXPERT_BIAS.exec(info.name);
    if (m === null) return [];
    return [{
      info: { ...info, name: `blk.${m[1]}.exp_probs_b` },
      needs: [info.name],
      open: ([source]) => source!.open(),
    }];
  });
}

/** Tencent's shared MLP (`mlp.shared_mlp.*`: Hy3's, Hunyuan MoE's) as llama.cpp's `*_shexp`. */
export const SHARED_MLP_BLOCK: readonly (readonly [string, string])[] = [
  ["ffn_gate_shexp", "mlp.shared_mlp.gate_proj"],
  ["ffn_up_shexp", "mlp.shared_mlp.up_proj"],
  ["ffn_down_shexp", "mlp.shared_mlp.down_proj"],
];

/** The same under the name realizar's MoE loader asks for (`mlp.shared_expert.*`). */
export const SHARED_MLP_APR_NAMES: readonly (readonly [string, string])[] = SHARED_MLP_BLOCK.map((
  [, hf],
) => [hf, hf.replace("shared_mlp", "shared_expert")] as const);

/**
 * The MoE layers by `mlp_layer_types` (`sparse` or `dense` per layer), as
 * transformers builds them.
 *
 * @param h The config.
 * @returns The layers, or `undefined` without the field.
 */
function mlpLayerTypes(h: Readonly<Record<string, unknown>>): MoeLayers | undefined {
  const types = h["mlp_layer_types"];
  if (!Array.isArray(types) || !types.every((t) => t === "sparse" || t === "dense")) {
    return undefined;
  }
  return {
    moe: types.map((t) => t === "sparse"),
    from: `mlp_layer_types ${JSON.stringify(types)}`,
  };
}

/** Hy3, Hy3-preview. */
export const HY_V3: Family = {
  name: "hy-v3",
  apr: {
    rename: [["mlp.router.gate", "mlp.gate"], ...SHARED_MLP_APR_NAMES],
  },
  source: "llama.cpp conversion/hunyuan.py HYV3Model; transformers HYV3ForCausalLM",
  configFields: {
    written: [
      "moe_intermediate_size",
      "num_shared_experts",
      "router_scaling_factor",
      "num_nextn_predict_layers",
    ],
    checked: [],
    assumed: [activation("hidden_act", SILU)],
    irrelevant: {
      mlp_layer_types: "llama.cpp tells dense from MoE layers by their tensors, which are written",
      enable_moe_fp32_combine: "the precision the shared and routed outputs are added in",
    },
  },
  hfArchitectures: ["HYV3ForCausalLM"],
  hfModelTypes: ["hy_v3"],
  ggufArchitecture: "hy_v3",
  ggufRopeType: "neox",
  blockNames: [
    ...LLAMA_BLOCK,
    ["ffn_gate_inp", "mlp.router.gate"],
    ...SHARED_MLP_BLOCK,
    ...NEXTN_BLOCK,
  ],
  experts: QWEN_MOE_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeHyV3Kv,
    unsupported,
    made: expertBias,
    moeLayers: mlpLayerTypes,
    sourceName: mtpFinalNorm,
    hfNameBack,
    extraBlocks: nextnLayers,
  },
  // No hash names Hy3's tokenizer, but Tencent's own GGUF of Hy-MT2-30B-A3B,
  // a hy_v3 model with Hy3's 120832-token vocabulary and EOS, carries
  // hunyuan-dense (Hunyuan-4B's hash): DeepSeek-V3's steps, which llama.cpp
  // runs alike under that name (tests/testdata/tokenizers/pre_tokenizers/README.md).
  preTokenizer: "hunyuan-dense",
};
