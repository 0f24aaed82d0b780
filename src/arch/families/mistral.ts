// This module is browser compatible.

/**
 * Mistral (`MistralForCausalLM`): llama.cpp's converter registers it with
 * `LlamaModel` (conversion/llama.py), so its GGUF is a `llama` one.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import { LLAMA_FIELDS, LLAMA_GGUF, LLAMA_SENTENCEPIECE } from "./llama.ts";
import { type ConfigFields, EVERY_LAYER_WINDOW } from "../config_fields.ts";

/**
 * Mistral's window (Mistral-7B-v0.1's 4096; v0.2 on set none), which
 * llama.cpp's `llama` graph does not apply.
 */
export const MISTRAL_FIELDS: ConfigFields = { ...LLAMA_FIELDS, caveats: [EVERY_LAYER_WINDOW] };

/** Mistral 7B and its kin. */
export const MISTRAL: Family = {
  name: "mistral",
  source: "llama.cpp conversion/llama.py LlamaModel; transformers MistralForCausalLM",
  configFields: MISTRAL_FIELDS,
  hfArchitectures: ["MistralForCausalLM"],
  hfModelTypes: ["mistral"],
  ggufArchitecture: "llama",
  ggufRopeType: "norm",
  blockNames: LLAMA_BLOCK,
  permutesQk: true,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: LLAMA_GGUF,
  sentencePiece: LLAMA_SENTENCEPIECE,
};
