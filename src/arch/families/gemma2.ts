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
import {
  activation,
  type Assumption,
  type ConfigFields,
  GELU,
  swaPattern,
} from "../config_fields.ts";

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

/**
 * What llama.cpp's gemma2 and gemma3 scale queries by: 1/√(hidden/heads) for
 * the 27B models (46 or 62 layers), else 1/√head_dim — transformers by
 * 1/√query_pre_attn_scalar.
 *
 * @param layers27b The 27B model's layer count.
 */
export function queryPreAttnScalar(layers27b: number): Assumption {
  return {
    field: "query_pre_attn_scalar",
    hfDefault: 256,
    llamaCpp: (w: KvWriter) =>
      w.num("num_hidden_layers") === layers27b
        ? Math.trunc(w.need("hidden_size") / w.need("num_attention_heads"))
        : w.num("head_dim") ?? 256,
  };
}

/** Gemma 2: soft-caps and window written; every other layer windowed, as llama.cpp assumes. */
const GEMMA2_FIELDS: ConfigFields = {
  written: ["attn_logit_softcapping", "final_logit_softcapping", "sliding_window"],
  assumed: [
    activation("hidden_activation", GELU, "gelu_pytorch_tanh"),
    queryPreAttnScalar(46),
    { field: "layer_types", hfDefault: null, llamaCpp: swaPattern(2), alike: [null] },
    { field: "use_bidirectional_attention", hfDefault: null, llamaCpp: false, alike: [null] },
  ],
};

/** Gemma 2. */
export const GEMMA2: Family = {
  name: "gemma2",
  source: "llama.cpp conversion/gemma.py Gemma2Model; transformers Gemma2ForCausalLM",
  configFields: GEMMA2_FIELDS,
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
