// This module is browser compatible.

/**
 * Gemma 2 (`Gemma2ForCausalLM`), after llama.cpp's `Gemma2Model`
 * (conversion/gemma.py): four norms per block (post-attention and
 * post-feed-forward ones besides the two pre-norms), `+1` on every norm,
 * attention and final logit soft-caps and the sliding window.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { gemmaNormShift, writeGemmaKv } from "./gemma.ts";

/** Gemma 2's and 3's block: Gemma's attention and MLP with four norms. */
export const GEMMA2_BLOCK: readonly (readonly [string, string])[] = [
  ...LLAMA_BLOCK.filter(([gguf]) => gguf !== "ffn_norm"),
  ["post_attention_norm", "post_attention_layernorm"],
  ["ffn_norm", "pre_feedforward_layernorm"],
  ["post_ffw_norm", "post_feedforward_layernorm"],
];
function writeGemma2Kv(w: KvWriter): void {
  writeGemmaKv(w);
  w.f32("attn_logit_softcapping", w.need("attn_logit_softcapping"));
  w.f32("final_logit_softcapping", w.need("final_logit_softcapping"));
  w.u32("attention.sliding_window", w.need("sliding_window"));
}

/** Gemma 2. */
export const GEMMA2: Family = {
  name: "gemma2",
  aprUnread: ["pre_feedforward_layernorm", "post_feedforward_layernorm"],
  source: "llama.cpp conversion/gemma.py Gemma2Model; transformers Gemma2ForCausalLM",
  hfArchitectures: ["Gemma2ForCausalLM"],
  hfModelTypes: ["gemma2"],
  ggufArchitecture: "gemma2",
  ggufRopeType: "neox",
  blockNames: GEMMA2_BLOCK,
  permutesQk: false,
  tiedByDefault: true,
  ggufRenamesOnly: false,
  gguf: { writeKv: writeGemma2Kv, shift: gemmaNormShift },
  sentencePiece: { addSpacePrefix: false },
};
