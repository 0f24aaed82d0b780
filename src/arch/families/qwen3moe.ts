// This module is browser compatible.

/**
 * Qwen3-MoE (`Qwen3MoeForCausalLM`), after llama.cpp's `Qwen3MoeModel`
 * (conversion/qwen.py, a `Qwen2MoeModel`): Qwen3's Q/K norms, experts
 * stacked as Qwen2-MoE's, no shared expert.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK, QK_NORMS } from "../family.ts";
import { QWEN_MOE_EXPERTS, writeQwenMoeKv } from "./qwen2moe.ts";

/** Qwen3-30B-A3B, Qwen3-235B-A22B. */
export const QWEN3MOE: Family = {
  name: "qwen3moe",
  aprUnread: QK_NORMS,
  source: "llama.cpp conversion/qwen.py Qwen3MoeModel; transformers Qwen3MoeForCausalLM",
  hfArchitectures: ["Qwen3MoeForCausalLM"],
  hfModelTypes: ["qwen3_moe"],
  ggufArchitecture: "qwen3moe",
  ggufRopeType: "neox",
  blockNames: [...LLAMA_BLOCK, ["ffn_gate_inp", "mlp.gate"]],
  experts: QWEN_MOE_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: { writeKv: writeQwenMoeKv },
};
