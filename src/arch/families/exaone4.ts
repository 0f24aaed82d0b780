// This module is browser compatible.

/**
 * EXAONE 4.0 (`Exaone4ForCausalLM`), after llama.cpp's `Exaone4Model`
 * (conversion/exaone.py): OLMo 2's block (norms after attention and
 * feed-forward, per-head Q/K RMSNorms), NEOX RoPE with Llama 3 scaling
 * (`rope_freqs`), and the 32B's sliding window on 3 layers of 4, the fourth
 * global without RoPE.
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { llama3RopeFreqs } from "../rope_factors.ts";
import { writeTextModelKv } from "../text_model.ts";
import { OLMO2 } from "./olmo2.ts";
import { activation, SILU } from "../config_fields.ts";

/**
 * llama.cpp's `exaone4` runs a sliding window only for 64 layers (the 32B:
 * src/models/exaone4.cpp); any other model runs every layer global with RoPE.
 */
const SWA_LAYERS = 64;

function exaone4Unsupported(w: KvWriter): string | undefined {
  const layers = w.need("num_hidden_layers");
  const window = w.hparams["sliding_window"];
  const swa = window !== undefined && window !== null;
  if (swa !== (layers === SWA_LAYERS)) {
    // transformers: with a window, global layers have no RoPE; without one,
    // every layer is global with RoPE.
    return `sliding_window ${JSON.stringify(window ?? null)} with ${layers} layers ` +
      `(llama.cpp's exaone4 runs a sliding window exactly when a model has ${SWA_LAYERS} layers)`;
  }
  if (swa && slidingLayers(w, layers) === undefined) {
    return "no layer_types or sliding_window_pattern giving every layer's attention " +
      "(the converter writes the sliding-window pattern from them)";
  }
  const rope = w.fullRope;
  if (String(rope["rope_type"]).toLowerCase() === "llama3" && typeof rope["factor"] !== "number") {
    // The converter's default factor here is 16, Llama's 8; transformers needs one.
    return "rope_type llama3 without factor";
  }
  return undefined;
}

/** `Exaone4Model.set_gguf_parameters` (EXAONE MoE's too). */
export function writeExaone4Kv(w: KvWriter): void {
  writeTextModelKv(w);
  w.u32("vocab_size", w.need("vocab_size"));
  const window = w.hparams["sliding_window"];
  if (window !== undefined && window !== null) {
    w.u32("attention.sliding_window", window);
    const pattern = slidingLayers(w, w.need("num_hidden_layers"));
    if (pattern !== undefined) w.setArray("attention.sliding_window_pattern", "BOOL", pattern);
  }
}

/**
 * Which layers slide, as the converter reads them: `layer_types`, else
 * `sliding_window_pattern` as a string repeated over the layers (`"LLLG"`,
 * L sliding) or a period (4: every fourth layer global); `undefined` when
 * neither says.
 */
export function slidingLayers(w: KvWriter, layers: number): boolean[] | undefined {
  const types = w.hparams["layer_types"];
  if (Array.isArray(types)) return types.map((t) => t === "sliding_attention");
  const pattern = w.hparams["sliding_window_pattern"];
  const all = Array.from({ length: layers }, (_, i) => i);
  if (typeof pattern === "string" && pattern.length > 0) {
    return all.map((i) => pattern[i % pattern.length] === "L");
  }
  if (Number.isSafeInteger(pattern) && (pattern as number) > 0) {
    return all.map((i) => (i + 1) % (pattern as number) !== 0);
  }
  return undefined;
}

/** EXAONE 4.0 (1.2B, 32B). */
export const EXAONE4: Family = {
  name: "exaone4",
  source: "llama.cpp conversion/exaone.py Exaone4Model; transformers Exaone4ForCausalLM",
  configFields: {
    checked: ["sliding_window", "layer_types", "sliding_window_pattern"],
    assumed: [activation("hidden_act", SILU)],
  },
  hfArchitectures: ["Exaone4ForCausalLM"],
  hfModelTypes: ["exaone4"],
  ggufArchitecture: "exaone4",
  ggufRopeType: "neox",
  blockNames: OLMO2.blockNames,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv: writeExaone4Kv, unsupported: exaone4Unsupported, generate: llama3RopeFreqs },
  // The converter names LGAI-EXAONE/EXAONE-4.0-32B's tokenizer exaone4 by its hash.
  preTokenizer: "exaone4",
};
