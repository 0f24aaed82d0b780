// This module is browser compatible.

/**
 * SmolLM3 (`SmolLM3ForCausalLM`), after llama.cpp's `SmolLM3Model`
 * (conversion/llama.py, a `LlamaModel`): Llama's keys and tensors, Q/K
 * permuted for NORM RoPE, tied embeddings, and NoPE layers — every 4th layer
 * rotates nothing. llama.cpp's `smollm3` reads no key for which layers those
 * are (`n_no_rope_layer_step = 4`, src/models/smollm3.cpp), nor for a
 * sliding window, biases or RoPE frequency factors: a config that sets any of
 * them otherwise is refused for GGUF.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { LLAMA_GGUF } from "./llama.ts";
import { activation, SILU } from "../config_fields.ts";

/** llama.cpp's `n_no_rope_layer_step`: layers `il` with `(il + 1) % 4 == 0` have no RoPE. */
const NO_ROPE_STEP = 4;

/** Which layers rotate Q/K in transformers (`SmolLM3Config.no_rope_layers`: 1 = RoPE). */
function ropeLayers(w: KvWriter, layers: number): unknown[] {
  const given = w.hparams["no_rope_layers"];
  if (Array.isArray(given)) return given.slice(0, layers);
  const interval = w.num("no_rope_layer_interval") ?? NO_ROPE_STEP;
  return everyNth(layers, interval);
}

/** 1 (RoPE) for every layer but each `n`th, 0 there. */
function everyNth(layers: number, n: number): number[] {
  return Array.from({ length: layers }, (_, i) => (i + 1) % n !== 0 ? 1 : 0);
}

function unsupported(w: KvWriter): string | undefined {
  const why = (what: string) =>
    `its config.json says ${what}; llama.cpp's smollm3 reads no key for that and would run it ` +
    `otherwise than transformers (APR and SafeTensors output keep it)`;
  const layers = w.num("num_hidden_layers");
  if (layers !== undefined) {
    const given = ropeLayers(w, layers);
    const assumed = everyNth(layers, NO_ROPE_STEP);
    if (given.length !== layers || given.some((v, i) => v !== assumed[i])) {
      return why(
        `no_rope_layers ${
          JSON.stringify(given)
        } (llama.cpp: no RoPE on every ${NO_ROPE_STEP}th layer, ` +
          `${JSON.stringify(assumed)})`,
      );
    }
  }
  const types = w.hparams["layer_types"];
  if (Array.isArray(types) && types.includes("sliding_attention")) {
    return why("layer_types with sliding_attention");
  }
  if (
    !Array.isArray(types) && w.hparams["use_sliding_window"] === true &&
    w.hparams["sliding_window"] != null
  ) {
    return why("use_sliding_window");
  }
  for (const key of ["attention_bias", "mlp_bias"]) {
    if (w.hparams[key] === true) return why(`${key} true`);
  }
  const ropeType = w.fullRope["rope_type"];
  if (ropeType === "llama3" || ropeType === "longrope") {
    return why(`rope_type ${ropeType} (frequency factors, which its graph does not pass)`);
  }
  return undefined;
}

/** SmolLM3. */
export const SMOLLM3: Family = {
  name: "smollm3",
  source: "llama.cpp conversion/llama.py SmolLM3Model; transformers SmolLM3ForCausalLM",
  configFields: {
    checked: [
      "no_rope_layers",
      "no_rope_layer_interval",
      "layer_types",
      "use_sliding_window",
      "sliding_window",
    ],
    assumed: [activation("hidden_act", SILU)],
  },
  hfArchitectures: ["SmolLM3ForCausalLM"],
  hfModelTypes: ["smollm3"],
  ggufArchitecture: "smollm3",
  ggufRopeType: "norm",
  blockNames: LLAMA_BLOCK,
  permutesQk: true,
  tiedByDefault: true,
  ggufRenamesOnly: true,
  // src/models/smollm3.cpp passes no feed-forward `*_s` scale (NVFP4's factor).
  gguf: { ...LLAMA_GGUF, nvfp4Scales: false, unsupported },
};
