// This module is browser compatible.

/**
 * Gemma (`GemmaForCausalLM`), after llama.cpp's `GemmaModel`
 * (conversion/gemma.py): llama block names; transformers' RMSNorm
 * multiplies by `1 + w`, llama.cpp's by `w`, so every norm gets `+1` on the
 * way to GGUF; no `rope.freq_base` key.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { activation, type ConfigFields, GELU } from "../config_fields.ts";

/** Gemma's `(1 + w)` norms, shared by Gemma 1–3. */
export function gemmaNormShift(ggufName: string): number {
  return ggufName.endsWith("norm.weight") ? 1 : 0;
}

/** The keys Gemma 1 and 2 start with. */
export function writeGemmaKv(w: KvWriter): void {
  w.u32("context_length", w.need("max_position_embeddings"));
  w.u32("embedding_length", w.need("hidden_size"));
  w.u32("block_count", w.need("n_layers", "num_hidden_layers", "n_layer", "num_layers"));
  w.u32("feed_forward_length", w.need("intermediate_size"));
  w.u32("attention.head_count", w.need("num_attention_heads"));
  w.u32("attention.head_count_kv", w.num("num_key_value_heads") ?? w.need("num_attention_heads"));
  w.f32("attention.layer_norm_rms_epsilon", w.need("rms_norm_eps"));
  w.u32("attention.key_length", w.need("head_dim"));
  w.u32("attention.value_length", w.need("head_dim"));
  w.fileType();
}

/** Gemma: GELU (tanh) MLP, causal attention. */
const GEMMA_FIELDS: ConfigFields = {
  assumed: [
    activation("hidden_act", GELU, "gelu_pytorch_tanh"),
    { field: "use_bidirectional_attention", hfDefault: null, llamaCpp: false, alike: [null] },
  ],
};

/** Gemma 1. */
export const GEMMA: Family = {
  name: "gemma",
  source: "llama.cpp conversion/gemma.py GemmaModel; transformers GemmaForCausalLM",
  configFields: GEMMA_FIELDS,
  hfArchitectures: ["GemmaForCausalLM"],
  hfModelTypes: ["gemma"],
  ggufArchitecture: "gemma",
  ggufRopeType: "neox",
  blockNames: LLAMA_BLOCK,
  permutesQk: false,
  tiedByDefault: true,
  ggufRenamesOnly: false,
  gguf: { writeKv: writeGemmaKv, shift: gemmaNormShift },
  // GemmaModel.set_vocab: <end_of_turn> is 107 in every Gemma vocabulary; the
  // prefix/suffix/middle ids it also sets have no gguf-py key and are dropped.
  sentencePiece: { addSpacePrefix: false, specialIds: { eot: 107 } },
};
