// This module is browser compatible.

/**
 * Cohere's Command-R (`CohereForCausalLM`) and Command R7B / Command-A
 * (`Cohere2ForCausalLM`), after llama.cpp's `CommandR2Model` and
 * `Cohere2Model` (conversion/command_r.py): one LayerNorm without bias per
 * block feeding attention and feed-forward in parallel, logits scaled by
 * `logit_scale`, tied embeddings, RoPE on adjacent pairs (transformers'
 * Cohere `rotate_half` interleaves, so no Q/K permutation); Command R+'s
 * per-head Q/K LayerNorms; Cohere2's sliding window on 3 layers of 4, the
 * fourth global without RoPE.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";

/** Cohere's block: llama's without `ffn_norm` (the one `attn_norm` feeds both branches). */
export const COHERE_BLOCK = LLAMA_BLOCK.filter(([gguf]) => gguf !== "ffn_norm");

/**
 * llama.cpp creates Command-R's Q/K norms only for 64 layers or more
 * (src/models/command-r.cpp: Command R+), so a config whose `use_qk_norm`
 * says otherwise loads with missing or unused tensors.
 */
const QK_NORM_LAYERS = 64;

/** What both Cohere graphs cannot run: attention biases, RoPE scaling. */
export function cohereUnsupported(w: KvWriter, family: string): string | undefined {
  if (w.hparams["attention_bias"] === true) {
    return `attention_bias true (llama.cpp's ${family} graph has no attention biases)`;
  }
  const type = w.fullRope["rope_type"];
  if (type !== undefined && type !== "default") {
    return `rope_type ${JSON.stringify(type)} (the converter writes rope.scaling.type "none" ` +
      `for ${family}; only unscaled RoPE is supported)`;
  }
  return undefined;
}

function commandRUnsupported(w: KvWriter): string | undefined {
  const other = cohereUnsupported(w, "command-r");
  if (other !== undefined) return other;
  const qkNorm = w.hparams["use_qk_norm"] === true;
  const layers = w.need("num_hidden_layers");
  if (qkNorm !== layers >= QK_NORM_LAYERS) {
    return `use_qk_norm ${qkNorm} with ${layers} layers (llama.cpp's command-r reads Q/K ` +
      `norms exactly when a model has ${QK_NORM_LAYERS} layers or more)`;
  }
  return undefined;
}

function writeCommandRKv(w: KvWriter): void {
  writeTextModelKv(w);
  // The converter's __init__: Command-R was trained on `model_max_length`
  // (128k), not the 8192 of max_position_embeddings.
  w.u32("context_length", w.find("model_max_length", "max_position_embeddings"));
  w.f32("logit_scale", w.need("logit_scale"));
  w.set("rope.scaling.type", "STRING", "none");
}

/** llama.cpp's Cohere2 pattern, hard-coded (`load_swa_pattern(ml, 4)`): 3 sliding layers, then a global one. */
const COHERE2_PATTERN = 4;

function cohere2Unsupported(w: KvWriter): string | undefined {
  const other = cohereUnsupported(w, "cohere2");
  if (other !== undefined) return other;
  const pct = w.hparams["rotary_pct"];
  if (pct !== 1) {
    // transformers rotates the whole head whatever rotary_pct says; the
    // converter needs the key (KeyError without it) and writes its share.
    return `rotary_pct ${JSON.stringify(pct ?? null)} (the converter needs it; ` +
      `transformers rotates whole heads, so only 1 is supported)`;
  }
  const types = w.hparams["layer_types"];
  if (Array.isArray(types)) {
    const wrong = types.findIndex((t, i) =>
      (t === "sliding_attention") !== ((i + 1) % COHERE2_PATTERN !== 0)
    );
    if (wrong >= 0) {
      return `layer_types (layer ${wrong} is ${JSON.stringify(types[wrong])}; llama.cpp's ` +
        `cohere2 makes every fourth layer global and the others sliding, and the converter ` +
        `writes no per-layer pattern)`;
    }
  }
  return undefined;
}

function writeCohere2Kv(w: KvWriter): void {
  writeTextModelKv(w);
  w.f32("logit_scale", w.need("logit_scale"));
  w.u32("attention.sliding_window", w.need("sliding_window"));
  w.u32("vocab_size", w.need("vocab_size"));
  const headDim = Math.trunc(w.need("hidden_size") / w.need("num_attention_heads"));
  w.u32("rope.dimension_count", Math.trunc(w.need("rotary_pct") * headDim));
  w.set("rope.scaling.type", "STRING", "none");
}

/** Command-R, Command R+, Aya 23 / Expanse. */
export const COMMAND_R: Family = {
  name: "command-r",
  source: "llama.cpp conversion/command_r.py CommandR2Model; transformers CohereForCausalLM",
  configFields: {
    written: ["logit_scale"],
    checked: ["attention_bias", "use_qk_norm"],
    assumed: [activation("hidden_act", SILU)],
  },
  hfArchitectures: ["CohereForCausalLM"],
  hfModelTypes: ["cohere"],
  ggufArchitecture: "command-r",
  ggufRopeType: "norm",
  blockNames: COHERE_BLOCK,
  permutesQk: false,
  hfRopeInterleaved: true,
  tiedByDefault: true,
  ggufRenamesOnly: true,
  gguf: { writeKv: writeCommandRKv, unsupported: commandRUnsupported },
};

/** Command R7B, Command-A. */
export const COHERE2: Family = {
  ...COMMAND_R,
  name: "cohere2",
  source: "llama.cpp conversion/command_r.py Cohere2Model; transformers Cohere2ForCausalLM",
  configFields: {
    written: ["logit_scale", "sliding_window"],
    checked: ["attention_bias", "layer_types", "rotary_pct"],
    assumed: [activation("hidden_act", SILU)],
  },
  hfArchitectures: ["Cohere2ForCausalLM"],
  hfModelTypes: ["cohere2"],
  ggufArchitecture: "cohere2",
  gguf: { writeKv: writeCohere2Kv, unsupported: cohere2Unsupported, llamaKeys: true },
};
