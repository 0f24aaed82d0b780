// This module is browser compatible.

/**
 * GLM-5 (`GlmMoeDsaForCausalLM`), after llama.cpp's `GlmMoeDsaModel`
 * (conversion/glm.py, a `DeepseekV2Model`), GGUF architecture `glm-dsa`.
 *
 * DeepSeek-V3.2's layer (MLA, experts with a sigmoid router, the DSA
 * indexer, MTP layers kept: `deepseek32.ts`'s) with GLM's vocabulary
 * (`_set_vocab_glm`, as GLM-4.5's), the rotated dims scaled by
 * `partial_rotary_factor`, and `indexer_types` (which layers run their own
 * indexer, `"full"`, and which reuse the previous one's selection) written
 * as `attention.indexer.types`: without it llama.cpp assumes GLM-5.2's
 * pattern for a context of 2²⁰ tokens or more. Its indexer rotates adjacent
 * pairs (transformers' `apply_rotary_pos_emb_interleave`, llama.cpp's NORM),
 * not V3.2's halves; nothing is permuted either way. A GGUF reads back as
 * DeepSeek-V3.2's does (its layers sharing an indexer have no indexer tensors).
 *
 * realizar has no GLM model: APR output keeps the checkpoint's tensors under
 * their Hugging Face names.
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import {
  DEEPSEEK32,
  indexerUnsupported,
  writeIndexerKv,
  writeMlaWithNextnKv,
  yarnUnsupported,
} from "./deepseek32.ts";
import { deepseek2Unsupported } from "./deepseek2.ts";
import { GLM_SPECIAL_TOKENS } from "./glm4moe.ts";

/** `GlmMoeDsaModel.set_gguf_parameters`. */
function writeGlmDsaKv(w: KvWriter): void {
  writeMlaWithNextnKv(w);
  const factor = w.rope["partial_rotary_factor"];
  const rope = w.need("qk_rope_head_dim");
  w.u32("rope.dimension_count", Math.trunc(rope * (typeof factor === "number" ? factor : 1)));
  w.u32("nextn_predict_layers", w.find("num_nextn_predict_layers"));
  writeIndexerKv(w);
  const types = w.hparams["indexer_types"];
  if (Array.isArray(types)) {
    w.setArray(
      "attention.indexer.types",
      "BOOL",
      types.map((t) => t === "full"),
    );
  }
}

/** What of a config llama.cpp's `glm-dsa` cannot take, or `undefined`. */
function unsupported(w: KvWriter): string | undefined {
  // Without scoring_func the converter writes no expert_gating_func, and
  // llama.cpp's glm-dsa takes a sigmoid, as transformers scores.
  return deepseek2Unsupported(w, "sigmoid") ?? yarnUnsupported(w) ?? indexerUnsupported(w);
}

/** GLM-5. */
export const GLM_DSA: Family = {
  ...DEEPSEEK32,
  name: "glm-dsa",
  source: "llama.cpp conversion/glm.py GlmMoeDsaModel; transformers GlmMoeDsaForCausalLM",
  configFields: {
    ...DEEPSEEK32.configFields,
    written: [...DEEPSEEK32.configFields.written ?? [], "indexer_types"],
  },
  hfArchitectures: ["GlmMoeDsaForCausalLM"],
  hfModelTypes: ["glm_moe_dsa"],
  ggufArchitecture: "glm-dsa",
  gguf: { ...DEEPSEEK32.gguf!, writeKv: writeGlmDsaKv, unsupported },
  preTokenizer: "glm4",
  specialTokensByName: GLM_SPECIAL_TOKENS,
};
