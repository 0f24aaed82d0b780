// This module is browser compatible.

/**
 * Gemma 4's speculative-decoding drafters (`Gemma4AssistantForCausalLM`,
 * `Gemma4UnifiedAssistantForCausalLM`), after llama.cpp's
 * `Gemma4AssistantModel` (conversion/gemma.py): Gemma 4's text keys and
 * tensors, then `embedding_length_out` (the target's width,
 * `backbone_hidden_size`) and `nextn_predict_layers` (every layer), the
 * projections from and to the target as `nextn.pre_projection` /
 * `nextn.post_projection`. Every layer reads the target's KV, so the layers
 * have no K/V projections; the masked embedder (`use_ordered_embeddings`) is
 * dropped as the converter drops it.
 *
 * A drafter runs only on its target's hidden states and KV: neither
 * llama.cpp nor transformers computes it alone, so it is judged by the
 * converter's files only.
 *
 * @module
 */

import type { ConfigFields } from "../config_fields.ts";
import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { MODEL_TENSORS, TENSOR_NAMES } from "../_gguf_tables.ts";
import {
  GEMMA4,
  GEMMA4_FIELDS,
  perLayerUnsupported,
  ropeUnsupported,
  withDefaultRope,
  writeGemma4Kv,
} from "./gemma4.ts";

/** The GGUF block names llama.cpp lists for `gemma4-assistant` (no MoE block, no per-layer input). */
const ASSISTANT_BLOCK_NAMES = new Set(
  MODEL_TENSORS["gemma4-assistant"]!.split(" ").map((kind) => TENSOR_NAMES[kind]),
);

/** `Gemma4AssistantModel.set_gguf_parameters`: Gemma 4's keys, the target's width, the drafting layers. */
function writeAssistantKv(w: KvWriter): void {
  writeGemma4Kv(w);
  w.u32("embedding_length_out", w.need("backbone_hidden_size"));
  w.u32("nextn_predict_layers", w.need("num_hidden_layers"));
}

/**
 * Gemma 4's checks but its KV reuse: every drafter layer reads the target's
 * KV (`num_kv_shared_layers` = layers, as transformers requires).
 */
function unsupported(given: KvWriter): string | undefined {
  const w = withDefaultRope(given);
  const layers = w.num("num_hidden_layers");
  const shared = w.num("num_kv_shared_layers");
  if (shared !== layers) {
    return `its config.json has num_kv_shared_layers ${shared} of ${layers} layers; a Gemma 4 ` +
      `drafter reads its target's KV in every layer`;
  }
  return ropeUnsupported(w) ?? perLayerUnsupported(w);
}

/** The masked embedder's tensors (`Gemma4AssistantModel.filter_tensors` skips them). */
function drops(name: string): boolean {
  return name.includes("masked_embedding");
}

/**
 * Gemma 4's fields, and the drafter's own: the target's width written, the
 * masked embedder's settings said to be dropped when it is used.
 */
const ASSISTANT_FIELDS: ConfigFields = {
  ...GEMMA4_FIELDS,
  written: [...GEMMA4_FIELDS.written ?? [], "backbone_hidden_size"],
  caveats: [
    ...GEMMA4_FIELDS.caveats ?? [],
    {
      fields: ["use_ordered_embeddings", "num_centroids", "centroid_intermediate_top_k"],
      warn: (w) =>
        w.hparams["use_ordered_embeddings"] === true
          ? "its masked embedder (use_ordered_embeddings: scoring only the tokens of the " +
            "top centroid_intermediate_top_k centroids) is left out, as llama.cpp's converter " +
            "leaves it out: llama.cpp drafts from the whole vocabulary"
          : undefined,
    },
  ],
};

// Without the MoE block's experts (the drafters have none).
const { experts: _experts, ...GEMMA4_DENSE } = GEMMA4;

/** Gemma 4's drafters (`gemma4-assistant`). */
export const GEMMA4_ASSISTANT: Family = {
  ...GEMMA4_DENSE,
  name: "gemma4-assistant",
  source: "llama.cpp conversion/gemma.py Gemma4AssistantModel; transformers " +
    "Gemma4AssistantForCausalLM, Gemma4UnifiedAssistantForCausalLM",
  configFields: ASSISTANT_FIELDS,
  hfArchitectures: ["Gemma4AssistantForCausalLM", "Gemma4UnifiedAssistantForCausalLM"],
  hfModelTypes: ["gemma4_assistant", "gemma4_unified_assistant"],
  ggufArchitecture: "gemma4-assistant",
  blockNames: GEMMA4.blockNames.filter(([gguf]) => ASSISTANT_BLOCK_NAMES.has(`blk.{bid}.${gguf}`)),
  globalNames: [
    ["nextn.pre_projection", "pre_projection"],
    ["nextn.post_projection", "post_projection"],
  ],
  gguf: {
    ...GEMMA4.gguf!,
    writeKv: writeAssistantKv,
    unsupported,
    drops,
  },
};
