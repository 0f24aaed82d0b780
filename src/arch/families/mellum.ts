// This module is browser compatible.

/**
 * Mellum 2 (`MellumForCausalLM`), after llama.cpp's `MellumModel`
 * (conversion/mellum.py), GGUF architecture `mellum`: Qwen3-MoE's block
 * (per-head Q/K norms, softmax-routed experts stacked into `ffn_*_exps`, no
 * shared expert) on every layer, with a sliding window on the layers
 * `layer_types` names. llama.cpp's `mellum` (src/models/mellum.cpp) rotates
 * the sliding layers with the global `rope.freq_base` and no scaling, always
 * normalises the top-k weights and loads no dense MLP, no output bias and no
 * tied output: a config otherwise is refused for GGUF.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK, NVFP4_UNSCALED } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";
import { QWEN_MOE_EXPERTS } from "./qwen2moe.ts";
import { olmo2Unsupported } from "./olmo2.ts";
import { slidingRopeUnsupported } from "./olmo3.ts";

/** Whether the converter writes the window (`use_sliding_window` true or absent, a window set). */
function slides(w: KvWriter): boolean {
  const use = w.hparams["use_sliding_window"];
  return (use === true || use == null) && w.hparams["sliding_window"] != null;
}

/** `MellumModel.set_gguf_parameters`. */
function writeMellumKv(w: KvWriter): void {
  writeTextModelKv(w);
  w.u32("expert_feed_forward_length", w.find("moe_intermediate_size"));
  if (slides(w)) {
    w.u32("attention.sliding_window", w.find("sliding_window"));
    const types = w.find("layer_types") as unknown[];
    w.setArray(
      "attention.sliding_window_pattern",
      "BOOL",
      types.map((t) => t === "sliding_attention"),
    );
  }
}

function unsupported(w: KvWriter): string | undefined {
  const why = (what: string) =>
    `its config.json says ${what}; llama.cpp's mellum would not run it as transformers does ` +
    `(APR and SafeTensors output keep it)`;
  const types = w.hparams["layer_types"];
  if (slides(w) && !Array.isArray(types)) {
    return "its config.json has a sliding_window but no layer_types (the converter writes " +
      "the sliding-window pattern from them)";
  }
  const kinds = w.hparams["mlp_layer_types"];
  if (Array.isArray(kinds) && kinds.some((k) => k !== "sparse")) {
    return why(`mlp_layer_types ${JSON.stringify(kinds)} (llama.cpp: experts on every layer)`);
  }
  const sliding = Array.isArray(types) && types.includes("sliding_attention");
  if (sliding && !slides(w)) return why("sliding layers in layer_types but no window");
  return olmo2Unsupported(w, why) ?? (sliding ? slidingRopeUnsupported(w, why) : undefined);
}

/** Mellum 2 (JetBrains' code models). */
export const MELLUM: Family = {
  name: "mellum",
  source: "llama.cpp conversion/mellum.py MellumModel; transformers MellumForCausalLM",
  configFields: {
    written: ["moe_intermediate_size", "sliding_window", "layer_types"],
    checked: ["mlp_layer_types", "attention_bias", "tie_word_embeddings"],
    assumed: [
      activation("hidden_act", SILU),
      { field: "norm_topk_prob", hfDefault: true, llamaCpp: true },
    ],
  },
  hfArchitectures: ["MellumForCausalLM"],
  hfModelTypes: ["mellum"],
  ggufArchitecture: "mellum",
  ggufRopeType: "neox",
  blockNames: [...LLAMA_BLOCK, ["ffn_gate_inp", "mlp.gate"]],
  experts: QWEN_MOE_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  // mellum's graph multiplies the attention weights' .scale and each stacked expert's (NVFP4),
  // not the router's.
  gguf: { writeKv: writeMellumKv, unsupported, nvfp4Scales: true, nvfp4Unscaled: NVFP4_UNSCALED },
  // The converter names JetBrains/Mellum2-12B-A2.5B-Base's tokenizer mellum2 by its hash.
  preTokenizer: "mellum2",
};
