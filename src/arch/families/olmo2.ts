// This module is browser compatible.

/**
 * OLMo 2 (`Olmo2ForCausalLM`), after llama.cpp's `Olmo2Model`
 * (conversion/olmo.py): norms after attention and feed-forward instead of
 * before, Q/K norms over the whole projection, NEOX RoPE; the sliding
 * window and its per-layer pattern when the config has one.
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";

function writeOlmo2Kv(w: KvWriter): void {
  writeTextModelKv(w);
  if (Object.hasOwn(w.hparams, "sliding_window")) {
    w.u32("attention.sliding_window", w.hparams["sliding_window"]);
    const types = w.hparams["layer_types"];
    const layers = w.need("num_hidden_layers");
    const pattern = Array.isArray(types)
      ? types.map((t) => t === "sliding_attention")
      : Array.from({ length: layers }, (_, i) => (i + 1) % 4 !== 0);
    w.setArray("attention.sliding_window_pattern", "BOOL", pattern);
  }
}

/** OLMo 2. */
export const OLMO2: Family = {
  name: "olmo2",
  source: "llama.cpp conversion/olmo.py Olmo2Model; transformers Olmo2ForCausalLM",
  hfArchitectures: ["Olmo2ForCausalLM"],
  hfModelTypes: ["olmo2"],
  ggufArchitecture: "olmo2",
  ggufRopeType: "neox",
  blockNames: [
    ["attn_q", "self_attn.q_proj"],
    ["attn_k", "self_attn.k_proj"],
    ["attn_v", "self_attn.v_proj"],
    ["attn_output", "self_attn.o_proj"],
    ["attn_q_norm", "self_attn.q_norm"],
    ["attn_k_norm", "self_attn.k_norm"],
    ["ffn_gate", "mlp.gate_proj"],
    ["ffn_up", "mlp.up_proj"],
    ["ffn_down", "mlp.down_proj"],
    ["post_attention_norm", "post_attention_layernorm"],
    ["post_ffw_norm", "post_feedforward_layernorm"],
  ],
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv: writeOlmo2Kv },
};
