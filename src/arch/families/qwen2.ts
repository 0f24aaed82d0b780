// This module is browser compatible.

/**
 * Qwen2 / Qwen2.5 (`Qwen2ForCausalLM`), after llama.cpp's `Qwen2Model`
 * (conversion/qwen.py): llama block names with Q/K/V biases, NEOX RoPE (no
 * permutation), the common keys only.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import { writeTextModelKv } from "../text_model.ts";

/** Qwen2 and Qwen2.5. */
export const QWEN2: Family = {
  name: "qwen2",
  source: "llama.cpp conversion/qwen.py Qwen2Model; transformers Qwen2ForCausalLM",
  hfArchitectures: ["Qwen2ForCausalLM"],
  hfModelTypes: ["qwen2"],
  ggufArchitecture: "qwen2",
  ggufRopeType: "neox",
  blockNames: LLAMA_BLOCK,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv: writeTextModelKv },
};
