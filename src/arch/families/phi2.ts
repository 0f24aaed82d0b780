// This module is browser compatible.

/**
 * Phi-1, Phi-1.5, Phi-2 (`PhiForCausalLM`), after llama.cpp's `Phi2Model`
 * (conversion/phi.py): one LayerNorm (with bias) per block feeding attention
 * and a GELU MLP in parallel, q/k/v and `dense` with biases, NEOX RoPE on
 * `partial_rotary_factor` of each head, `model.final_layernorm`, an untied
 * `lm_head` with a bias. The converter writes the MLP as 4 × hidden wide and
 * as many KV heads as heads, and no RoPE base.
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { activation, GELU } from "../config_fields.ts";
import { unwrittenRopeRefusal } from "../fixed_rope.ts";

/** `Phi2Model.set_gguf_parameters`. */
function writePhi2Kv(w: KvWriter): void {
  const hidden = w.need("hidden_size", "n_embd");
  const heads = w.need("num_attention_heads", "n_head");
  const share = w.rope["partial_rotary_factor"];
  if (typeof share !== "number") {
    throw new RangeError("config.json has no partial_rotary_factor (Phi-2 needs it)");
  }
  w.u32("context_length", w.need("n_positions", "max_position_embeddings"));
  w.u32("embedding_length", hidden);
  w.cite("hidden_size", "n_embd");
  w.u32("feed_forward_length", 4 * hidden);
  w.u32("block_count", w.need("num_hidden_layers", "n_layer"));
  w.u32("attention.head_count", heads);
  w.u32("attention.head_count_kv", heads);
  w.f32("attention.layer_norm_epsilon", w.need("layer_norm_epsilon", "layer_norm_eps"));
  w.cite("partial_rotary_factor", "hidden_size", "n_embd", "num_attention_heads", "n_head");
  w.u32("rope.dimension_count", Math.trunc(Math.trunc(share * hidden) / heads));
  w.fileType();
  w.set("tokenizer.ggml.add_bos_token", "BOOL", false);
}

/**
 * What llama.cpp's phi2 cannot load or run as written: another MLP width or
 * KV head count than the converter writes, Q/K LayerNorms, tied embeddings
 * (it requires `output.weight`), a RoPE base or scaling.
 */
function phi2Unsupported(w: KvWriter): string | undefined {
  const hidden = w.need("hidden_size", "n_embd");
  const heads = w.need("num_attention_heads", "n_head");
  const why = (what: string, assumed: string) =>
    `its config.json has ${what}; llama.cpp's phi2 reads no key for it and computes as with ` +
    assumed;
  const ff = w.need("intermediate_size");
  if (ff !== 4 * hidden) return why(`intermediate_size ${ff}`, `4 × hidden_size = ${4 * hidden}`);
  const kv = w.num("num_key_value_heads") ?? heads;
  if (kv !== heads) return why(`num_key_value_heads ${kv}`, `num_attention_heads = ${heads}`);
  if (w.hparams["qk_layernorm"] === true) return why("qk_layernorm true", "no Q/K norms");
  if (w.hparams["tie_word_embeddings"] === true) {
    return "its config.json says tie_word_embeddings true; llama.cpp's phi2 requires an " +
      "output.weight of its own";
  }
  return unwrittenRopeRefusal(w);
}

/** Phi-1, Phi-1.5, Phi-2. */
export const PHI2: Family = {
  name: "phi2",
  source: "llama.cpp conversion/phi.py Phi2Model; transformers PhiForCausalLM",
  configFields: {
    checked: ["qk_layernorm"],
    assumed: [activation("hidden_act", GELU, "gelu_new")],
  },
  hfArchitectures: ["PhiForCausalLM"],
  hfModelTypes: ["phi"],
  ggufArchitecture: "phi2",
  ggufRopeType: "neox",
  blockNames: [
    ["attn_norm", "input_layernorm"],
    ["attn_q", "self_attn.q_proj"],
    ["attn_k", "self_attn.k_proj"],
    ["attn_v", "self_attn.v_proj"],
    ["attn_output", "self_attn.dense"],
    ["ffn_up", "mlp.fc1"],
    ["ffn_down", "mlp.fc2"],
  ],
  globalNames: [["output_norm", "model.final_layernorm"]],
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv: writePhi2Kv, unsupported: phi2Unsupported },
};
