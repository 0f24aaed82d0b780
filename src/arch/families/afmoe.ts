// This module is browser compatible.

/**
 * Arcee's AFMoE (`AfmoeForCausalLM`: Trinity Nano, Mini, Large), after
 * llama.cpp's `AfmoeModel` (conversion/afmoe.py, a `LlamaModel` that does
 * not permute Q/K), GGUF architecture `afmoe`.
 *
 * Attention: per-head Q/K RMSNorms, RoPE on the sliding-window layers only
 * (`rotate_half`: llama.cpp's NEOX), the output gated by a sigmoid of
 * `self_attn.gate_proj` (`attn_gate`), norms before and after attention and
 * the MLP (`post_attention_norm`, `ffn_norm`, `post_ffw_norm`); the
 * embeddings scaled by √hidden (muP). Feed-forward: `num_dense_layers`
 * dense layers, then MoE layers with experts stacked into `ffn_*_exps`,
 * shared experts (`*_shexp`), a sigmoid router `mlp.router.gate` and its
 * selection bias `mlp.expert_bias` (`exp_probs_b.bias`, read back by name).
 *
 * realizar has no AFMoE model: APR output keeps the checkpoint's tensors,
 * the router and shared experts under the names realizar's MoE loader asks
 * for.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK, SHARED_EXPERT_APR_NAMES } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { activation, SILU, swaPattern } from "../config_fields.ts";
import { expertBiasHfName, expertBiasReadName } from "../router_bias.ts";
import { writeLlamaKv } from "./llama.ts";
import { ERNIE_EXPERTS } from "./ernie4_5_moe.ts";
import { DEEPSEEK_MOE_BLOCK } from "./deepseek2.ts";

/**
 * `AfmoeModel.set_gguf_parameters`. `route_norm` is not a transformers
 * field (its router always normalises the top-k weights); the converter
 * writes `expert_weights_norm` only when the config has it, and llama.cpp
 * reads its absence as false: true is written then.
 */
function writeAfmoeKv(w: KvWriter): void {
  const h = w.hparams;
  writeLlamaKv(w);
  w.u32("expert_shared_count", w.find("num_shared_experts"));
  w.u32("expert_feed_forward_length", w.find("moe_intermediate_size"));
  w.u32("leading_dense_block_count", w.find("num_dense_layers"));
  w.set("expert_weights_norm", "BOOL", h["route_norm"] ?? true);
  w.f32("expert_weights_scale", w.find("route_scale"));
  w.u32("attention.sliding_window", w.find("sliding_window"));
}

/** llama.cpp's afmoe: every 4th layer global without RoPE, the others sliding with it. */
const LLAMA_CPP_LAYERS = swaPattern(4);

/** What of a config llama.cpp's `afmoe` would run otherwise than transformers, or `undefined`. */
function unsupported(w: KvWriter): string | undefined {
  const h = w.hparams;
  const types = h["layer_types"];
  const want = LLAMA_CPP_LAYERS(w);
  if (Array.isArray(types) && JSON.stringify(types) !== JSON.stringify(want)) {
    return `its config.json has layer_types ${JSON.stringify(types)}; llama.cpp's afmoe ` +
      "rotates and slides every layer but each 4th (global_attn_every_n_layers 4)";
  }
  if (!Array.isArray(types) && (w.num("global_attn_every_n_layers") ?? 4) !== 4) {
    return `its config.json has global_attn_every_n_layers ${h["global_attn_every_n_layers"]}; ` +
      "llama.cpp's afmoe makes every 4th layer global";
  }
  if (h["route_norm"] === false) {
    return "its config.json has route_norm false; transformers normalises AFMoE's top-k " +
      "weights regardless, and llama.cpp would not";
  }
  // LlamaModel writes Llama 3's factors as rope_freqs, which llama.cpp's afmoe does not load.
  if (String(w.fullRope["rope_type"]) === "llama3") {
    return "its config.json has rope_type llama3; llama.cpp's afmoe loads no rope_freqs " +
      "(the converter would write them)";
  }
  // o_proj then has a bias too, for which llama.cpp's afmoe loads no tensor.
  if (h["attention_bias"] === true) {
    return "its config.json has attention_bias true; llama.cpp's afmoe loads no " +
      "attn_output.bias (transformers' o_proj has one then)";
  }
  return undefined;
}

/** Trinity Nano, Mini, Large. */
export const AFMOE: Family = {
  name: "afmoe",
  apr: { rename: [["mlp.router.gate", "mlp.gate"], ...SHARED_EXPERT_APR_NAMES] },
  source: "llama.cpp conversion/afmoe.py AfmoeModel; transformers AfmoeForCausalLM",
  configFields: {
    written: [
      "moe_intermediate_size",
      "num_dense_layers",
      "num_shared_experts",
      "route_scale",
      "sliding_window",
    ],
    checked: ["layer_types", "global_attn_every_n_layers", "route_norm", "attention_bias"],
    assumed: [
      activation("hidden_act", SILU),
      // llama.cpp's afmoe always scales the embeddings by √hidden.
      { field: "mup_enabled", hfDefault: false, llamaCpp: true },
    ],
  },
  hfArchitectures: ["AfmoeForCausalLM"],
  // arcee-ai/Trinity-Tokenizer's hash: digit grouping and script classes in
  // custom code (tests/testdata/tokenizers/pre_tokenizers/README.md, "Families").
  customPreTokenizer: "afmoe",
  hfModelTypes: ["afmoe"],
  ggufArchitecture: "afmoe",
  ggufRopeType: "neox",
  blockNames: [
    ...LLAMA_BLOCK.filter(([g]) => g !== "ffn_norm"),
    ["post_attention_norm", "post_attention_layernorm"],
    ["ffn_norm", "pre_mlp_layernorm"],
    ["post_ffw_norm", "post_mlp_layernorm"],
    ["attn_gate", "self_attn.gate_proj"],
    ["ffn_gate_inp", "mlp.router.gate"],
    ...DEEPSEEK_MOE_BLOCK.filter(([g]) => g !== "ffn_gate_inp"),
    ["exp_probs_b", "mlp.expert_bias"],
  ],
  experts: ERNIE_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeAfmoeKv,
    llamaKeys: true,
    unsupported,
    hfName: expertBiasReadName,
    hfNameBack: expertBiasHfName,
  },
};
