// This module is browser compatible.

/**
 * GPT-2 (`GPT2LMHeadModel`) and StarCoder / SantaCoder
 * (`GPTBigCodeForCausalLM`), after llama.cpp's `GPT2Model`
 * (conversion/gpt2.py) and `StarCoderModel` (conversion/starcoder.py): the
 * `transformer.h.N` block of GPT-2 — LayerNorms with biases, one fused
 * `c_attn` (`attn_qkv`), a GELU MLP 4 × hidden wide (`c_fc`, `c_proj`),
 * learned absolute positions (`wpe` → `position_embd`), no RoPE, tied
 * embeddings. GPT-2 stores its projections as `Conv1D`, `[in, out]`: the
 * converter transposes them (and a GGUF read back transposes them again);
 * GPTBigCode's are `Linear`, with multi-query attention (one KV head, which
 * llama.cpp's starcoder assumes).
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { activation, type ConfigFields, GELU } from "../config_fields.ts";

/** The GPT-2 block under `transformer.h.N`. */
const GPT2_BLOCK: readonly (readonly [string, string])[] = [
  ["attn_norm", "ln_1"],
  ["attn_qkv", "attn.c_attn"],
  ["attn_output", "attn.c_proj"],
  ["ffn_norm", "ln_2"],
  ["ffn_up", "mlp.c_fc"],
  ["ffn_down", "mlp.c_proj"],
];

/** GPT-2's whole-model tensors (the output head is `lm_head`, as everywhere). */
const GPT2_GLOBALS: readonly (readonly [string, string])[] = [
  ["token_embd", "transformer.wte"],
  ["position_embd", "transformer.wpe"],
  ["output_norm", "transformer.ln_f"],
];

/** GPT-2's `Conv1D` weights, stored `[in, out]`. */
const CONV1D = /^transformer\.h\.\d+\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight$/;

/**
 * The keys both converters write, in GPT-2's order: no head size, no RoPE,
 * the feed-forward width as 4 × hidden whatever `n_inner` says.
 */
function writeGpt2Kv(w: KvWriter): void {
  w.u32("block_count", w.need("n_layer", "num_hidden_layers"));
  w.u32("context_length", w.need("n_ctx", "n_positions"));
  w.u32("embedding_length", w.need("n_embd", "hidden_size"));
  w.u32("feed_forward_length", 4 * w.need("n_embd", "hidden_size"));
  w.u32("attention.head_count", w.need("n_head", "num_attention_heads"));
  w.f32("attention.layer_norm_epsilon", w.need("layer_norm_epsilon"));
  w.fileType();
}

/** `StarCoderModel.set_gguf_parameters`: GPT-2's keys in its own order, one KV head. */
function writeStarCoderKv(w: KvWriter): void {
  w.u32("context_length", w.need("n_positions", "max_position_embeddings"));
  w.u32("embedding_length", w.need("n_embd", "hidden_size"));
  w.u32("feed_forward_length", 4 * w.need("n_embd", "hidden_size"));
  w.u32("block_count", w.need("n_layer", "num_hidden_layers"));
  w.u32("attention.head_count", w.need("n_head", "num_attention_heads"));
  w.cite("multi_query");
  w.u32("attention.head_count_kv", 1);
  w.f32("attention.layer_norm_epsilon", w.need("layer_norm_epsilon"));
  w.fileType();
}

/**
 * What llama.cpp's gpt2/starcoder cannot load as written: an MLP other than
 * 4 × hidden (the converter writes that width, and llama.cpp sizes the
 * tensors by it), and, for GPT-2, a context other than the position table
 * (llama.cpp sizes `position_embd` by the context length, which the
 * converter takes from `n_ctx`).
 */
function gpt2Shape(w: KvWriter, family: string): string | undefined {
  const hidden = w.need("n_embd", "hidden_size");
  const inner = w.hparams["n_inner"];
  if (inner !== undefined && inner !== null && inner !== 4 * hidden) {
    return `its config.json has n_inner ${JSON.stringify(inner)}; llama.cpp's ${family} ` +
      `reads the feed-forward width the converter writes, 4 × n_embd = ${4 * hidden}`;
  }
  return undefined;
}

function gpt2Unsupported(w: KvWriter): string | undefined {
  const shape = gpt2Shape(w, "gpt2");
  if (shape !== undefined) return shape;
  const ctx = w.num("n_ctx");
  const positions = w.num("n_positions");
  if (ctx !== undefined && positions !== undefined && ctx !== positions) {
    return `its config.json has n_ctx ${ctx} and n_positions ${positions}; llama.cpp's gpt2 ` +
      `sizes the position table by the context length the converter writes (n_ctx)`;
  }
  return undefined;
}

