// This module is browser compatible.

/**
 * Qwen3-MoE (`Qwen3MoeForCausalLM`), after llama.cpp's `Qwen3MoeModel`
 * (conversion/qwen.py, a `Qwen2MoeModel`): Qwen3's Q/K norms, experts
 * stacked as Qwen2-MoE's, no shared expert.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK, NVFP4_UNSCALED } from "../family.ts";
import { EVERY_LAYER_MOE, QWEN_MOE_EXPERTS, writeQwenMoeKv } from "./qwen2moe.ts";
import { activation, type ConfigFields, ignoredSlidingWindow, SILU } from "../config_fields.ts";

/**
 * Qwen3-MoE: llama.cpp's qwen3moe (and qwen3vlmoe) always normalise the
 * top-k weights (`norm_w` true), transformers only with `norm_topk_prob`
 * (false by default; true in every published config).
 */
export const QWEN3MOE_FIELDS: ConfigFields = {
  written: ["moe_intermediate_size"],
  assumed: [
    activation("hidden_act", SILU),
    ...EVERY_LAYER_MOE,
    { field: "norm_topk_prob", hfDefault: false, llamaCpp: true },
  ],
  caveats: [
    ignoredSlidingWindow(["use_sliding_window", "sliding_window"], (w) => {
      const size = w.num("sliding_window");
      return w.hparams["use_sliding_window"] === true && size !== undefined && size > 0
        ? { size, layers: "every layer" }
        : undefined;
    }),
  ],
};

/** Qwen3-30B-A3B, Qwen3-235B-A22B. */
export const QWEN3MOE: Family = {
  name: "qwen3moe",
  source: "llama.cpp conversion/qwen.py Qwen3MoeModel; transformers Qwen3MoeForCausalLM",
  configFields: QWEN3MOE_FIELDS,
  hfArchitectures: ["Qwen3MoeForCausalLM"],
  hfModelTypes: ["qwen3_moe"],
  ggufArchitecture: "qwen3moe",
  ggufRopeType: "neox",
  blockNames: [...LLAMA_BLOCK, ["ffn_gate_inp", "mlp.gate"]],
  experts: QWEN_MOE_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  // qwen3moe's graph multiplies the attention weights' .scale and, in
  // build_moe_ffn, each stacked expert's (ffn_*_exps.scale), not the router's.
  gguf: { writeKv: writeQwenMoeKv, nvfp4Scales: true, nvfp4Unscaled: NVFP4_UNSCALED },
};
