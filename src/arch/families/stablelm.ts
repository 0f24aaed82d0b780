// This module is browser compatible.

/**
 * StableLM 2 / StableLM-3B-4E1T (`StableLmForCausalLM`), after llama.cpp's
 * `StableLMModel` (conversion/stablelm.py): llama's block with LayerNorms
 * (biases), optional q/k/v biases (`use_qkv_bias`), NEOX RoPE on
 * `partial_rotary_factor` of each head, attention and MLP in parallel when
 * `use_parallel_residual` says so; no RoPE base written.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { activation, SILU } from "../config_fields.ts";
import { unwrittenRopeRefusal } from "../fixed_rope.ts";

/** `StableLMModel.set_gguf_parameters`. */
function writeStableLmKv(w: KvWriter): void {
  const hidden = w.need("hidden_size");
  const heads = w.need("num_attention_heads");
  const share = w.rope["partial_rotary_factor"];
  if (typeof share !== "number") {
    throw new RangeError("config.json has no partial_rotary_factor (StableLM needs it)");
  }
  w.u32("context_length", w.need("max_position_embeddings"));
  w.u32("embedding_length", hidden);
  w.u32("block_count", w.need("num_hidden_layers"));
  w.u32("feed_forward_length", w.need("intermediate_size"));
  w.u32("rope.dimension_count", Math.trunc(share * Math.trunc(hidden / heads)));
  w.u32("attention.head_count", heads);
  w.u32("attention.head_count_kv", w.need("num_key_value_heads"));
  w.set("use_parallel_residual", "BOOL", w.hparams["use_parallel_residual"] ?? true);
  w.f32("attention.layer_norm_epsilon", w.need("layer_norm_eps", "norm_eps"));
  w.fileType();
}

/**
 * StableLM 2 12B's per-head Q/K LayerNorms (`q_layernorm.norms.N`), which
 * the converter stacks, aprkit does not stack yet; a RoPE base or scaling
 * the converter writes no key for.
 */
function stableLmUnsupported(w: KvWriter): string | undefined {
  if (w.hparams["qk_layernorm"] === true) {
    return "its config.json says qk_layernorm true (StableLM 2 12B's per-head Q/K norms, which " +
      "the converter stacks per layer); aprkit does not write them yet";
  }
  return unwrittenRopeRefusal(w);
}

/** StableLM. */
export const STABLELM: Family = {
  name: "stablelm",
  source: "llama.cpp conversion/stablelm.py StableLMModel; transformers StableLmForCausalLM",
  configFields: {
    written: ["use_qkv_bias", "use_parallel_residual"],
    checked: ["qk_layernorm"],
    assumed: [activation("hidden_act", SILU)],
  },
  hfArchitectures: ["StableLmForCausalLM"],
  hfModelTypes: ["stablelm"],
  ggufArchitecture: "stablelm",
  ggufRopeType: "neox",
  blockNames: LLAMA_BLOCK,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv: writeStableLmKv, unsupported: stableLmUnsupported },
};
