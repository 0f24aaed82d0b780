// This module is browser compatible.

/**
 * StarCoder2 (`Starcoder2ForCausalLM`), after llama.cpp's `StarCoder2Model`
 * (conversion/starcoder.py): LayerNorms with biases, biases on every
 * projection, a two-layer GELU MLP (`c_fc`, `c_proj`), NEOX RoPE, the
 * common keys (its `norm_epsilon` is `attention.layer_norm_epsilon`).
 *
 * @module
 */

import type { Family } from "../family.ts";
import { writeTextModelKv } from "../text_model.ts";
import { activation, type ConfigFields, EVERY_LAYER_WINDOW, GELU } from "../config_fields.ts";

/** StarCoder2: GELU MLP; its window (4096 for 3B/7B/15B) llama.cpp's starcoder2 does not apply. */
const STARCODER2_FIELDS: ConfigFields = {
  // Bias tensors, which llama.cpp loads as the file has them.
  written: ["use_bias"],
  assumed: [activation("hidden_act", GELU, "gelu_pytorch_tanh")],
  caveats: [EVERY_LAYER_WINDOW],
};

/** StarCoder2. */
export const STARCODER2: Family = {
  name: "starcoder2",
  source: "llama.cpp conversion/starcoder.py StarCoder2Model; transformers Starcoder2ForCausalLM",
  configFields: STARCODER2_FIELDS,
  hfArchitectures: ["Starcoder2ForCausalLM"],
  hfModelTypes: ["starcoder2"],
  ggufArchitecture: "starcoder2",
  ggufRopeType: "neox",
  blockNames: [
    ["attn_q", "self_attn.q_proj"],
    ["attn_k", "self_attn.k_proj"],
    ["attn_v", "self_attn.v_proj"],
    ["attn_output", "self_attn.o_proj"],
    ["ffn_up", "mlp.c_fc"],
    ["ffn_down", "mlp.c_proj"],
    ["attn_norm", "input_layernorm"],
    ["ffn_norm", "post_attention_layernorm"],
  ],
  permutesQk: false,
  tiedByDefault: true,
  ggufRenamesOnly: true,
  gguf: { writeKv: writeTextModelKv },
};
