// This module is browser compatible.

/**
 * Mistral Small 3.x's language model (`Mistral3ForConditionalGeneration`,
 * a Mistral text model beside a Pixtral vision tower), after llama.cpp's
 * `Mistral3Model.Ministral3Model` (conversion/mistral3.py): a `LlamaModel`
 * (Q/K rows permuted, llama's keys) filed under GGUF architecture
 * `mistral3`. The vision tower is not part of it (`multimodal.ts`).
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import { LLAMA_GGUF } from "./llama.ts";
import { MISTRAL_FIELDS } from "./mistral.ts";

/** Mistral 3's language model. */
export const MISTRAL3: Family = {
  name: "mistral3",
  source:
    "llama.cpp conversion/mistral3.py Ministral3Model; transformers Mistral3ForConditionalGeneration",
  configFields: { ...MISTRAL_FIELDS, readsYarnBetas: true },
  hfArchitectures: [],
  hfModelTypes: ["mistral3"],
  ggufArchitecture: "mistral3",
  ggufRopeType: "norm",
  blockNames: LLAMA_BLOCK,
  permutesQk: true,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: LLAMA_GGUF,
};
