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

/** StarCoder2. */
export const STARCODER2: Family = {
  name: "starcoder2",
  aprUnread: ["mlp.c_fc", "mlp.c_proj"],
  source: "llama.cpp conversion/starcoder.py StarCoder2Model; transformers Starcoder2ForCausalLM",
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
