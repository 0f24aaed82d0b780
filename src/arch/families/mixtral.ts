// This module is browser compatible.

/**
 * Mixtral (`MixtralForCausalLM`): llama.cpp's converter registers it with
 * `LlamaModel` (conversion/llama.py), a `llama` GGUF whose per-expert
 * `w1/w2/w3` are stacked into `ffn_{gate,down,up}_exps` and whose router is
 * `ffn_gate_inp`; for APR, the names realizar looks up (`mlp.gate`,
 * `mlp.experts.E.{gate,down,up}_proj`).
 *
 * @module
 */

import { type AprLayout, type ExpertLayout, type Family, LLAMA_BLOCK } from "../family.ts";
import { LLAMA_GGUF, LLAMA_SENTENCEPIECE } from "./llama.ts";
import { MISTRAL_FIELDS } from "./mistral.ts";

/** Mixtral's experts: `block_sparse_moe.experts.E.w1/w2/w3`, stacked as gate, down, up (MiniMax-M2's too). */
export const MIXTRAL_EXPERTS: ExpertLayout = {
  prefix: "block_sparse_moe.experts",
  stacks: [
    { hf: "w1", gguf: "ffn_gate_exps" },
    { hf: "w2", gguf: "ffn_down_exps" },
    { hf: "w3", gguf: "ffn_up_exps" },
  ],
};

/** The router and experts under the names realizar looks MoE tensors up by (Qwen's). */
export const MIXTRAL_APR: AprLayout = {
  rename: [
    ["block_sparse_moe.gate", "mlp.gate"],
    ["block_sparse_moe.experts.{E}.w1", "mlp.experts.{E}.gate_proj"],
    ["block_sparse_moe.experts.{E}.w2", "mlp.experts.{E}.down_proj"],
    ["block_sparse_moe.experts.{E}.w3", "mlp.experts.{E}.up_proj"],
  ],
};

/** Mixtral 8x7B, 8x22B. */
export const MIXTRAL: Family = {
  name: "mixtral",
  source: "llama.cpp conversion/llama.py LlamaModel; transformers MixtralForCausalLM",
  configFields: MISTRAL_FIELDS,
  hfArchitectures: ["MixtralForCausalLM"],
  hfModelTypes: ["mixtral"],
  ggufArchitecture: "llama",
  ggufRopeType: "norm",
  blockNames: [...LLAMA_BLOCK, ["ffn_gate_inp", "block_sparse_moe.gate"]],
  experts: MIXTRAL_EXPERTS,
  permutesQk: true,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  // realizar looks MoE tensors up under Qwen's names.
  apr: MIXTRAL_APR,
  gguf: LLAMA_GGUF,
  sentencePiece: LLAMA_SENTENCEPIECE,
};
