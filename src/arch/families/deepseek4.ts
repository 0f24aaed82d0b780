// This module is browser compatible.

/**
 * DeepSeek-V4 (`DeepseekV4ForCausalLM`: V4-Flash, V4-Pro), after llama.cpp's
 * `DeepseekV4Model` (conversion/deepseek.py), GGUF architecture `deepseek4`;
 * APR only, its GGUF refused (below).
 *
 * Not MLA: one shared KV head (`attn.wkv`, read as key and value) behind a q
 * LoRA, the last `qk_rope_head_dim` dims of each head rotated by adjacent
 * pairs (NORM; transformers' interleaved RoPE, so nothing is permuted), a sink
 * per head and a grouped low-rank output projection (`wo_a`, `wo_b`). Every
 * layer attends within `sliding_window`; a layer whose `compress_ratios` entry
 * is 4 (CSA) also over overlapping 4-token compressed blocks, chosen by a
 * lightning indexer, one of 128 (HCA) over 128-token ones, both with their own
 * RoPE base (`compress_rope_theta`) under the YaRN `rope_scaling`. 4
 * hyper-connection streams (Sinkhorn-mixed) replace the residual
 * (`hc_attn_*`, `hc_ffn_*` per layer, `hc_head_*` before the final norm).
 * Every layer is MoE: the first `num_hash_layers` route by a token → expert
 * table (`ffn.gate.tid2eid`), the rest by sqrt(softplus) scores with a
 * selection bias; a shared expert beside them; the routed and shared SwiGLU
 * clamped at `swiglu_limit`. The tensor names are the published
 * checkpoint's, not transformers' (it loads them renamed), with the routed
 * experts in MXFP4 (`w1`/`w2`/`w3.weight` I8 of E2M1 pairs, `.scale`
 * F8_E8M0), the only form the converter takes.
 *
 * No GGUF is written: the converter writes the routed experts as MXFP4
 * whatever `--outtype`, and llama.cpp's CPU kernel multiplies MXFP4 weights
 * by activations rounded to Q8_0, which moves expert and indexer choices.
 * Measured on the deepseek4 fixture (tests/testdata/families): llama.cpp
 * runs the converter's own F32 file 0.68 off transformers' log-probs (the
 * judge; 0.65 with an F32 KV cache, about 0.03 at most positions), while the
 * same file with its experts dequantized to F32 runs within 0.003 (1e-4
 * with an F32 KV cache): the graph computes as transformers does. llama.cpp
 * also hard-codes what a config could set otherwise: 4 hyper-connection
 * streams (it asserts), compress ratios of 0, 4 and 128 only (it refuses
 * others), sqrt(softplus) scoring (it refuses others) and a Hadamard
 * rotation of the indexer from 64 dims on.
 *
 * realizar has no DeepSeek-V4 model: APR output keeps the checkpoint's
 * tensors under their Hugging Face names (the experts as stored).
 *
 * @module
 */

import type { Family } from "../family.ts";
import { activation, SILU } from "../config_fields.ts";
import { INDEXER_FIELDS } from "./deepseek32.ts";

/** The pieces of a layer the GGUF tables name without `.weight` (published as bare parameters). */
const BARE_PIECES =
  /^(hc_(attn|ffn)_(fn|base|scale)|attn\.attn_sink|attn\.(indexer\.)?compressor\.ape|ffn\.gate\.tid2eid)$/;

/** A routed expert's MXFP4 scales, which belong to its `.weight`. */
const EXPERT_SCALE = /^ffn\.experts\.\d+\.w[123]\.scale$/;

/** Why no DeepSeek-V4 is written as GGUF (measured as the module says). */
const MXFP4_EXPERTS = "DeepseekV4ForCausalLM is not written as GGUF: llama.cpp's converter " +
  "writes its routed experts as MXFP4, which llama.cpp (the one node-llama-cpp 3.22.1 runs) " +
  "multiplies by activations rounded to Q8_0, choosing other experts and blocks (log-probs " +
  "0.68 apart on a converted checkpoint; 0.003 with the experts in F32)";

