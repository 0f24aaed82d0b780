// This module is browser compatible.

/**
 * Llama (`LlamaForCausalLM`), after llama.cpp's `LlamaModel`
 * (conversion/llama.py): llama block names, Q/K rows permuted for NORM
 * RoPE, `{arch}.vocab_size` and `rope.dimension_count` after the common
 * keys, and `rope_freqs.weight` for Llama 3's RoPE scaling.
 *
 * @module
 */

import {
  type Family,
  type GgufSupport,
  LLAMA_BLOCK,
  NVFP4_UNSCALED,
  type SentencePieceFacts,
} from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { llama3RopeFreqs } from "../rope_factors.ts";
import { writeTextModelKv } from "../text_model.ts";
import { activation, type ConfigFields, SILU } from "../config_fields.ts";

/** `LlamaModel.set_gguf_parameters`: the common keys, then vocabulary size and rotary width. */
export function writeLlamaKv(w: KvWriter): void {
  writeTextModelKv(w);
  w.u32("vocab_size", w.need("vocab_size"));
  const headDim = w.num("head_dim") ??
    Math.trunc(w.need("hidden_size") / w.need("num_attention_heads"));
  w.u32("rope.dimension_count", headDim);
}

/** GGUF support shared by the families llama.cpp converts with `LlamaModel`. */
export const LLAMA_GGUF: GgufSupport = {
  writeKv: writeLlamaKv,
  llamaKeys: true,
  generate: llama3RopeFreqs,
  // src/models/llama.cpp and mistral3.cpp pass every `*_s` scale, but for
  // build_moe_ffn's router (Mixtral's) and the embeddings.
  nvfp4Scales: true,
  nvfp4Unscaled: NVFP4_UNSCALED,
};

/** `LlamaModel.set_vocab`'s SentencePiece step, shared likewise. */
export const LLAMA_SENTENCEPIECE: SentencePieceFacts = {
  addSpacePrefixFromTokenizerConfig: true,
  // CodeLlama (vocab_size 32016): the converter sets prefix 32007, suffix 32008,
  // middle 32009 and eot 32010, but gguf-py's writer has a method for eot only
  // (SpecialVocab.add_to_gguf skips the others), so eot is all it writes.
  specialIdsByVocabSize: { 32016: { eot: 32010 } },
};

/** `LlamaConfig`'s fields beyond the common ones: llama.cpp's graph is SwiGLU. */
export const LLAMA_FIELDS: ConfigFields = { assumed: [activation("hidden_act", SILU)] };

/** Llama 1–3.x. */
export const LLAMA: Family = {
  name: "llama",
  source: "llama.cpp conversion/llama.py LlamaModel; transformers LlamaForCausalLM",
  configFields: LLAMA_FIELDS,
  hfArchitectures: ["LlamaForCausalLM", "LLaMAForCausalLM"],
  // SmolVLM and Idefics3 are composites around a Llama text config (`multimodal.ts`).
  hfModelTypes: ["llama", "smolvlm", "idefics3"],
  ggufArchitecture: "llama",
  ggufRopeType: "norm",
  blockNames: LLAMA_BLOCK,
  permutesQk: true,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: LLAMA_GGUF,
  sentencePiece: LLAMA_SENTENCEPIECE,
};
