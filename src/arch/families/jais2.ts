// This module is browser compatible.

/**
 * Jais 2 (`Jais2ForCausalLM`), after llama.cpp's `Jais2Model`
 * (conversion/jais.py), GGUF architecture `jais2`: Llama's attention with
 * NEOX RoPE (no Q/K permutation), LayerNorms with biases, a feed-forward of
 * up, ReLU², down (no gate), biases on the projections. llama.cpp's `jais2`
 * (src/models/jais2.cpp) requires the output-projection and feed-forward
 * biases: a config without them is refused for GGUF.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import { activation } from "../config_fields.ts";

/** `Jais2Model.set_gguf_parameters`: the text model's keys and the head size as the rotated width. */
function writeJais2Kv(w: KvWriter): void {
  writeTextModelKv(w);
  w.u32(
    "rope.dimension_count",
    w.hparams["head_dim"] ?? w.need("hidden_size") / w.need("num_attention_heads"),
  );
}

function unsupported(w: KvWriter): string | undefined {
  for (const key of ["attention_bias", "mlp_bias"]) {
    if (w.hparams[key] === false) {
      return `its config.json says ${key} false; llama.cpp's jais2 requires those biases and ` +
        `would not load the file (APR and SafeTensors output keep it)`;
    }
  }
  return undefined;
}

/** Jais 2 (Inception's Arabic-English models). */
export const JAIS2: Family = {
  name: "jais2",
  source: "llama.cpp conversion/jais.py Jais2Model; transformers Jais2ForCausalLM",
  configFields: {
    // transformers' ACT2FN "relu2": ReLU squared, llama.cpp's LLM_FFN_RELU_SQR.
    assumed: [activation("hidden_act", ["relu2"])],
    checked: ["attention_bias", "mlp_bias"],
  },
  hfArchitectures: ["Jais2ForCausalLM"],
  hfModelTypes: ["jais2"],
  ggufArchitecture: "jais2",
  ggufRopeType: "neox",
  blockNames: LLAMA_BLOCK,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv: writeJais2Kv, unsupported },
};