/** DeepSeek-V4-Flash, V4-Pro. */
export const DEEPSEEK4: Family = {
  name: "deepseek4",
  source: "llama.cpp conversion/deepseek.py DeepseekV4Model; transformers DeepseekV4ForCausalLM",
  configFields: {
    // What the converter writes (DeepseekV4Model.set_gguf_parameters), for the day the
    // refusal is lifted; llama.cpp's deepseek4 reads each of them.
    written: [
      "moe_intermediate_size",
      "q_lora_rank",
      "sliding_window",
      "n_shared_experts",
      "routed_scaling_factor",
      "norm_topk_prob",
      "swiglu_limit",
      ...INDEXER_FIELDS,
      "o_groups",
      "o_lora_rank",
      "compress_rope_theta",
      "hc_mult",
      "hc_sinkhorn_iters",
      "hc_eps",
      "scoring_func",
      // The published form of layer_types/compress_rates and mlp_layer_types
      // (compress_ratios, num_hash_layers), which the converter reads.
      "layer_types",
      "compress_rates",
      "mlp_layer_types",
      "compress_ratios",
      "num_hash_layers",
      // transformers' head_dim × partial_rotary_factor, published under this name.
      "qk_rope_head_dim",
      "num_nextn_predict_layers",
    ],
    assumed: [activation("hidden_act", SILU)],
    irrelevant: {
      output_router_logits: "what a transformers forward call returns, not what it computes",
      router_aux_loss_coef: "training only (the load-balancing loss)",
      router_jitter_noise: "training only (router noise)",
      topk_method: '"noaux_tc" as published: the selection bias added for choosing only, ' +
        "as transformers and llama.cpp both compute (not a DeepseekV4Config field)",
    },
  },
  hfArchitectures: ["DeepseekV4ForCausalLM"],
  hfModelTypes: ["deepseek_v4"],
  ggufArchitecture: "deepseek4",
  ggufRopeType: "norm",
  // transformers' V4 rotates adjacent pairs (its interleaved RoPE), as llama.cpp's NORM.
  hfRopeInterleaved: true,
  hfBlockPrefix: "layers",
  blockNames: [
    ["attn_norm", "attn_norm"],
    ["attn_sinks", "attn.attn_sink"],
    ["attn_q_a", "attn.wq_a"],
    ["attn_q_a_norm", "attn.q_norm"],
    ["attn_q_b", "attn.wq_b"],
    ["attn_kv", "attn.wkv"],
    ["attn_kv_a_norm", "attn.kv_norm"],
    ["attn_output_a", "attn.wo_a"],
    ["attn_output_b", "attn.wo_b"],
    ["attn_compressor_ape", "attn.compressor.ape"],
    ["attn_compressor_kv", "attn.compressor.wkv"],
    ["attn_compressor_gate", "attn.compressor.wgate"],
    ["attn_compressor_norm", "attn.compressor.norm"],
    ["indexer.attn_q_b", "attn.indexer.wq_b"],
    ["indexer.proj", "attn.indexer.weights_proj"],
    ["indexer_compressor_ape", "attn.indexer.compressor.ape"],
    ["indexer_compressor_kv", "attn.indexer.compressor.wkv"],
    ["indexer_compressor_gate", "attn.indexer.compressor.wgate"],
    ["indexer_compressor_norm", "attn.indexer.compressor.norm"],
    ["hc_attn_fn", "hc_attn_fn"],
    ["hc_attn_base", "hc_attn_base"],
    ["hc_attn_scale", "hc_attn_scale"],
    ["hc_ffn_fn", "hc_ffn_fn"],
    ["hc_ffn_base", "hc_ffn_base"],
    ["hc_ffn_scale", "hc_ffn_scale"],
    ["ffn_norm", "ffn_norm"],
    ["ffn_gate_inp", "ffn.gate"],
    ["exp_probs_b", "ffn.gate"],
    ["ffn_gate_tid2eid", "ffn.gate.tid2eid"],
    ["ffn_gate_shexp", "ffn.shared_experts.w1"],
    ["ffn_down_shexp", "ffn.shared_experts.w2"],
    ["ffn_up_shexp", "ffn.shared_experts.w3"],
  ],
  globalNames: [
    ["token_embd", "embed"],
    ["output_norm", "norm"],
    ["output", "head"],
  ],
  experts: {
    prefix: "ffn.experts",
    stacks: [
      { hf: "w1", gguf: "ffn_gate_exps" },
      { hf: "w2", gguf: "ffn_down_exps" },
      { hf: "w3", gguf: "ffn_up_exps" },
    ],
  },
  // Bare parameters and the experts' scales: no `.weight` name the tables map.
  hfKeptPiece: (piece) => BARE_PIECES.test(piece) || EXPERT_SCALE.test(piece),
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  ggufRefusal: MXFP4_EXPERTS,
  ggufReadBackRefusal:
    "aprkit does not read a DeepSeek-V4 GGUF back into Hugging Face's layout (its experts are " +
    "stacked MXFP4, the hash routing table I32, the MTP layer's e/h projections concatenated); " +
    "--keep-names keeps its GGUF tensors",
};
