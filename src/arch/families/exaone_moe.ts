// This module is browser compatible.

/**
 * K-EXAONE (`ExaoneMoeForCausalLM`; `ExaoneMoEForCausalLM` before
 * transformers 5.1), after llama.cpp's `ExaoneMoEModel` (conversion/exaone.py,
 * an `Exaone4Model`), GGUF architecture `exaone-moe`.
 *
 * Llama's pre-norms with per-head Q/K RMSNorms; a sliding window on the
 * layers `layer_types` names, which alone get RoPE (the global layers have
 * none), written as EXAONE 4's keys (`exaone4.ts`). Feed-forward:
 * `first_k_dense_replace` dense layers, then MoE layers with experts stacked
 * into `ffn_*_exps`, shared experts (`*_shexp`), a sigmoid router
 * (`mlp.gate`) and its selection bias `mlp.e_score_correction_bias`
 * (`exp_probs_b.bias`, read back by name).
 *
 * Multi-token prediction: the converter writes the `num_nextn_predict_layers`
 * layers (`mtp.layers.i.*`, dense) as the blocks after the trunk, counted in
 * `block_count`, and `mtp.fc`/`mtp.pre_fc_norm_*`/`mtp.norm` as the
 * `nextn.*` tensors of every one of them (a copy in each; Qwen3.5 writes
 * them in the first only).
 *
 * realizar has no EXAONE model: APR output keeps the checkpoint's tensors,
 * its shared experts under the name realizar's loader asks for.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK, SHARED_EXPERT_APR_NAMES } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { llama3RopeFreqs } from "../rope_factors.ts";
import { scoringRefusal, writeTextModelKvScoredBy } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";
import { scoreBiasHfName, scoreBiasReadName } from "../router_bias.ts";
import { DEEPSEEK_MOE_BLOCK } from "./deepseek2.ts";
import { QWEN_MOE_EXPERTS } from "./qwen2moe.ts";
import { mtpHfName, mtpSourceNames, NEXTN_BLOCK, nextnLayers } from "../nextn.ts";
import { slidingLayers, writeExaone4Kv } from "./exaone4.ts";

/**
 * `ExaoneMoEModel.set_gguf_parameters`. llama.cpp's exaone-moe requires
 * `expert_gating_func`, which the converter writes from `scoring_func` (not
 * a transformers field): transformers' sigmoid is written without one.
 */
function writeExaoneMoeKv(w: KvWriter): void {
  const h = w.hparams;
  writeTextModelKvScoredBy(w, "sigmoid", writeExaone4Kv);
  // The class's block_count: the trunk and the MTP layers (the sliding-window
  // pattern stays the trunk's).
  w.u32("block_count", w.need("num_hidden_layers") + nextnLayers(h));
  const ff = w.need("moe_intermediate_size");
  const shared = w.need("num_shared_experts");
  w.u32("expert_feed_forward_length", ff);
  w.u32("expert_shared_count", shared);
  w.u32("expert_shared_feed_forward_length", ff * shared);
  w.f32("expert_weights_scale", w.need("routed_scaling_factor"));
  // Left out, ExaoneMoeConfig's default (true); the converter raises without it.
  w.set("expert_weights_norm", "BOOL", h["norm_topk_prob"] ?? true);
  w.u32("leading_dense_block_count", h["first_k_dense_replace"] ?? 0);
  w.u32("nextn_predict_layers", h["num_nextn_predict_layers"] ?? 0);
  w.set("rope.scaling.type", "STRING", "none");
}

/** What of a config llama.cpp's `exaone-moe` would run otherwise than transformers, or `undefined`. */
function unsupported(w: KvWriter): string | undefined {
  const h = w.hparams;
  const layers = w.need("num_hidden_layers");
  if (h["sliding_window"] == null) {
    return "its config.json has no sliding_window: llama.cpp's exaone-moe needs one and " +
      "rotates only the sliding layers' Q/K, transformers then every layer's";
  }
  if (slidingLayers(w, layers) === undefined) {
    return "its config.json has no layer_types or sliding_window_pattern giving every " +
      "layer's attention (the converter writes the sliding-window pattern from them)";
  }
  const type = String(w.fullRope["rope_type"] ?? "default");
  // The converter overwrites rope.scaling.type with none.
  if (type !== "default" && type !== "llama3") {
    return `its config.json has rope_type ${JSON.stringify(type)}; llama.cpp's converter ` +
      "writes exaone-moe's RoPE scaling as none (only Llama 3's, as rope_freqs, is kept)";
  }
  const dense = w.num("first_k_dense_replace") ?? 0;
  const kinds = h["mlp_layer_types"];
  if (
    Array.isArray(kinds) &&
    kinds.some((k, i) => k !== (i < dense ? "dense" : "sparse"))
  ) {
    return `its config.json has mlp_layer_types ${JSON.stringify(kinds)}; llama.cpp's ` +
      `exaone-moe runs the first first_k_dense_replace (${dense}) layers dense, the rest sparse`;
  }
  return scoringRefusal(w, "sigmoid", "K-EXAONE");
}

/** K-EXAONE-236B-A23B. */
export const EXAONE_MOE: Family = {
  name: "exaone-moe",
  apr: { rename: SHARED_EXPERT_APR_NAMES },
  source: "llama.cpp conversion/exaone.py ExaoneMoEModel; transformers ExaoneMoeForCausalLM",
  configFields: {
    written: [
      "first_k_dense_replace",
      "moe_intermediate_size",
      "num_shared_experts",
      "norm_topk_prob",
      "routed_scaling_factor",
      "num_nextn_predict_layers",
    ],
    checked: [
      "sliding_window",
      "layer_types",
      "sliding_window_pattern",
      "mlp_layer_types",
      "scoring_func",
    ],
    assumed: [activation("hidden_act", SILU)],
  },
  hfArchitectures: ["ExaoneMoeForCausalLM", "ExaoneMoEForCausalLM"],
  hfModelTypes: ["exaone_moe"],
  ggufArchitecture: "exaone-moe",
  ggufRopeType: "neox",
  blockNames: [
    ...LLAMA_BLOCK,
    ...DEEPSEEK_MOE_BLOCK,
    ["exp_probs_b", "mlp.e_score_correction"],
    ...NEXTN_BLOCK,
  ],
  experts: QWEN_MOE_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeExaoneMoeKv,
    unsupported,
    generate: llama3RopeFreqs,
    hfName: scoreBiasReadName,
    hfNameBack: (name, ggufNames) => mtpHfName(scoreBiasHfName(name), ggufNames),
    sourceName: (name, h) => mtpSourceNames(name, h, nextnLayers(h), "every"),
    extraBlocks: nextnLayers,
    mtpBlocksRequired: true,
  },
};
