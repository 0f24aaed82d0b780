// This module is browser compatible.

/**
 * Qwen2-MoE (`Qwen2MoeForCausalLM`), after llama.cpp's `Qwen2MoeModel`
 * (conversion/qwen.py): experts stacked into `ffn_{down,gate,up}_exps`
 * (per-expert tensors, or transformers 5's stacked `gate_up_proj` split in
 * two), the router `ffn_gate_inp`, a shared expert (`*_shexp`) with its own
 * sigmoid gate, and the expert sizes after the common keys.
 *
 * @module
 */

import { type ExpertLayout, type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import {
  activation,
  type Assumption,
  type ConfigFields,
  qwenWindow,
  SILU,
} from "../config_fields.ts";

/** `Qwen2MoeModel.set_gguf_parameters`. */
export function writeQwenMoeKv(w: KvWriter): void {
  writeTextModelKv(w);
  w.u32("expert_feed_forward_length", w.find("moe_intermediate_size"));
  w.u32("expert_shared_feed_forward_length", w.find("shared_expert_intermediate_size"));
}

/** Qwen MoE experts: per expert `mlp.experts.E.{down,gate,up}_proj`, or stacked. */
export const QWEN_MOE_EXPERTS: ExpertLayout = {
  prefix: "mlp.experts",
  stacks: [
    { hf: "down_proj", gguf: "ffn_down_exps" },
    { hf: "gate_proj", gguf: "ffn_gate_exps" },
    { hf: "up_proj", gguf: "ffn_up_exps" },
  ],
  stacked: [
    ["down_proj", ["ffn_down_exps"]],
    ["gate_up_proj", ["ffn_gate_exps", "ffn_up_exps"]],
  ],
};

/** Every layer sparse, as llama.cpp's qwen2moe and qwen3moe build them. */
export const EVERY_LAYER_MOE: readonly Assumption[] = [
  { field: "decoder_sparse_step", hfDefault: 1, llamaCpp: 1 },
  { field: "mlp_only_layers", hfDefault: null, llamaCpp: [], alike: [null] },
];

/** Qwen2-MoE: top-k weights not normalised (src/models/qwen2moe.cpp passes `norm_w` false). */
const QWEN2MOE_FIELDS: ConfigFields = {
  written: ["moe_intermediate_size", "shared_expert_intermediate_size", "qkv_bias"],
  assumed: [
    activation("hidden_act", SILU),
    ...EVERY_LAYER_MOE,
    { field: "norm_topk_prob", hfDefault: false, llamaCpp: false },
  ],
  caveats: [
    qwenWindow((layer, maxWindowLayers) => (layer + 1) % 2 !== 0 && layer < maxWindowLayers),
  ],
};

/** The router and the shared expert as Qwen2-MoE names them (`mlp.gate`, `mlp.shared_expert.*`). */
export const QWEN_SHARED_EXPERT_BLOCK: readonly (readonly [string, string])[] = [
  ["ffn_gate_inp", "mlp.gate"],
  ["ffn_gate_shexp", "mlp.shared_expert.gate_proj"],
  ["ffn_up_shexp", "mlp.shared_expert.up_proj"],
  ["ffn_down_shexp", "mlp.shared_expert.down_proj"],
];

/** Qwen1.5-MoE, Qwen2-MoE. */
export const QWEN2MOE: Family = {
  name: "qwen2moe",
  source: "llama.cpp conversion/qwen.py Qwen2MoeModel; transformers Qwen2MoeForCausalLM",
  configFields: QWEN2MOE_FIELDS,
  hfArchitectures: ["Qwen2MoeForCausalLM"],
  hfModelTypes: ["qwen2_moe"],
  ggufArchitecture: "qwen2moe",
  ggufRopeType: "neox",
  blockNames: [...LLAMA_BLOCK, ...QWEN_SHARED_EXPERT_BLOCK, [
    "ffn_gate_inp_shexp",
    "mlp.shared_expert_gate",
  ]],
  experts: QWEN_MOE_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: { writeKv: writeQwenMoeKv },
};
