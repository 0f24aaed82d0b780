// This module is browser compatible.

/**
 * GLM-4.5, GLM-4.5-Air, GLM-4.6 (`Glm4MoeForCausalLM`), after llama.cpp's
 * `Glm4MoeModel` (conversion/glm.py), GGUF architecture `glm4moe`.
 *
 * Attention: Q/K/V biases (`attention_bias`), optional Q/K norms
 * (`use_qk_norm`), a head size of its own (`head_dim`, wider than
 * hidden/heads in GLM-4.5), and RoPE on the first `partial_rotary_factor`
 * (0.5) of each head with `rotate_half`, as llama.cpp's NEOX does, so
 * nothing is permuted. The norm after attention is `post_attention_norm`
 * (llama.cpp's glm4moe has no `ffn_norm`).
 *
 * Feed-forward: `first_k_dense_replace` dense layers, then MoE layers with
 * routed experts (stacked into `ffn_*_exps`), shared experts (`*_shexp`),
 * and a sigmoid router whose `e_score_correction_bias` becomes
 * `exp_probs_b.bias` (transformers always scores with a sigmoid; the
 * converter always writes `expert_gating_func` sigmoid).
 *
 * Multi-token prediction: the converter keeps the `num_nextn_predict_layers`
 * layers past `num_hidden_layers` (`blk.N.nextn.*` and the layer's own
 * attention and experts) and counts them into `block_count`; llama.cpp loads
 * a file without them too (transformers does not build them, so a model it
 * saved has none).
 *
 * GLM-4.5V's text model (`Glm4vMoeForConditionalGeneration`, the converter's
 * same class) is this model with multimodal RoPE (`rope.dimension_sections`
 * from `mrope_section`), rotated by halves in both, so nothing is permuted.
 *
 * realizar has no GLM model: APR output keeps the checkpoint's tensors under
 * their Hugging Face names.
 *
 * @module
 */

import type { TensorInfo } from "../../tensor.ts";
import { type Family, LLAMA_BLOCK, type MadeTensor, SHARED_EXPERT_APR_NAMES } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { expertScoringFunction, GATING_FUNC, writeTextModelKv } from "../text_model.ts";
import {
  DEEPSEEK_EXPERTS,
  DEEPSEEK_MOE_BLOCK,
  DEEPSEEK_MOE_FIELDS,
  scoreCorrectionBias,
} from "./deepseek2.ts";
import { glmRopeDims, glmUnsupported } from "./glm4.ts";
import { activation, SILU } from "../config_fields.ts";
import { NEXTN_BLOCK, nextnLayers } from "../nextn.ts";
import { GATE_SCORE_BIAS, scoreBiasHfName } from "../router_bias.ts";

// Kept in a module of no family: GLM-4.5's imports lead back to Qwen3-Next's,
// which needs them while this module is still loading.
export { NEXTN_BLOCK, nextnLayers } from "../nextn.ts";

/**
 * `Glm4MoeModel.set_gguf_parameters`, the rotary share of a head defaulting
 * to `rotaryByDefault` where the config names none.
 */
export function writeGlm4MoeKv(w: KvWriter, rotaryByDefault = 0.5): void {
  const h = w.hparams;
  // block_count is the class's: the trunk and the MTP layers.
  w.writeOver(
    { ...h, num_hidden_layers: w.need("num_hidden_layers") + nextnLayers(h) },
    writeTextModelKv,
  );
  w.u32("rope.dimension_count", glmRopeDims(w, rotaryByDefault));
  w.u32("expert_count", w.find("n_routed_experts"));
  w.u32("expert_feed_forward_length", w.find("moe_intermediate_size"));
  w.u32("expert_shared_count", w.find("n_shared_experts"));
  w.u32("leading_dense_block_count", w.find("first_k_dense_replace"));
  w.u32("expert_gating_func", GATING_FUNC["sigmoid"]);
  w.f32("expert_weights_scale", w.find("routed_scaling_factor"));
  // Left out, Glm4MoeConfig's default (true), which llama.cpp reads no key for.
  w.set("expert_weights_norm", "BOOL", h["norm_topk_prob"] ?? true);
  w.u32("nextn_predict_layers", w.find("num_nextn_predict_layers"));
}

/**
 * What of a config llama.cpp's `glm4moe` would run otherwise than
 * transformers, or `undefined`.
 */
export function glm4MoeUnsupported(w: KvWriter, rotaryByDefault = 0.5): string | undefined {
  const glm = glmUnsupported(w, rotaryByDefault);
  if (glm !== undefined) return glm;
  const scoring = expertScoringFunction(w);
  if (scoring != null && scoring !== "sigmoid") {
    return `its config.json has scoring_func ${JSON.stringify(scoring)}; transformers and ` +
      `llama.cpp score GLM-4.5's experts with a sigmoid`;
  }
  return undefined;
}

/** `e_score_correction_bias` renamed to `exp_probs_b.bias`, as DeepSeek-V3's. */
function glm4moeMade(tensors: readonly TensorInfo[]): MadeTensor[] {
  return tensors.map(scoreCorrectionBias).filter((m) => m !== undefined);
}

/**
 * `TextModel._set_vocab_glm` (its comment: `<|endoftext|>` as EOT makes
 * generation endless, so `<|user|>` is the EOT).
 */
export const GLM_SPECIAL_TOKENS: readonly (readonly [string, string])[] = [
  ["bos", "[gMASK]"],
  ["eot", "<|user|>"],
  ["unk", "<|endoftext|>"],
  ["eom", "<|observation|>"],
];

/** GLM-4.5, GLM-4.5-Air, GLM-4.6. */
export const GLM4MOE: Family = {
  name: "glm4moe",
  apr: { rename: SHARED_EXPERT_APR_NAMES },
  source: "llama.cpp conversion/glm.py Glm4MoeModel; transformers Glm4MoeForCausalLM",
  configFields: {
    written: [
      ...DEEPSEEK_MOE_FIELDS,
      "num_nextn_predict_layers",
      "num_mtp_layers",
      // attn_q_norm/attn_k_norm tensors, which llama.cpp loads as the file has them.
      "use_qk_norm",
    ],
    assumed: [activation("hidden_act", SILU)],
  },
  hfArchitectures: ["Glm4MoeForCausalLM"],
  // GLM-4.5V's text model and its composite (Glm4vMoeForConditionalGeneration).
  hfModelTypes: ["glm4_moe", "glm4v_moe_text", "glm4v_moe"],
  ggufArchitecture: "glm4moe",
  ggufRopeType: "neox",
  blockNames: [
    ...LLAMA_BLOCK.filter(([g]) => g !== "ffn_norm"),
    ["post_attention_norm", "post_attention_layernorm"],
    ...DEEPSEEK_MOE_BLOCK,
    // Written by glm4moeMade; named back by hfNameBack.
    GATE_SCORE_BIAS,
    ...NEXTN_BLOCK,
  ],
  experts: DEEPSEEK_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: (w) => writeGlm4MoeKv(w),
    unsupported: (w) => glm4MoeUnsupported(w),
    made: glm4moeMade,
    hfNameBack: scoreBiasHfName,
    extraBlocks: nextnLayers,
  },
  preTokenizer: "glm4",
  specialTokensByName: GLM_SPECIAL_TOKENS,
};
