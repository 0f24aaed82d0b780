// This module is browser compatible.

/**
 * JinaBERT v2 sentence embedders (`JinaBertModel`, `JinaBertForMaskedLM`:
 * jina-embeddings-v2-small/base-en, remote code from
 * jinaai/jina-bert-implementation), after llama.cpp's `JinaBertV2Model`
 * (conversion/bert.py, GGUF `jina-bert-v2`): BERT's keys, vocabulary and
 * names, with ALiBi instead of position embeddings (llama.cpp's graph
 * biases the scores itself, nothing is written for it) and a GEGLU
 * feed-forward whose fused `mlp.gated_layers` (gate rows first) is written
 * whole as `ffn_up`, twice `feed_forward_length` rows, which llama.cpp
 * reads as gate and up.
 *
 * @module
 */

import type { ConfigFields } from "../config_fields.ts";
import type { Family } from "../family.ts";
import { BERT, BERT_FIELDS } from "./bert.ts";

/**
 * JinaBertConfig's fields (the remote code's; transformers has no class):
 * BERT's, with the two that make it JinaBERT v2 fixed to what llama.cpp's
 * graph computes, and the remote code's own options.
 */
const JINA_BERT_V2_FIELDS: ConfigFields = {
  ...BERT_FIELDS,
  assumed: [
    ...BERT_FIELDS.assumed ?? [],
    // llama.cpp's jina-bert-v2 graph has ALiBi and no position embeddings.
    { field: "position_embedding_type", hfDefault: "absolute", llamaCpp: "alibi" },
    // ... and a GELU-gated feed-forward (ReGLU's or BERT's "original" are not it).
    { field: "feed_forward_type", hfDefault: "original", llamaCpp: "geglu" },
  ],
  irrelevant: {
    ...BERT_FIELDS.irrelevant,
    emb_pooler: "the remote code's own encode() pooling; modules.json says how to pool",
    attn_implementation: "which attention kernel computes it, not what it computes",
  },
};

/** JinaBERT v2. */
export const JINA_BERT_V2: Family = {
  ...BERT,
  configFields: JINA_BERT_V2_FIELDS,
  name: "jina-bert-v2",
  source:
    "llama.cpp conversion/bert.py JinaBertV2Model; jinaai/jina-bert-implementation JinaBertModel",
  hfArchitectures: ["JinaBertModel", "JinaBertForMaskedLM"],
  // Its config.json says `bert`, which is BERT's: the architecture names it.
  hfModelTypes: [],
  ggufArchitecture: "jina-bert-v2",
  // llama_model_rope_type() lists JINA_BERT_V2 as NONE (ALiBi).
  ggufRopeType: "none",
  noRope: true,
  // BERT's attention; the GLU feed-forward and its norm under `mlp.`.
  blockNames: [
    ...BERT.blockNames.filter(([gguf]) => gguf.startsWith("attn_")),
    ["ffn_up", "mlp.gated_layers"],
    ["ffn_down", "mlp.wo"],
    ["layer_output_norm", "mlp.layernorm"],
  ],
  // ALiBi: no position embeddings.
  globalNames: BERT.globalNames!.filter(([gguf]) => gguf !== "position_embd"),
  // WordPiece (jina-embeddings-v2-small/base-en). The converter writes the BPE vocabularies of
  // -base-zh/-es/-de/-code as gpt2 (or whitespace) with token_type_count after them, untested here.
  ggufVocabularies: ["bert"],
};
