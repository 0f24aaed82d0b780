// This module is browser compatible.

/**
 * ERNIE 4.5 MoE (`Ernie4_5_MoeForCausalLM`: ERNIE-4.5-21B-A3B, 300B-A47B),
 * after llama.cpp's `Ernie4_5MoeModel` (conversion/ernie.py), GGUF
 * architecture `ernie4_5-moe`: ERNIE 4.5's attention and RoPE
 * (`ernie4_5.ts`); `moe_layer_start_index` dense layers, then MoE layers
 * with experts stacked into `ffn_{gate,up,down}_exps`, the router
 * `mlp.gate`, shared experts (`*_shexp`) and the router's selection bias
 * `mlp.moe_statics.e_score_correction_bias` (`exp_probs_b.bias`).
 * Multi-token-prediction tensors (`model.mtp_*`) are dropped, as the
 * converter drops them.
 *
 * @module
 */

import { type ExpertLayout, type Family, LLAMA_BLOCK, SHARED_EXPERT_APR_NAMES } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import { ERNIE_SENTENCEPIECE, ernieHfName, ernieUnsupported } from "./ernie4_5.ts";
import { activation, SILU } from "../config_fields.ts";
import { scoreBiasHfName, scoreBiasReadName } from "../router_bias.ts";

/** `Ernie4_5MoeModel.set_gguf_parameters`. */
function writeErnieMoeKv(w: KvWriter): void {
  writeTextModelKv(w);
  const h = w.hparams;
  w.u32("expert_count", w.need("moe_num_experts"));
  w.u32("expert_used_count", w.need("moe_k"));
  w.u32("interleave_moe_layer_step", w.need("moe_layer_interval"));
  w.u32("leading_dense_block_count", w.need("moe_layer_start_index"));
  w.u32("expert_feed_forward_length", w.find("moe_intermediate_size"));
  const shared = h["moe_num_shared_experts"];
  if (shared != null) {
    w.u32("expert_shared_count", shared);
    const ff = w.num("intermediate_size");
    const kvHeads = w.num("num_key_value_heads");
    if (typeof shared === "number" && shared > 0 && ff !== undefined && kvHeads !== undefined) {
      // The converter's own formula (see unsupported: it must equal transformers' width).
      w.u32("expert_shared_feed_forward_length", Math.floor(ff / kvHeads));
    }
  }
}

/**
 * What of a config llama.cpp's `ernie4_5-moe` would run otherwise than
 * transformers, or `undefined`.
 */
function unsupported(w: KvWriter): string | undefined {
  const dense = ernieUnsupported(w);
  if (dense !== undefined) return dense;
  const h = w.hparams;
  const layers = w.need("num_hidden_layers");
  // llama.cpp loads experts for every layer from moe_layer_start_index on.
  if (h["moe_layer_interval"] !== 1) {
    return `its config.json has moe_layer_interval ${JSON.stringify(h["moe_layer_interval"])}: ` +
      "llama.cpp's ernie4_5-moe loads experts in every layer after the dense ones (interval 1)";
  }
  const end = h["moe_layer_end_index"];
  if (end != null && end !== -1 && end !== layers - 1) {
    return `its config.json has moe_layer_end_index ${JSON.stringify(end)}: llama.cpp's ` +
      `ernie4_5-moe has MoE layers up to the last (${layers - 1})`;
  }
  // transformers' shared experts are moe_intermediate_size × moe_num_shared_experts wide;
  // the converter writes intermediate_size // num_key_value_heads.
  const shared = w.num("moe_num_shared_experts") ?? 0;
  if (shared > 0) {
    const want = w.need("moe_intermediate_size") * shared;
    const written = Math.floor(w.need("intermediate_size") / w.need("num_key_value_heads"));
    if (want !== written) {
      return `its config.json's shared experts are moe_intermediate_size × ` +
        `moe_num_shared_experts = ${want} wide, and llama.cpp's converter writes ` +
        `intermediate_size // num_key_value_heads = ${written}`;
    }
  }
  return undefined;
}

// The router's selection bias is read as `…e_score_correction.bias` (→ `exp_probs_b.bias`).
function hfName(original: string): string {
  return scoreBiasReadName(ernieHfName(original));
}

/** `Ernie4_5MoeModel.filter_tensors`: the multi-token-prediction tensors. */
function drops(name: string): boolean {
  return /^model\.mtp_(block|emb_norm|hidden_norm|linear_proj)\.\d+\./.test(name);
}

/** The experts as ERNIE's converter stacks a layer's once it holds them all: gate, up, down (AFMoE's too). */
export const ERNIE_EXPERTS: ExpertLayout = {
  prefix: "mlp.experts",
  stacks: [
    { hf: "gate_proj", gguf: "ffn_gate_exps" },
    { hf: "up_proj", gguf: "ffn_up_exps" },
    { hf: "down_proj", gguf: "ffn_down_exps" },
  ],
};

/** ERNIE 4.5 MoE. */
export const ERNIE4_5_MOE: Family = {
  name: "ernie4_5-moe",
  apr: { rename: SHARED_EXPERT_APR_NAMES },
  source: "llama.cpp conversion/ernie.py Ernie4_5MoeModel; transformers Ernie4_5_MoeForCausalLM",
  configFields: {
    written: [
      "moe_intermediate_size",
      "moe_k",
      "moe_num_experts",
      "moe_layer_start_index",
      "moe_num_shared_experts",
    ],
    checked: ["use_bias", "moe_layer_interval", "moe_layer_end_index"],
    assumed: [activation("hidden_act", SILU)],
    irrelevant: {
      // The top-k of a softmax over the experts sums to at least k/experts.
      moe_norm_min: "the floor of the top-k weights' sum; llama.cpp's is 6.1e-5, and a top-k " +
        "softmax sum never comes near either",
    },
  },
  hfArchitectures: ["Ernie4_5_MoeForCausalLM"],
  hfModelTypes: ["ernie4_5_moe"],
  ggufArchitecture: "ernie4_5-moe",
  ggufRopeType: "norm",
  blockNames: [
    ...LLAMA_BLOCK,
    ["ffn_gate_inp", "mlp.gate"],
    ["ffn_gate_shexp", "mlp.shared_experts.gate_proj"],
    ["ffn_up_shexp", "mlp.shared_experts.up_proj"],
    ["ffn_down_shexp", "mlp.shared_experts.down_proj"],
    ["exp_probs_b", "mlp.moe_statics.e_score_correction"],
  ],
  experts: ERNIE_EXPERTS,
  permutesQk: false,
  hfRopeInterleaved: true,
  tiedByDefault: true,
  ggufRenamesOnly: false,
  gguf: { writeKv: writeErnieMoeKv, unsupported, drops, hfName, hfNameBack: scoreBiasHfName },
  sentencePiece: ERNIE_SENTENCEPIECE,
};
