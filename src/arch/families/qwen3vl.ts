// This module is browser compatible.

/**
 * Qwen3-VL's language model (`Qwen3VLForConditionalGeneration`), after
 * llama.cpp's `Qwen3VLTextModel` (conversion/qwen3vl.py): Qwen3's block
 * (Q/K RMSNorms, no biases, NEOX RoPE, no permute) under GGUF architecture
 * `qwen3vl`. Its RoPE is interleaved multi-axis (llama.cpp's IMROPE, set by
 * the architecture): `rope.dimension_sections` from `mrope_section`, written
 * by `writeTextModelKv`; for text every axis has the token's position, so it
 * rotates as plain RoPE. `n_deepstack_layers` counts the vision tower's
 * deepstack mergers, whose features the runtime adds to the first layers'
 * outputs for image tokens (zero for text). The vision tower is not part of
 * it (`multimodal.ts`, `mmproj.ts`).
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import { type KvWriter, record } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import { QWEN2_FIELDS } from "./qwen2.ts";

/**
 * `Qwen3VLTextModel`'s key after the text model's: how many deepstack
 * mergers the vision tower has (`vision_config.deepstack_visual_indexes`).
 *
 * @param w The writer over `config.json`.
 */
export function writeDeepstackKv(w: KvWriter): void {
  const indexes = record(w.hparams["vision_config"])?.["deepstack_visual_indexes"];
  w.u32("n_deepstack_layers", Array.isArray(indexes) ? indexes.length : 0);
}

/** Qwen3-VL's dense language model. */
export const QWEN3VL: Family = {
  name: "qwen3vl",
  source:
    "llama.cpp conversion/qwen3vl.py Qwen3VLTextModel; transformers Qwen3VLForConditionalGeneration",
  configFields: QWEN2_FIELDS,
  hfArchitectures: [],
  hfModelTypes: ["qwen3_vl"],
  ggufArchitecture: "qwen3vl",
  ggufRopeType: "imrope",
  blockNames: LLAMA_BLOCK,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: {
    writeKv(w) {
      writeTextModelKv(w);
      writeDeepstackKv(w);
    },
  },
};
