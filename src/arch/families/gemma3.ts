// This module is browser compatible.

/**
 * Gemma 3 text (`Gemma3ForCausalLM`), after llama.cpp's `Gemma3Model`
 * (conversion/gemma.py): Gemma 2's block with Q/K norms, `+1` on every
 * norm, the common keys overridden with Gemma 3's defaults, local and
 * global RoPE bases, the final soft-cap when set and the sliding window
 * (with the per-layer pattern when it is not llama.cpp's default).
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import { gemmaNormShift } from "./gemma.ts";
import { GEMMA2_BLOCK, queryPreAttnScalar } from "./gemma2.ts";
import { activation, type ConfigFields, GELU } from "../config_fields.ts";

/**
 * Gemma 3's keys without its sliding-window pattern (Gemma 3n's converter
 * class extends them and always writes the pattern).
 *
 * @param w The writer over `config.json`.
 */
export function writeGemma3Keys(w: KvWriter): void {
  writeTextModelKv(w);
  w.u32("context_length", w.num("max_position_embeddings") ?? 131072);
  w.u32("attention.head_count", w.num("num_attention_heads") ?? 8);
  w.f32("attention.layer_norm_rms_epsilon", w.num("rms_norm_eps") ?? 1e-6);
  w.u32("attention.key_length", w.num("head_dim") ?? 256);
  w.u32("attention.value_length", w.num("head_dim") ?? 256);
  const theta = w.fullRope["rope_theta"];
  w.f32("rope.freq_base", typeof theta === "number" ? theta : 1_000_000);
  const softcap = w.hparams["final_logit_softcapping"];
  if (typeof softcap === "number" && softcap !== 0) w.f32("final_logit_softcapping", softcap);
  if (w.hparams["sliding_window_pattern"] !== 1) {
    w.u32("attention.sliding_window", w.need("sliding_window"));
  }
  w.u32("attention.head_count_kv", w.num("num_key_value_heads") ?? 4);
}

/**
 * Gemma 3's keys, with the sliding-window pattern when it is not llama.cpp's.
 *
 * @param w The writer over `config.json`.
 */
export function writeGemma3Kv(w: KvWriter): void {
  writeGemma3Keys(w);
  // head_count_kv, written first by writeTextModelKv, keeps its place: the
  // pattern follows the sliding window as in the converter's order.
  if (w.hparams["sliding_window_pattern"] !== 1) writeUnusualPattern(w);
}

/**
 * llama.cpp assumes Gemma 3's layers follow its published pattern (five
 * sliding-window layers, then one global: `load_swa_pattern(ml, 6)`) unless
 * `attention.sliding_window_pattern` says otherwise, and the converter never
 * writes that key. A config whose `layer_types` differ from the pattern
 * would run wrong; aprkit writes the key for such a config only, so a
 * published model's GGUF stays the converter's.
 */
function writeUnusualPattern(w: KvWriter): void {
  const types = w.hparams["layer_types"];
  if (!Array.isArray(types)) return;
  const pattern = types.map((t) => t === "sliding_attention");
  if (pattern.some((swa, i) => swa !== (i % 6 < 5))) {
    w.setArray("attention.sliding_window_pattern", "BOOL", pattern);
  }
}

/** Gemma 3: the pattern written when unusual; no attention soft-cap in llama.cpp's gemma3. */
const GEMMA3_FIELDS: ConfigFields = {
  written: ["final_logit_softcapping", "sliding_window", "layer_types", "sliding_window_pattern"],
  assumed: [
    activation("hidden_activation", GELU, "gelu_pytorch_tanh"),
    queryPreAttnScalar(62),
    { field: "attn_logit_softcapping", hfDefault: null, llamaCpp: null },
    { field: "use_bidirectional_attention", hfDefault: false, llamaCpp: false, alike: [null] },
  ],
  irrelevant: { _sliding_window_pattern: "transformers' private copy of sliding_window_pattern" },
};

/** Gemma 3, text only. */
export const GEMMA3: Family = {
  name: "gemma3",
  source: "llama.cpp conversion/gemma.py Gemma3Model; transformers Gemma3ForCausalLM",
  configFields: GEMMA3_FIELDS,
  hfArchitectures: ["Gemma3ForCausalLM"],
  hfModelTypes: ["gemma3_text", "gemma3"],
  ggufArchitecture: "gemma3",
  ggufRopeType: "neox",
  blockNames: GEMMA2_BLOCK,
  permutesQk: false,
  tiedByDefault: true,
  ggufRenamesOnly: false,
  embeddingRowsMayDiffer: true,
  gguf: { writeKv: writeGemma3Kv, shift: gemmaNormShift },
  sentencePiece: { addSpacePrefix: false },
};
