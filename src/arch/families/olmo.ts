// This module is browser compatible.

/**
 * OLMo 1 (`OlmoForCausalLM`), after llama.cpp's `OlmoModel`
 * (conversion/olmo.py): llama's block with LayerNorms that have no weights
 * (so no norm tensors at all), Q/K permuted for NORM RoPE as `LlamaModel`
 * does, `clip_qkv` as `attention.clamp_kqv`, and a LayerNorm epsilon of
 * 1e-5 (transformers' `OlmoLayerNorm` hard-codes it too).
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";

/** `OlmoModel.set_gguf_parameters`. */
function writeOlmoKv(w: KvWriter): void {
  writeTextModelKv(w);
  w.f32("attention.layer_norm_epsilon", 1e-5);
  w.f32("attention.clamp_kqv", w.find("clip_qkv"));
}

/** OLMo 1 (OLMo-1B/7B and their -hf conversions). */
export const OLMO: Family = {
  name: "olmo",
  source: "llama.cpp conversion/olmo.py OlmoModel; transformers OlmoForCausalLM",
  configFields: {
    written: ["clip_qkv"],
    // llama.cpp's olmo loads no output-projection bias (src/models/olmo.cpp).
    assumed: [
      activation("hidden_act", SILU),
      { field: "attention_bias", hfDefault: false, llamaCpp: false },
    ],
  },
  hfArchitectures: ["OlmoForCausalLM"],
  hfModelTypes: ["olmo"],
  ggufArchitecture: "olmo",
  ggufRopeType: "norm",
  // No norm weights: OLMo's LayerNorms are not parametric.
  blockNames: LLAMA_BLOCK.filter(([gguf]) => !gguf.endsWith("norm")),
  permutesQk: true,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv: writeOlmoKv },
};
