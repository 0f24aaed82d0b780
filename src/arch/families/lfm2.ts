// This module is browser compatible.

/**
 * LFM2 (`Lfm2ForCausalLM`), after llama.cpp's `LFM2Model`
 * (conversion/lfm2.py): gated short-convolution layers (`conv.in_proj`, the
 * depthwise `conv.conv` squeezed to `[channels, kernel]`, `conv.out_proj`)
 * and attention layers with per-head Q/K norms, the pattern written as
 * `attention.head_count_kv` per layer (0 for a convolution layer), the
 * convolution's cache `shortconv.l_cache`, and the SwiGLU width as transformers
 * adjusts it (`block_auto_adjust_ff_dim`). The final norm is
 * `model.embedding_norm` (GGUF `token_embd_norm`); NEOX RoPE, no Q/K permute.
 *
 * @module
 */

import type { Family } from "../family.ts";
import { KvWriter } from "../kv.ts";
import { squeezed, ssmTensors } from "../ssm.ts";
import { writeTextModelKv } from "../text_model.ts";

/** Whether each layer attends: `layer_types`, else `full_attn_idxs` (transformers' fallback). */
function attends(w: KvWriter): boolean[] {
  const n = w.need("num_hidden_layers");
  const types = w.hparams["layer_types"];
  if (Array.isArray(types)) return types.map((t) => t !== "conv");
  const indices = w.hparams["full_attn_idxs"];
  const set = new Set(Array.isArray(indices) ? indices : []);
  return Array.from({ length: n }, (_, i) => set.has(i));
}

/** The SwiGLU width transformers builds (`Lfm2MLP`), which the converter writes. */
function ffWidth(w: KvWriter): number {
  let ff = w.need("block_ff_dim", "intermediate_size");
  if (w.hparams["block_auto_adjust_ff_dim"] === true) {
    ff = Math.trunc((2 * ff) / 3);
    const multiplier = w.hparams["block_ffn_dim_multiplier"];
    if (typeof multiplier === "number") ff = Math.trunc(multiplier * ff);
    const of = w.need("block_multiple_of");
    ff = of * Math.floor((ff + of - 1) / of);
  }
  return ff;
}

/** `LFM2Model.set_gguf_parameters`. */
function writeKv(w: KvWriter): void {
  const kv = w.need("num_key_value_heads");
  // TextModel's keys with the per-layer list in head_count_kv's place.
  const inner = new KvWriter(w.hparams, w.arch);
  writeTextModelKv(inner);
  for (const [key, entry] of inner.entries()) w.put(key, entry);
  w.setArray("attention.head_count_kv", "INT32", attends(w).map((a) => a ? kv : 0));
  w.u32("vocab_size", w.need("vocab_size"));
  w.u32("shortconv.l_cache", w.need("conv_L_cache"));
  w.f32("attention.layer_norm_rms_epsilon", w.need("norm_eps"));
  w.u32("feed_forward_length", ffWidth(w));
}

/** LFM2. */
export const LFM2: Family = {
  name: "lfm2",
  source: "llama.cpp conversion/lfm2.py LFM2Model; transformers Lfm2ForCausalLM",
  configFields: {
    written: [
      "layer_types",
      "full_attn_idxs",
      "conv_L_cache",
      "norm_eps",
      "block_auto_adjust_ff_dim",
      "block_ffn_dim_multiplier",
      "block_multiple_of",
    ],
    assumed: [{ field: "conv_bias", hfDefault: false, llamaCpp: false }],
  },
  hfArchitectures: ["Lfm2ForCausalLM", "LFM2ForCausalLM"],
  hfModelTypes: ["lfm2"],
  ggufArchitecture: "lfm2",
  ggufRopeType: "neox",
  blockNames: [
    ["attn_q", "self_attn.q_proj"],
    ["attn_k", "self_attn.k_proj"],
    ["attn_v", "self_attn.v_proj"],
    ["attn_output", "self_attn.out_proj"],
    ["attn_q_norm", "self_attn.q_layernorm"],
    ["attn_k_norm", "self_attn.k_layernorm"],
    ["shortconv.in_proj", "conv.in_proj"],
    ["shortconv.out_proj", "conv.out_proj"],
    ["ffn_gate", "feed_forward.w1"],
    ["ffn_up", "feed_forward.w3"],
    ["ffn_down", "feed_forward.w2"],
    ["attn_norm", "operator_norm"],
    ["ffn_norm", "ffn_norm"],
  ],
  globalNames: [["token_embd_norm", "model.embedding_norm"]],
  hybrid: true,
  hfWidth: (hparams) => ffWidth(new KvWriter(hparams, "lfm2")),
  permutesQk: false,
  tiedByDefault: true,
  ggufRenamesOnly: false,
  ggufReadBackRefusal: "aprkit does not read an LFM2 GGUF back into Hugging Face's layout (its " +
    "short convolution is squeezed, its shortconv names are not mapped back); --keep-names " +
    "keeps its GGUF tensors",
  gguf: {
    writeKv,
    made: (tensors, w) =>
      ssmTensors(tensors, w, "model.layers", [
        { piece: "conv.conv.weight", gguf: "shortconv.conv.weight", shape: squeezed },
      ]),
  },
};
