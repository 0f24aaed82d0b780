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

import type { TensorInfo } from "../../tensor.ts";
import type { Family, JoinedTensor } from "../family.ts";
import { expertBiasHfName, expertBiasReadName } from "../router_bias.ts";
import { KvWriter } from "../kv.ts";
import { squeezed, ssmTensors } from "../ssm.ts";
import { GATING_FUNC, writeTextModelKv } from "../text_model.ts";

/** Whether each layer attends: `layer_types`, else `full_attn_idxs` (transformers' fallback). */
function attends(w: KvWriter): boolean[] {
  const n = w.need("num_hidden_layers");
  const types = w.find("layer_types");
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

/** TextModel's keys with the per-layer list in head_count_kv's place (0 for a convolution layer). */
function writeLayersKv(w: KvWriter): void {
  const kv = w.need("num_key_value_heads");
  w.writeOver(w.hparams, writeTextModelKv);
  w.setArray("attention.head_count_kv", "INT32", attends(w).map((a) => a ? kv : 0));
}

/** `LFM2Model.set_gguf_parameters`. */
function writeKv(w: KvWriter): void {
  writeLayersKv(w);
  w.u32("vocab_size", w.need("vocab_size"));
  w.u32("shortconv.l_cache", w.need("conv_L_cache"));
  w.f32("attention.layer_norm_rms_epsilon", w.need("norm_eps"));
  w.u32("feed_forward_length", ffWidth(w));
}

const SHORTCONV = /^blk\.(\d+)\.shortconv\.(in_proj|out_proj)\.weight$/;
const SHORTCONV_CONV = /^blk\.(\d+)\.shortconv\.conv\.weight$/;

/**
 * A GGUF's short-convolution projections (`blk.N.shortconv.in_proj`, names
 * with a dot, which the block table cannot map back) named back.
 */
function shortconvNameBack(name: string): string {
  return name.replace(SHORTCONV, "model.layers.$1.conv.$2.weight");
}

/**
 * A GGUF read back: the squeezed short convolution, `[channels, kernel]`, as
 * the checkpoint's `[channels, 1, kernel]` (the same bytes).
 */
function convJoinedBack(tensors: readonly TensorInfo[]): JoinedTensor[] {
  return tensors.flatMap((info): JoinedTensor[] => {
    const layer = SHORTCONV_CONV.exec(info.name)?.[1];
    const [channels, kernel] = info.shape;
    if (layer === undefined || info.shape.length !== 2) return [];
    return [{
      name: `model.layers.${layer}.conv.conv.weight`,
      shape: [channels!, 1, kernel!],
      parts: [{ name: info.name }],
      blocks: 1,
    }];
  });
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
  // LFM2-VL's composite (Lfm2VlForConditionalGeneration) around an lfm2 text config.
  hfModelTypes: ["lfm2", "lfm2_vl"],
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
  gguf: {
    writeKv,
    made: (tensors, w) =>
      ssmTensors(tensors, w, "model.layers", [
        { piece: "conv.conv.weight", gguf: "shortconv.conv.weight", shape: squeezed },
      ]),
    joinedBack: convJoinedBack,
    hfNameBack: shortconvNameBack,
  },
  // The converter names LiquidAI/LFM2.5-350M's tokenizer lfm2 by its hash.
  preTokenizer: "lfm2",
};

/** `LFM2MoeModel.set_gguf_parameters`: LFM2's layer keys, the experts' width, sigmoid routing. */
function writeMoeKv(w: KvWriter): void {
  writeLayersKv(w);
  w.u32("expert_feed_forward_length", w.need("moe_intermediate_size"));
  w.u32("leading_dense_block_count", w.need("num_dense_layers"));
  w.u32("expert_gating_func", GATING_FUNC["sigmoid"]);
  w.u32("vocab_size", w.need("vocab_size"));
  w.u32("shortconv.l_cache", w.need("conv_L_cache"));
}

const { hfWidth: _width, ...LFM2_BASE } = LFM2;

/** LFM2 with MoE (LFM2-8B-A1B): llama.cpp's `lfm2moe`. */
export const LFM2_MOE: Family = {
  ...LFM2_BASE,
  name: "lfm2moe",
  source: "llama.cpp conversion/lfm2.py LFM2MoeModel; transformers Lfm2MoeForCausalLM",
  configFields: {
    written: [
      "layer_types",
      "conv_L_cache",
      "norm_eps",
      "num_dense_layers",
      "moe_intermediate_size",
    ],
    assumed: [
      { field: "conv_bias", hfDefault: false, llamaCpp: false },
      // llama.cpp's lfm2moe loads the selection bias always, normalises the
      // top-k weights always and reads no scale for them.
      { field: "use_expert_bias", hfDefault: true, llamaCpp: true },
      { field: "norm_topk_prob", hfDefault: true, llamaCpp: true },
      { field: "routed_scaling_factor", hfDefault: 1, llamaCpp: 1 },
    ],
  },
  hfArchitectures: ["Lfm2MoeForCausalLM"],
  hfModelTypes: ["lfm2_moe"],
  ggufArchitecture: "lfm2moe",
  blockNames: [
    ...LFM2.blockNames,
    ["ffn_gate_inp", "feed_forward.gate"],
    // The selection bias, read as feed_forward.expert_bias.bias.
    ["exp_probs_b", "feed_forward.expert_bias"],
  ],
  experts: {
    prefix: "feed_forward.experts",
    stacks: [
      { hf: "w1", gguf: "ffn_gate_exps" },
      { hf: "w2", gguf: "ffn_down_exps" },
      { hf: "w3", gguf: "ffn_up_exps" },
    ],
  },
  tiedByDefault: true,
  gguf: {
    ...LFM2.gguf!,
    writeKv: writeMoeKv,
    hfName: expertBiasReadName,
    hfNameBack: (name) => expertBiasHfName(shortconvNameBack(name)),
  },
  // The converter names LiquidAI/LFM2.5-8B-A1B's tokenizer lfm2 by its hash.
  preTokenizer: "lfm2",
};
