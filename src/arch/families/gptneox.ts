// This module is browser compatible.

/**
 * GPT-NeoX / Pythia (`GPTNeoXForCausalLM`), after llama.cpp's
 * `GPTNeoXModel` (conversion/gptneox.py): `gpt_neox.layers.N` blocks with
 * LayerNorms with biases, attention and MLP in parallel
 * (`use_parallel_residual`), a GELU MLP, NEOX RoPE on `rotary_pct` of each
 * head, an untied `embed_out`. Its fused `query_key_value` holds each head's
 * q, k and v rows together; the converter regroups them as all q, all k, all
 * v (and a GGUF read back regroups them per head again).
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { activation, GELU } from "../config_fields.ts";
import { unwrittenRopeRefusal } from "../fixed_rope.ts";

/** The share of each head rotated: the published `rotary_pct`, else transformers 5's `partial_rotary_factor`. */
function rotaryShare(w: KvWriter): number {
  const pct = w.num("rotary_pct") ?? w.rope["partial_rotary_factor"];
  if (typeof pct !== "number") {
    throw new RangeError(
      "config.json has no rotary_pct or partial_rotary_factor (GPT-NeoX needs it)",
    );
  }
  return pct;
}

/** `GPTNeoXModel.set_gguf_parameters`, which writes neither a RoPE base nor a file type. */
function writeGptNeoXKv(w: KvWriter): void {
  const hidden = w.need("hidden_size");
  const heads = w.need("num_attention_heads");
  w.u32("context_length", w.need("max_position_embeddings"));
  w.u32("embedding_length", hidden);
  w.u32("block_count", w.need("num_hidden_layers"));
  w.u32("feed_forward_length", w.need("intermediate_size"));
  w.u32("rope.dimension_count", Math.trunc(rotaryShare(w) * Math.trunc(hidden / heads)));
  w.u32("attention.head_count", heads);
  w.set("use_parallel_residual", "BOOL", w.hparams["use_parallel_residual"] ?? true);
  w.f32("attention.layer_norm_epsilon", w.need("layer_norm_eps"));
}

/**
 * What llama.cpp's gptneox cannot run as written: a RoPE base or scaling
 * (the converter writes no key for either), Q/K/V without biases (it loads
 * them as required tensors).
 */
function gptNeoXUnsupported(w: KvWriter): string | undefined {
  if (w.hparams["attention_bias"] === false) {
    return "its config.json says attention_bias false; llama.cpp's gptneox loads Q/K/V and " +
      "output biases as required tensors";
  }
  return unwrittenRopeRefusal(w);
}

/**
 * A fused Q/K/V (weight and bias) holding each head's q, k and v rows
 * together, `[heads, 3, head_dim]`, as GGUF's `[3, heads, head_dim]`
 * (GPT-NeoX, BLOOM): the block order of `GgufSupport.rowBlocks`.
 *
 * @param heads The attention heads.
 * @returns GGUF's block `i` is the checkpoint's block `order[i]`.
 */
export function qkvPerHeadOrder(heads: number): number[] {
  return Array.from({ length: 3 * heads }, (_, i) => (i % heads) * 3 + Math.floor(i / heads));
}

function qkvByPart(name: string, _shape: readonly number[], heads: number): number[] | undefined {
  return /^gpt_neox\.layers\.\d+\.attention\.query_key_value\.(weight|bias)$/.test(name)
    ? qkvPerHeadOrder(heads)
    : undefined;
}

/** GPT-NeoX, Pythia. */
export const GPTNEOX: Family = {
  name: "gptneox",
  source: "llama.cpp conversion/gptneox.py GPTNeoXModel; transformers GPTNeoXForCausalLM",
  configFields: {
    written: ["use_parallel_residual", "rotary_pct"],
    checked: ["attention_bias"],
    assumed: [activation("hidden_act", GELU, "gelu")],
    irrelevant: {
      classifier_dropout: "training only (dropout)",
      is_decoder: "transformers' encoder-decoder switch, which GPTNeoXForCausalLM does not read",
    },
  },
  hfArchitectures: ["GPTNeoXForCausalLM"],
  hfModelTypes: ["gpt_neox"],
  ggufArchitecture: "gptneox",
  ggufRopeType: "neox",
  hfBlockPrefix: "gpt_neox.layers",
  blockNames: [
    ["attn_norm", "input_layernorm"],
    ["attn_qkv", "attention.query_key_value"],
    ["attn_output", "attention.dense"],
    ["ffn_norm", "post_attention_layernorm"],
    ["ffn_up", "mlp.dense_h_to_4h"],
    ["ffn_down", "mlp.dense_4h_to_h"],
  ],
  globalNames: [
    ["token_embd", "gpt_neox.embed_in"],
    ["output_norm", "gpt_neox.final_layer_norm"],
    ["output", "embed_out"],
  ],
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: { writeKv: writeGptNeoXKv, unsupported: gptNeoXUnsupported, rowBlocks: qkvByPart },
};
