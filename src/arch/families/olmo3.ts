// This module is browser compatible.

/**
 * OLMo 3 (`Olmo3ForCausalLM`): llama.cpp's converter registers it on
 * `Olmo2Model` (conversion/olmo.py) and writes it as GGUF `olmo2`, with
 * `attention.sliding_window` and the per-layer `sliding_window_pattern`
 * (from `layer_types`, else 3 sliding layers of every 4) — OLMo 2's keys and
 * tensors. llama.cpp's `olmo2` rotates the sliding-window layers with the
 * global `rope.freq_base` and no scaling, the others with the scaling
 * (src/models/olmo2.cpp), as transformers 5 applies `rope_parameters`; a
 * config whose sliding layers have a RoPE of their own, or with biases or tied
 * embeddings (llama.cpp loads neither), is refused for GGUF.
 *
 * A GGUF holds no class of its own (`general.architecture` `olmo2`): read
 * back, it is OLMo 2's, as Mistral's is Llama's.
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { OLMO2, OLMO2_FIELDS, olmo2Unsupported } from "./olmo2.ts";

function unsupported(w: KvWriter): string | undefined {
  const why = (what: string) =>
    `its config.json says ${what}; llama.cpp's olmo2 reads no key for that and would not run ` +
    `it as transformers does (APR and SafeTensors output keep it)`;
  return olmo2Unsupported(w, why) ?? slidingRopeUnsupported(w, why);
}

/**
 * Whether a config rotates its sliding-window layers otherwise than with the
 * global base and no scaling, as llama.cpp's `olmo2` and `mellum` do (one
 * `rope.freq_base` for both kinds of layer).
 *
 * @param w The writer, over the model's `config.json`.
 * @param why Phrases the refusal for `what` the config says.
 * @returns The refusal, or `undefined`.
 */
export function slidingRopeUnsupported(
  w: KvWriter,
  why: (what: string) => string,
): string | undefined {
  const sliding = w.rope["sliding_attention"];
  if (sliding !== null && typeof sliding === "object") {
    const swa = sliding as Record<string, unknown>;
    const type = swa["rope_type"] ?? "default";
    if (type !== "default") return why(`rope_type ${JSON.stringify(type)} for sliding_attention`);
    if (swa["rope_theta"] !== undefined && swa["rope_theta"] !== w.fullRope["rope_theta"]) {
      return why(
        `rope_theta ${swa["rope_theta"]} for sliding_attention and ` +
          `${w.fullRope["rope_theta"]} for full_attention (llama.cpp: one base for both)`,
      );
    }
  }
  return undefined;
}

/** OLMo 3. */
export const OLMO3: Family = {
  ...OLMO2,
  name: "olmo3",
  source: "llama.cpp conversion/olmo.py Olmo2Model; transformers Olmo3ForCausalLM",
  configFields: { ...OLMO2_FIELDS, written: ["layer_types", "sliding_window"] },
  hfArchitectures: ["Olmo3ForCausalLM"],
  hfModelTypes: ["olmo3"],
  gguf: { ...OLMO2.gguf!, unsupported },
};
