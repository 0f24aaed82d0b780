// This module is browser compatible.

/**
 * Cohere's MoE (`Cohere2MoeForCausalLM`), after llama.cpp's
 * `Cohere2MoeModel` (conversion/command_r.py), GGUF architecture
 * `cohere2moe`: Cohere's parallel block (one norm feeding attention and the
 * feed-forward, `cohere.ts`), the sliding-window pattern written per layer
 * (`layer_types`), RoPE on the sliding layers and on the leading dense ones;
 * the dense layers `prefix_dense_intermediate_size` wide, then MoE layers
 * with experts stacked into `ffn_*_exps`, router `mlp.gate`, and shared
 * experts averaged with the routed ones (`*_shexp`). Multi-token-prediction
 * layers past `num_hidden_layers` are kept as `blk.N.nextn.*`.
 *
 * realizar has no Cohere MoE model: APR output keeps the checkpoint's
 * tensors, its shared experts under the name realizar's loader asks for.
 *
 * @module
 */

import { type Family, SHARED_EXPERT_APR_NAMES } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { expertScoringFunction, writeTextModelKv } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";
import { COHERE_BLOCK, cohereUnsupported } from "./cohere.ts";
import { DEEPSEEK_MOE_BLOCK } from "./deepseek2.ts";
import { NEXTN_BLOCK, nextnLayers } from "./glm4moe.ts";
import { QWEN_MOE_EXPERTS } from "./qwen2moe.ts";

/** The leading dense layers as the converter counts them (`mlp_layer_types`, else `first_k_dense_replace`). */
function leadingDense(w: KvWriter): number {
  const kinds = w.find("mlp_layer_types");
  if (!Array.isArray(kinds)) return w.num("first_k_dense_replace") ?? 0;
  const first = kinds.findIndex((k) => k !== "dense");
  return first === -1 ? kinds.length : first;
}

/** `Cohere2MoeModel.set_gguf_parameters`. */
function writeCohere2MoeKv(w: KvWriter): void {
  const h = w.hparams;
  const ff = w.need("intermediate_size");
  writeTextModelKv(w);
  w.f32("logit_scale", w.need("logit_scale"));
  w.u32("attention.sliding_window", w.need("sliding_window"));
  const types = w.find("layer_types");
  if (Array.isArray(types)) {
    w.setArray(
      "attention.sliding_window_pattern",
      "BOOL",
      types.map((t) => t === "sliding_attention"),
    );
  }
  w.u32("vocab_size", w.need("vocab_size"));
  w.u32("expert_feed_forward_length", ff);
  w.u32("leading_dense_block_count", leadingDense(w));
  w.set("expert_weights_norm", "BOOL", h["norm_topk_prob"] ?? false);
  const shared = w.num("num_shared_experts") ?? 0;
  if (shared > 0) {
    w.u32("expert_shared_count", shared);
    w.u32("expert_shared_feed_forward_length", ff * shared);
  }
  const nextn = nextnLayers(h);
  if (nextn > 0) w.u32("nextn_predict_layers", nextn);
  w.u32("rope.dimension_count", w.need("head_dim"));
  w.set("rope.scaling.type", "STRING", "none");
}

