// This module is browser compatible.

/**
 * OLMo 2 (`Olmo2ForCausalLM`), after llama.cpp's `Olmo2Model`
 * (conversion/olmo.py): norms after attention and feed-forward instead of
 * before, Q/K norms over the whole projection, NEOX RoPE; the sliding
 * window and its per-layer pattern when the config has one.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import { activation, type ConfigFields, SILU } from "../config_fields.ts";

function writeOlmo2Kv(w: KvWriter): void {
  writeTextModelKv(w);
  if (Object.hasOwn(w.hparams, "sliding_window")) {
    w.u32("attention.sliding_window", w.find("sliding_window"));
    const types = w.hparams["layer_types"];
    const layers = w.need("num_hidden_layers");
    const pattern = Array.isArray(types)
      ? types.map((t) => t === "sliding_attention")
      : Array.from({ length: layers }, (_, i) => (i + 1) % 4 !== 0);
    w.setArray("attention.sliding_window_pattern", "BOOL", pattern);
  }
}

/**
 * What llama.cpp's `olmo2` loads no tensor for (src/models/olmo2.cpp: no
 * attention biases; `output.weight` required, so tied embeddings leave a file
 * it refuses to load), shared with OLMo 3.
 *
 * @param w The writer, over the model's `config.json`.
 * @param why Phrases the refusal for `what` the config says.
 * @returns The refusal, or `undefined`.
 */
export function olmo2Unsupported(
  w: KvWriter,
  why: (what: string) => string = olmo2Why,
): string | undefined {
  for (const key of ["attention_bias", "tie_word_embeddings"]) {
    if (w.hparams[key] === true) return why(`${key} true`);
  }
  return undefined;
}

function olmo2Why(what: string): string {
  return `its config.json says ${what}; llama.cpp's olmo2 loads no such model ` +
    `(APR and SafeTensors output keep it)`;
}

/** OLMo 2: attention biases and tied embeddings refused by `unsupported`. */
export const OLMO2_FIELDS: ConfigFields = {
  checked: ["attention_bias", "tie_word_embeddings"],
  assumed: [activation("hidden_act", SILU)],
};

/** OLMo 2. */
export const OLMO2: Family = {
  name: "olmo2",
  source: "llama.cpp conversion/olmo.py Olmo2Model; transformers Olmo2ForCausalLM",
  configFields: OLMO2_FIELDS,
  hfArchitectures: ["Olmo2ForCausalLM"],
  hfModelTypes: ["olmo2"],
  ggufArchitecture: "olmo2",
  ggufRopeType: "neox",
  // Norms after attention and feed-forward, none before.
  blockNames: [
    ...LLAMA_BLOCK.filter(([gguf]) => gguf !== "attn_norm" && gguf !== "ffn_norm"),
    ["post_attention_norm", "post_attention_layernorm"],
    ["post_ffw_norm", "post_feedforward_layernorm"],
  ],
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv: writeOlmo2Kv, unsupported: (w) => olmo2Unsupported(w) },
};
