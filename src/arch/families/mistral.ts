// This module is browser compatible.

/**
 * Mistral (`MistralForCausalLM`): llama.cpp's converter registers it with
 * `LlamaModel` (conversion/llama.py), so its GGUF is a `llama` one.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import { LLAMA_GGUF, LLAMA_SENTENCEPIECE } from "./llama.ts";

/** Mistral 7B and its kin. */
export const MISTRAL: Family = {
  name: "mistral",
  source: "llama.cpp conversion/llama.py LlamaModel; transformers MistralForCausalLM",
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