/** What of a config llama.cpp's `cohere2moe` would run otherwise than transformers, or `undefined`. */
function unsupported(w: KvWriter): string | undefined {
  const h = w.hparams;
  const other = cohereUnsupported(w, "cohere2moe");
  if (other !== undefined) return `its config.json has ${other}`;
  if (h["sliding_window"] == null) {
    return "its config.json has no sliding_window; llama.cpp's cohere2moe needs one (the " +
      "converter cannot write the file without it)";
  }
  if (!Array.isArray(h["layer_types"])) {
    return "its config.json has no layer_types (the converter writes the sliding-window " +
      "pattern from them)";
  }
  const dense = leadingDense(w);
  const kinds = h["mlp_layer_types"];
  if (Array.isArray(kinds) && kinds.some((k, i) => k !== (i < dense ? "dense" : "sparse"))) {
    return `its config.json has mlp_layer_types ${JSON.stringify(kinds)}; llama.cpp's ` +
      `cohere2moe runs the first ${dense} layers dense, the rest sparse`;
  }
  // llama.cpp rotates every leading dense layer; transformers only with this pattern 1.
  const prefix = h["prefix_dense_sliding_window_pattern"] ?? 1;
  if (dense > 0 && prefix !== 1) {
    return `its config.json has prefix_dense_sliding_window_pattern ${JSON.stringify(prefix)}; ` +
      "llama.cpp's cohere2moe rotates every leading dense layer's Q/K, transformers only with 1";
  }
  const strategy = h["shared_expert_combination_strategy"] ?? "average";
  if ((w.num("num_shared_experts") ?? 0) > 0 && strategy !== "average") {
    return `its config.json has shared_expert_combination_strategy ${JSON.stringify(strategy)}; ` +
      "llama.cpp's cohere2moe averages the shared and routed experts";
  }
  // transformers softmaxes the top-k logits (their weights sum to 1); llama.cpp
  // softmaxes all of them and renormalises the top k only with expert_weights_norm.
  const scoring = expertScoringFunction(w) ?? "softmax";
  if (scoring === "softmax" && h["norm_topk_prob"] === false) {
    return "its config.json has norm_topk_prob false with expert_selection_fn softmax; " +
      "transformers' top-k softmax weights sum to 1, and llama.cpp normalises them only " +
      "with norm_topk_prob true";
  }
  if (scoring !== "softmax" && scoring !== "sigmoid") {
    return `its config.json has expert_selection_fn ${JSON.stringify(scoring)}; transformers ` +
      "knows softmax and sigmoid";
  }
  return undefined;
}

/** North (Cohere's MoE). */
export const COHERE2MOE: Family = {
  name: "cohere2moe",
  apr: { rename: SHARED_EXPERT_APR_NAMES },
  source: "llama.cpp conversion/command_r.py Cohere2MoeModel; transformers Cohere2MoeForCausalLM",
  configFields: {
    written: [
      "logit_scale",
      "sliding_window",
      "layer_types",
      "num_shared_experts",
      "norm_topk_prob",
      "expert_selection_fn",
      "prefix_dense_intermediate_size",
      "num_nextn_predict_layers",
    ],
    checked: [
      "attention_bias",
      "mlp_layer_types",
      "prefix_dense_sliding_window_pattern",
      "shared_expert_combination_strategy",
    ],
    assumed: [activation("hidden_act", SILU)],
    irrelevant: {
      // transformers derives layer_types from it, and config.json holds them.
      sliding_window_pattern: "the default of layer_types, which config.json holds and is written",
    },
  },
  hfArchitectures: ["Cohere2MoeForCausalLM"],
  hfModelTypes: ["cohere2_moe"],
  ggufArchitecture: "cohere2moe",
  ggufRopeType: "norm",
  blockNames: [...COHERE_BLOCK, ...DEEPSEEK_MOE_BLOCK, ...NEXTN_BLOCK],
  experts: QWEN_MOE_EXPERTS,
  permutesQk: false,
  hfRopeInterleaved: true,
  tiedByDefault: true,
  ggufRenamesOnly: false,
  // The dense layers' width and the experts' (the converter's feed_forward_length and
  // expert_feed_forward_length).
  hfWidthKeys: {
    intermediate_size: "prefix_dense_intermediate_size",
    moe_intermediate_size: "intermediate_size",
  },
  gguf: { writeKv: writeCohere2MoeKv, unsupported, llamaKeys: true, extraBlocks: nextnLayers },
  // The converter names CohereLabs/North-Mini-Code-1.0's tokenizer cohere2moe by its hash.
  preTokenizer: "cohere2moe",
};
