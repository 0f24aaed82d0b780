// This module is browser compatible.

/**
 * Solar Open (`SolarOpenForCausalLM`: Solar-Open-100B), after llama.cpp's
 * `SolarOpenModel` (conversion/glm.py), a `Glm4MoeModel` written as GGUF
 * `glm4moe`: GLM-4.5's experts, shared experts and sigmoid router with its
 * score-correction bias (every layer MoE: no `first_k_dense_replace`), no
 * multi-token-prediction layers, and the special tokens it looks up by name
 * (`<|startoftext|>`, `<|endoftext|>`, `<unk>`).
 *
 * transformers rotates the whole head unless `partial_rotary_factor` says
 * otherwise; the converter assumes GLM's 0.5 when the config names none,
 * and llama.cpp would then rotate half of it. aprkit writes transformers'
 * rotary width (with the factor written out, the converter's file).
 *
 * A GGUF holds no class of its own (`general.architecture` `glm4moe`), and
 * GLM-4.5's GGUF is not read back (its router bias renamed, experts stacked).
 *
 * @module
 */

import type { Family } from "../family.ts";
import { GLM4MOE, glm4MoeUnsupported, writeGlm4MoeKv } from "./glm4moe.ts";

/** `SolarOpenConfig`'s rotary share of a head: the whole. */
const SOLAR_ROTARY = 1;

/** Solar-Open-100B. */
export const SOLAR_OPEN: Family = {
  ...GLM4MOE,
  name: "solar_open",
  source: "llama.cpp conversion/glm.py SolarOpenModel; transformers SolarOpenForCausalLM",
  hfArchitectures: ["SolarOpenForCausalLM"],
  hfModelTypes: ["solar_open"],
  gguf: {
    ...GLM4MOE.gguf!,
    writeKv: (w) => writeGlm4MoeKv(w, SOLAR_ROTARY),
    unsupported: (w) => glm4MoeUnsupported(w, SOLAR_ROTARY),
  },
  preTokenizer: "solar-open",
  // SolarOpenModel.set_vocab: only where the files name none of these kinds.
  specialTokensByName: [
    ["eos", "<|endoftext|>"],
    ["eot", "<|endoftext|>"],
    ["unk", "<unk>"],
    ["bos", "<|startoftext|>"],
  ],
};
