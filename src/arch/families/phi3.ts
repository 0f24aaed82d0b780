// This module is browser compatible.

/**
 * Phi-3 / Phi-3.5 / Phi-4 (`Phi3ForCausalLM`), after llama.cpp's
 * `Phi3MiniModel` (conversion/phi.py): the fused `qkv_proj` stays fused
 * (`attn_qkv`) and the fused `gate_up_proj` becomes `ffn_up` (llama.cpp
 * splits it at load time; for APR it is split, as realizar wants); its own
 * key order; LongRoPE factors
 * (`rope_factors_long/short.weight`) for Phi-3.5's long-context models.
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { phi3RopeFactors } from "../rope_factors.ts";
import { activation, type ConfigFields, EVERY_LAYER_WINDOW, SILU } from "../config_fields.ts";

function writePhi3Kv(w: KvWriter): void {
  const nEmbd = w.need("hidden_size", "n_embd");
  const nHead = w.need("num_attention_heads", "n_head");
  const rot = typeof w.rope["partial_rotary_factor"] === "number"
    ? w.rope["partial_rotary_factor"] as number
    : 1;
  w.u32("context_length", w.need("n_positions", "max_position_embeddings"));
  const orig = w.rope["original_max_position_embeddings"];
  if (typeof orig !== "number") {
    throw new RangeError("config.json has no original_max_position_embeddings (Phi-3 needs it)");
  }
  w.u32("rope.scaling.original_context_length", orig);
  w.u32("embedding_length", nEmbd);
  w.u32("feed_forward_length", w.need("intermediate_size"));
  w.u32("block_count", w.need("n_layers", "num_hidden_layers", "n_layer", "num_layers"));
  w.u32("attention.head_count", nHead);
  w.u32("attention.head_count_kv", w.need("num_key_value_heads", "n_head_kv"));
  w.f32("attention.layer_norm_rms_epsilon", w.need("rms_norm_eps"));
  w.cite("partial_rotary_factor", "hidden_size", "n_embd", "num_attention_heads", "n_head");
  w.u32("rope.dimension_count", Math.trunc(Math.trunc(rot * nEmbd) / nHead));
  w.f32("rope.freq_base", w.fullRope["rope_theta"]);
  w.fileType();
  // Zero tells Phi-4 (no sliding window) from the other Phi-3 models.
  w.u32("attention.sliding_window", w.num("sliding_window") ?? 0);
}

/**
 * Phi-3: `sliding_window` is written, but llama.cpp's phi3 disables sliding
 * windows on load (src/models/phi3.cpp: "Phi SWA is currently disabled").
 */
const PHI3_FIELDS: ConfigFields = {
  written: ["original_max_position_embeddings", "partial_rotary_factor"],
  assumed: [activation("hidden_act", SILU)],
  caveats: [EVERY_LAYER_WINDOW],
};

/** Phi-3, Phi-3.5 and Phi-4. */
export const PHI3: Family = {
  name: "phi3",
  source: "llama.cpp conversion/phi.py Phi3MiniModel; transformers Phi3ForCausalLM",
  configFields: PHI3_FIELDS,
  hfArchitectures: ["Phi3ForCausalLM"],
  hfModelTypes: ["phi3"],
  ggufArchitecture: "phi3",
  ggufRopeType: "neox",
  blockNames: [
    ["attn_qkv", "self_attn.qkv_proj"],
    ["attn_output", "self_attn.o_proj"],
    ["ffn_up", "mlp.gate_up_proj"],
    ["ffn_down", "mlp.down_proj"],
    ["attn_norm", "input_layernorm"],
    ["ffn_norm", "post_attention_layernorm"],
  ],
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  // realizar knows the fused qkv_proj, not gate_up_proj (whose first half is the gate).
  apr: { split: [["mlp.gate_up_proj", ["mlp.gate_proj", "mlp.up_proj"]]] },
  gguf: { writeKv: writePhi3Kv, generate: phi3RopeFactors },
  sentencePiece: { addedTokensVerbatim: true },
};