/** The fields GPT-2 and GPTBigCode share (GPTBigCode has no per-layer scaling or reordering). */
const GPT2_SHARED_FIELDS = {
  written: ["n_positions", "n_embd", "n_layer", "n_head", "layer_norm_epsilon"],
  irrelevant: { attn_pdrop: "training only (dropout)" },
} as const;

/**
 * GPT2Config: `scale_attn_weights` (÷√head size) and no per-layer scaling
 * are what llama.cpp's gpt2 computes; `reorder_and_upcast_attn` only
 * computes the same product in float32; the `summary_*` fields are
 * `GPT2DoubleHeadsModel`'s classification head.
 */
const GPT2_FIELDS: ConfigFields = {
  written: [...GPT2_SHARED_FIELDS.written, "n_ctx"],
  checked: ["n_inner", "n_ctx"],
  assumed: [
    activation("activation_function", GELU, "gelu_new"),
    { field: "scale_attn_weights", hfDefault: true, llamaCpp: true },
    { field: "scale_attn_by_inverse_layer_idx", hfDefault: false, llamaCpp: false },
    { field: "add_cross_attention", hfDefault: false, llamaCpp: false },
  ],
  irrelevant: {
    ...GPT2_SHARED_FIELDS.irrelevant,
    reorder_and_upcast_attn: "the same attention product, computed in float32 (precision only)",
    ...Object.fromEntries(
      [
        "summary_type",
        "summary_use_proj",
        "summary_activation",
        "summary_proj_to_labels",
        "summary_first_dropout",
      ].map((f) => [f, "GPT2DoubleHeadsModel's classification head, not the language model"]),
    ),
  },
};

/**
 * GPTBigCodeConfig: multi-query attention is what llama.cpp's starcoder
 * computes (one KV head); the softmax-in-float32 switches only change
 * precision.
 */
const GPT_BIGCODE_FIELDS: ConfigFields = {
  written: GPT2_SHARED_FIELDS.written,
  checked: ["n_inner"],
  assumed: [
    activation("activation_function", GELU),
    { field: "multi_query", hfDefault: true, llamaCpp: true },
    { field: "scale_attn_weights", hfDefault: true, llamaCpp: true },
    { field: "add_cross_attention", hfDefault: false, llamaCpp: false },
  ],
  irrelevant: {
    ...GPT2_SHARED_FIELDS.irrelevant,
    attention_softmax_in_fp32: "the same softmax, computed in float32 (precision only)",
    scale_attention_softmax_in_fp32: "the same softmax, computed in float32 (precision only)",
  },
};

/** GPT-2. */
export const GPT2: Family = {
  name: "gpt2",
  source: "llama.cpp conversion/gpt2.py GPT2Model; transformers GPT2LMHeadModel",
  configFields: GPT2_FIELDS,
  hfArchitectures: ["GPT2LMHeadModel"],
  hfModelTypes: ["gpt2"],
  ggufArchitecture: "gpt2",
  ggufRopeType: "none",
  hfBlockPrefix: "transformer.h",
  blockNames: GPT2_BLOCK,
  globalNames: GPT2_GLOBALS,
  permutesQk: false,
  noRope: true,
  tiedByDefault: true,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeGpt2Kv,
    unsupported: gpt2Unsupported,
    transposed: (name) => CONV1D.test(name),
    // Old checkpoints' causal-mask buffers (`GPT2Model.modify_tensors`: "we don't need these").
    drops: (name) => /\.attn\.(masked_)?bias$/.test(name),
  },
};

/** StarCoder, SantaCoder (GPTBigCode). */
export const STARCODER: Family = {
  ...GPT2,
  name: "starcoder",
  source: "llama.cpp conversion/starcoder.py StarCoderModel; transformers GPTBigCodeForCausalLM",
  configFields: GPT_BIGCODE_FIELDS,
  hfArchitectures: ["GPTBigCodeForCausalLM"],
  hfModelTypes: ["gpt_bigcode"],
  ggufArchitecture: "starcoder",
  // llama_model_rope_type() lists starcoder as NORM, though its graph rotates nothing.
  ggufRopeType: "norm",
  ggufRenamesOnly: true,
  gguf: { writeKv: writeStarCoderKv, unsupported: (w) => gpt2Shape(w, "starcoder") },
};
