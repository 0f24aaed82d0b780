// This module is browser compatible.

/**
 * Qwen2 / Qwen2.5 (`Qwen2ForCausalLM`), after llama.cpp's `Qwen2Model`
 * (conversion/qwen.py): llama block names with Q/K/V biases, NEOX RoPE (no
 * permutation), the common keys only. Its headless `Qwen2Model` (gte-Qwen2)
 * is the same architecture with the sentence-transformers pooling as
 * `qwen2.pooling_type` and no output layer, as the converter writes it.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import { headlessHfName, writePooledTextModelKv } from "../pooling.ts";
import { activation, type ConfigFields, qwenWindow, SILU } from "../config_fields.ts";

/** Qwen2's window: from `max_window_layers` on, with `use_sliding_window` (llama.cpp's qwen2 applies none). */
export const QWEN2_FIELDS: ConfigFields = {
  assumed: [activation("hidden_act", SILU)],
  caveats: [qwenWindow((layer, maxWindowLayers) => layer >= maxWindowLayers)],
};

/** Qwen2 and Qwen2.5. */
export const QWEN2: Family = {
  name: "qwen2",
  source: "llama.cpp conversion/qwen.py Qwen2Model; transformers Qwen2ForCausalLM",
  configFields: QWEN2_FIELDS,
  hfArchitectures: ["Qwen2ForCausalLM", "Qwen2Model"],
  hfModelTypes: ["qwen2"],
  ggufArchitecture: "qwen2",
  ggufRopeType: "neox",
  blockNames: LLAMA_BLOCK,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv: writePooledTextModelKv, hfName: headlessHfName },
};
