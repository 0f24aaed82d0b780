// This module is browser compatible.

/**
 * OLMoE (`OlmoeForCausalLM`), after llama.cpp's `OlmoeModel`
 * (conversion/olmo.py): llama's block with RMSNorms before attention and
 * the experts, Q/K RMSNorms over the whole projection (as OLMo 2), experts
 * stacked as Qwen2-MoE's with a router (`mlp.gate`), top-k weights not
 * renormalised, NEOX RoPE; the RMSNorm epsilon written as 1e-5 whatever the
 * config says.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";
import { QWEN_MOE_EXPERTS } from "./qwen2moe.ts";

/** The RMSNorm epsilon the converter writes for every OLMoE. */
const OLMOE_RMS_EPS = 1e-5;

/** `OlmoeModel.set_gguf_parameters`. */
function writeOlmoeKv(w: KvWriter): void {
  writeTextModelKv(w);
  w.f32("attention.layer_norm_rms_epsilon", OLMOE_RMS_EPS);
}

/** llama.cpp's olmoe sizes `attn_k_norm` as the hidden size: no GQA. */
function olmoeUnsupported(w: KvWriter): string | undefined {
  const heads = w.need("num_attention_heads");
  const kv = w.num("num_key_value_heads") ?? heads;
  if (kv === heads) return undefined;
  return `its config.json has num_key_value_heads ${kv} (not ${heads}); llama.cpp's olmoe ` +
    `loads a K norm as wide as the hidden size, so it loads no grouped-query OLMoE`;
}

/** OLMoE-1B-7B. */
export const OLMOE: Family = {
  name: "olmoe",
  source: "llama.cpp conversion/olmo.py OlmoeModel; transformers OlmoeForCausalLM",
  configFields: {
    checked: ["num_key_value_heads"],
    assumed: [
      activation("hidden_act", SILU),
      { field: "rms_norm_eps", hfDefault: OLMOE_RMS_EPS, llamaCpp: OLMOE_RMS_EPS },
      // src/models/olmoe.cpp passes norm_w false; no clamp or bias key is read.
      { field: "norm_topk_prob", hfDefault: false, llamaCpp: false },
      { field: "clip_qkv", hfDefault: null, llamaCpp: null },
      { field: "attention_bias", hfDefault: false, llamaCpp: false },
    ],
  },
  hfArchitectures: ["OlmoeForCausalLM"],
  hfModelTypes: ["olmoe"],
  ggufArchitecture: "olmoe",
  ggufRopeType: "neox",
  blockNames: [...LLAMA_BLOCK, ["ffn_gate_inp", "mlp.gate"]],
  experts: QWEN_MOE_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: { writeKv: writeOlmoeKv, unsupported: olmoeUnsupported },
};
