// This module is browser compatible.

/**
 * Qwen2-VL's and Qwen2.5-VL's language model
 * (`Qwen2VLForConditionalGeneration`, `Qwen2_5_VLForConditionalGeneration`),
 * after llama.cpp's `Qwen2VLModel` (conversion/qwenvl.py): Qwen2's block
 * (q/k/v biases, NEOX RoPE, no permute) under GGUF architecture `qwen2vl`,
 * whose multi-axis RoPE splits each head's rotary pairs into the sections of
 * `rope_scaling.mrope_section` (`rope.dimension_sections`, written by
 * `writeTextModelKv`). For text, every axis has the token's position, so
 * it rotates as plain RoPE. The vision tower is not part of it
 * (`multimodal.ts`).
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import { writeTextModelKv } from "../text_model.ts";
import { QWEN2_FIELDS } from "./qwen2.ts";

/** Qwen2-VL / Qwen2.5-VL's language model. */
export const QWEN2VL: Family = {
  name: "qwen2vl",
  source:
    "llama.cpp conversion/qwenvl.py Qwen2VLModel; transformers Qwen2_5_VLForConditionalGeneration",
  configFields: QWEN2_FIELDS,
  hfArchitectures: [],
  hfModelTypes: ["qwen2_vl", "qwen2_5_vl"],
  ggufArchitecture: "qwen2vl",
  ggufRopeType: "mrope",
  blockNames: LLAMA_BLOCK,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv: writeTextModelKv },
};
