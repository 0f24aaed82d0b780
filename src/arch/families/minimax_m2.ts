// This module is browser compatible.

/**
 * MiniMax-M2 (`MiniMaxM2ForCausalLM`: MiniMax-M2, M2.1), after llama.cpp's
 * `MiniMaxM2Model` (conversion/minimax.py), GGUF architecture `minimax-m2`.
 *
 * Attention: RMSNorms over the whole Q and K projections (all heads at
 * once, as OLMo 2's), RoPE on the first `rotary_dim` dims of each head with
 * `rotate_half` (llama.cpp's NEOX, nothing permuted). Every layer is MoE:
 * Mixtral's `block_sparse_moe.experts.E.w1/w2/w3` stacked into
 * `ffn_*_exps`, the router `block_sparse_moe.gate`, and its selection bias
 * `block_sparse_moe.e_score_correction_bias` (`exp_probs_b.bias`).
 * transformers always scores the experts with a sigmoid and normalises the
 * top-k weights, as llama.cpp's graph does (`norm_w` true, no scale).
 *
 * realizar has no MiniMax model: APR output keeps the checkpoint's tensors,
 * the router and experts under the names realizar's MoE loader asks for
 * (Mixtral's).
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { scoringRefusal, writeTextModelKvScoredBy } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";
import { scoreBiasHfName, scoreBiasReadName } from "../router_bias.ts";
import { MIXTRAL_APR, MIXTRAL_EXPERTS } from "./mixtral.ts";

/** The rotated dims: `rotary_dim` (published configs), else transformers' `partial_rotary_factor` of the head. */
function rotaryDims(w: KvWriter): number {
  const given = w.num("rotary_dim");
  if (given !== undefined) return given;
  const partial = w.rope["partial_rotary_factor"];
  return Math.trunc(w.need("head_dim") * (typeof partial === "number" ? partial : 1));
}

/** `MiniMaxM2Model.set_gguf_parameters`, the router's sigmoid written also without `scoring_func`. */
function writeMiniMaxM2Kv(w: KvWriter): void {
  writeTextModelKvScoredBy(w, "sigmoid");
  w.u32("expert_feed_forward_length", w.need("intermediate_size"));
  w.u32("rope.dimension_count", rotaryDims(w));
}

/** What of a config llama.cpp's `minimax-m2` would run otherwise than transformers, or `undefined`. */
function unsupported(w: KvWriter): string | undefined {
  return scoringRefusal(w, "sigmoid", "MiniMax-M2");
}

/** MiniMax-M2, M2.1. */
export const MINIMAX_M2: Family = {
  name: "minimax-m2",
  apr: MIXTRAL_APR,
  source: "llama.cpp conversion/minimax.py MiniMaxM2Model; transformers MiniMaxM2ForCausalLM",
  configFields: {
    // rope.dimension_count (not a field of transformers' class, which reads it as partial_rotary_factor).
    written: ["rotary_dim"],
    checked: ["scoring_func"],
    assumed: [activation("hidden_act", SILU)],
  },
  hfArchitectures: ["MiniMaxM2ForCausalLM"],
  hfModelTypes: ["minimax_m2"],
  ggufArchitecture: "minimax-m2",
  ggufRopeType: "neox",
  blockNames: [
    ...LLAMA_BLOCK,
    ["ffn_gate_inp", "block_sparse_moe.gate"],
    ["exp_probs_b", "block_sparse_moe.e_score_correction"],
  ],
  experts: MIXTRAL_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  // The experts' width is intermediate_size, which the converter writes to both keys.
  hfWidthKeys: { moe_intermediate_size: "intermediate_size" },
  gguf: {
    writeKv: writeMiniMaxM2Kv,
    unsupported,
    hfName: scoreBiasReadName,
    hfNameBack: scoreBiasHfName,
  },
  // The converter names MiniMaxAI/MiniMax-M2's tokenizer minimax-m2 by its hash.
  preTokenizer: "minimax-m2",
};
