// This module is browser compatible.

/**
 * Youtu-LLM (`YoutuForCausalLM`: Tencent's Youtu-LLM-2B), after llama.cpp's
 * `DeepseekV2Model` (conversion/deepseek.py registers the class), GGUF
 * architecture `deepseek2`.
 *
 * transformers builds it from DeepSeek-V3's multi-head latent attention
 * (`rope_interleave`, q and kv LoRA) and a dense SwiGLU MLP in every layer:
 * no experts, so the converter writes `leading_dense_block_count` = the
 * layer count and the MLP width as `expert_feed_forward_length`
 * (`writeDeepseek2Kv` does both for a config without `n_routed_experts`).
 * Embeddings are tied by default. Its published tokenizer is llama.cpp's
 * `youtu` pre-tokenizer (`src/tokenizer/pre_tokenizers.ts`).
 *
 * realizar has no DeepSeek model: APR output keeps the checkpoint's tensors
 * under their Hugging Face names.
 *
 * @module
 */

import type { Family } from "../family.ts";
import { DEEPSEEK2, DEEPSEEK2_CONFIG_FIELDS } from "./deepseek2.ts";

/** Youtu-LLM. */
export const YOUTU: Family = {
  ...DEEPSEEK2,
  name: "youtu",
  source: "llama.cpp conversion/deepseek.py DeepseekV2Model; transformers YoutuForCausalLM",
  configFields: {
    ...DEEPSEEK2_CONFIG_FIELDS,
    irrelevant: {
      ...DEEPSEEK2_CONFIG_FIELDS.irrelevant,
      embedding_initializer_range: "initialisation only",
    },
  },
  hfArchitectures: ["YoutuForCausalLM"],
  hfModelTypes: ["youtu"],
  tiedByDefault: true,
};
