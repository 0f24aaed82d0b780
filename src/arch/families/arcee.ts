// This module is browser compatible.

/**
 * Arcee (`ArceeForCausalLM`: AFM-4.5B), after llama.cpp's `ArceeModel`
 * (conversion/llama.py): a `LlamaModel` (Q/K rows permuted, llama's keys,
 * `rope_freqs` for Llama 3's RoPE) filed under GGUF architecture `arcee`,
 * whose feed-forward is `down(relu(up(x))²)`: no gate. The sentence-transformers
 * pooling, where the folder has one, as `pooling_type`.
 *
 * llama.cpp's `arcee` loads no output-projection or feed-forward bias and no
 * LongRoPE factors, and applies no other activation: such a config is
 * refused for GGUF.
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { activation } from "../config_fields.ts";
import { writePoolingType } from "../pooling.ts";
import { LLAMA, LLAMA_GGUF, writeLlamaKv } from "./llama.ts";

/** `ArceeModel.set_gguf_parameters`. */
function writeKv(w: KvWriter): void {
  writeLlamaKv(w);
  writePoolingType(w);
}

function unsupported(w: KvWriter): string | undefined {
  const why = (what: string) =>
    `its config.json says ${what}; llama.cpp's arcee reads no such tensor and would not run ` +
    `it as transformers does (APR and SafeTensors output keep it)`;
  // attention_bias also gives o_proj a bias, which llama.cpp's arcee does not load.
  for (const key of ["attention_bias", "mlp_bias"]) {
    if (w.hparams[key] === true) return why(`${key} true`);
  }
  const ropeType = w.fullRope["rope_type"];
  if (ropeType === "longrope" || ropeType === "su") return why(`rope_type ${ropeType}`);
  return undefined;
}

/** AFM-4.5B. */
export const ARCEE: Family = {
  ...LLAMA,
  name: "arcee",
  source: "llama.cpp conversion/llama.py ArceeModel; transformers ArceeForCausalLM",
  configFields: {
    // transformers' ACT2FN "relu2": ReLU squared, llama.cpp's LLM_FFN_RELU_SQR.
    assumed: [activation("hidden_act", ["relu2"])],
    checked: ["attention_bias", "mlp_bias"],
  },
  hfArchitectures: ["ArceeForCausalLM"],
  hfModelTypes: ["arcee"],
  ggufArchitecture: "arcee",
  // src/models/arcee.cpp multiplies in the attention's `*_s` scales, not the feed-forward's.
  gguf: { ...LLAMA_GGUF, writeKv, unsupported, nvfp4Scales: false },
};
