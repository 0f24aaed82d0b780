// This module is browser compatible.

/**
 * dots.llm1 (`Dots1ForCausalLM`), after llama.cpp's `Dots1Model`
 * (conversion/dots1.py, a `Qwen2MoeModel`), GGUF architecture `dots1`.
 *
 * Attention: Qwen3's per-head Q/K RMSNorms, `rotate_half` RoPE (llama.cpp's
 * NEOX, nothing permuted). Feed-forward: `first_k_dense_replace` dense
 * layers, then MoE layers with Qwen's per-expert tensors stacked into
 * `ffn_*_exps`, DeepSeek's shared experts (`*_shexp`) and router
 * (`mlp.gate`), whose selection bias `mlp.gate.e_score_correction_bias`
 * becomes `exp_probs_b.bias` (read back by name). transformers scores the
 * experts with a sigmoid and picks groups as DeepSeek-V3 does, which the
 * common keys and llama.cpp's `build_moe_ffn` compute alike.
 *
 * realizar has no dots model: APR output keeps the checkpoint's tensors,
 * its shared experts under the name realizar's loader asks for.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK, SHARED_EXPERT_APR_NAMES } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { scoringRefusal, writeTextModelKvScoredBy } from "../text_model.ts";
import { activation, ignoredSlidingWindow, SILU } from "../config_fields.ts";
import { GATE_SCORE_BIAS, scoreBiasHfName, scoreBiasReadName } from "../router_bias.ts";
import { DEEPSEEK_MOE_BLOCK, DEEPSEEK_MOE_FIELDS } from "./deepseek2.ts";
import { QWEN_MOE_EXPERTS } from "./qwen2moe.ts";

/** `Dots1Model.set_gguf_parameters` (after `Qwen2MoeModel`'s). */
function writeDots1Kv(w: KvWriter): void {
  const h = w.hparams;
  writeTextModelKvScoredBy(w, "sigmoid");
  w.u32("expert_feed_forward_length", w.find("moe_intermediate_size"));
  w.u32("leading_dense_block_count", w.need("first_k_dense_replace"));
  w.u32("expert_shared_count", w.need("n_shared_experts"));
  w.f32("expert_weights_scale", w.need("routed_scaling_factor"));
  // Left out, Dots1Config's default (false); the converter raises without it.
  w.set("expert_weights_norm", "BOOL", h["norm_topk_prob"] ?? false);
}

/** What of a config llama.cpp's `dots1` would run otherwise than transformers, or `undefined`. */
function unsupported(w: KvWriter): string | undefined {
  const heads = w.need("num_attention_heads");
  const kvHeads = w.num("num_key_value_heads") ?? heads;
  // src/models/dots1.cpp sizes K and V by n_head, not n_head_kv.
  if (kvHeads !== heads) {
    return `its config.json has num_key_value_heads ${kvHeads} and num_attention_heads ` +
      `${heads}; llama.cpp's dots1 loads keys and values for every attention head`;
  }
  // transformers adds a bias to o_proj too, for which llama.cpp's dots1 loads no tensor.
  if (w.hparams["attention_bias"] === true) {
    return "its config.json has attention_bias true; llama.cpp's dots1 loads no " +
      "attn_output.bias (transformers' o_proj has one then)";
  }
  return scoringRefusal(w, "sigmoid", "dots.llm1");
}

/** transformers' sliding-window layers (`layer_types`, by default those from `max_window_layers` on). */
const DOTS1_WINDOW = ignoredSlidingWindow(
  ["sliding_window", "max_window_layers", "layer_types"],
  (w) => {
    const size = w.num("sliding_window");
    if (size === undefined || size <= 0) return undefined;
    const n = w.num("num_hidden_layers") ?? 0;
    const types = w.hparams["layer_types"];
    const max = w.num("max_window_layers") ?? 62;
    const windowed = Array.from({ length: n }, (_, i) => i).filter((i) =>
      Array.isArray(types) ? types[i] === "sliding_attention" : i >= max
    );
    if (windowed.length === 0) return undefined;
    return {
      size,
      layers: windowed.length === n ? "every layer" : `layers ${windowed.join(", ")}`,
    };
  },
);

/** dots.llm1.base, dots.llm1.inst. */
export const DOTS1: Family = {
  name: "dots1",
  apr: { rename: SHARED_EXPERT_APR_NAMES },
  source: "llama.cpp conversion/dots1.py Dots1Model; transformers Dots1ForCausalLM",
  configFields: {
    written: DEEPSEEK_MOE_FIELDS,
    checked: ["attention_bias", "scoring_func"],
    assumed: [activation("hidden_act", SILU)],
    caveats: [DOTS1_WINDOW],
  },
  hfArchitectures: ["Dots1ForCausalLM"],
  hfModelTypes: ["dots1"],
  ggufArchitecture: "dots1",
  ggufRopeType: "neox",
  blockNames: [
    ...LLAMA_BLOCK,
    ...DEEPSEEK_MOE_BLOCK,
    GATE_SCORE_BIAS,
  ],
  experts: QWEN_MOE_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeDots1Kv,
    unsupported,
    hfName: scoreBiasReadName,
    hfNameBack: scoreBiasHfName,
  },
};
