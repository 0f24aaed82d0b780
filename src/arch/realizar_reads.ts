// This module is browser compatible.

/**
 * Which tensors of a layer realizar's transformer loader looks up, as its
 * source does it (paiml/realizar 40edaa93, issue 34 §3), so that an APR import
 * can say which tensors of a model it would run without, whatever the
 * family. The loader its run paths use is `AprTransformer::from_apr_bytes`
 * (`src/apr_transformer/embedding.rs`), which builds every layer in
 * `src/apr_transformer/mod_dequant_q4k_apr.rs` `AprTransformer::build_apr_layers`:
 *
 * - `AprTensorLookup::load_qkv_weight`: `self_attn.qkv_proj.weight`, else
 *   `self_attn.{q,k,v}_proj.weight`; `load_qkv_bias`: the same `.bias`.
 * - `self_attn.o_proj.weight` (no bias: `attn_output_bias: None`).
 * - `input_layernorm.weight`, `post_attention_layernorm.weight` (the FFN's
 *   norm; no norm biases: `attn_norm_bias`/`ffn_norm_bias: None`).
 * - `mlp.{gate,up,down}_proj.weight` (no fused `gate_up_proj`, no MLP biases).
 * - `mlp.gate.weight` and `mlp.experts.{E}.{gate,up,down}_proj.weight`.
 * - `mlp.shared_expert.{gate,up,down}_proj.weight` and
 *   `mlp.shared_expert_gate.weight` (Qwen2-MoE's names; DeepSeek's
 *   `shared_experts` is renamed to them, `family.ts` `SHARED_EXPERT_APR_NAMES`).
 *
 * Nothing else of a layer is read: `attn_q_norm_weight`/`attn_k_norm_weight`
 * are set to `None` there (per-head Q/K norms), and Gemma 2/3's
 * `pre_/post_feedforward_layernorm`, GLM-4's `post_self_attn_layernorm`/
 * `post_mlp_layernorm`, StarCoder2's `mlp.c_fc`/`mlp.c_proj` and every
 * bias but Q/K/V's are never asked for. (`src/apr/weight.rs`, realizar's
 * `AprV2Model` path, does look up `self_attn.q_norm`/`k_norm`; the
 * transformer loader does not.)
 *
 * @module
 */

/** The pieces after `model.layers.N.` `build_apr_layers` looks up (`{E}`: an expert number). */
const READ: readonly RegExp[] = [
  /^self_attn\.(?:qkv|q|k|v)_proj\.(?:weight|bias)$/,
  /^self_attn\.o_proj\.weight$/,
  /^(?:input|post_attention)_layernorm\.weight$/,
  /^mlp\.(?:gate|up|down)_proj\.weight$/,
  /^mlp\.gate\.weight$/,
  /^mlp\.experts\.\d+\.(?:gate|up|down)_proj\.weight$/,
  /^mlp\.shared_expert\.(?:gate|up|down)_proj\.weight$/,
  /^mlp\.shared_expert_gate\.weight$/,
];

const LAYER = /^model\.layers\.\d+\.(.+)$/;

/**
 * The tensors of a layer realizar's transformer loader never looks up, as
 * pieces after `model.layers.N.`: without `.weight` (a weight, or a tensor
 * whose weight is not read either), with `.bias` where only the bias is
 * missed, expert numbers as `{E}`; sorted, each once.
 *
 * @example Usage
 * ```ts
 * import { realizarUnread } from "./realizar_reads.ts";
 * console.assert(
 *   realizarUnread([
 *     "model.layers.0.self_attn.q_proj.weight",
 *     "model.layers.0.self_attn.q_norm.weight",
 *     "model.layers.0.self_attn.o_proj.bias",
 *   ]).join() === "self_attn.o_proj.bias,self_attn.q_norm",
 * );
 * ```
 *
 * @param names Tensor names in APR's layout (Hugging Face's, renamed and split for realizar).
 * @returns The pieces it would run the model without.
 */
export function realizarUnread(names: Iterable<string>): string[] {
  const found = new Set<string>();
  for (const name of names) {
    const piece = LAYER.exec(name)?.[1];
    if (piece === undefined || READ.some((r) => r.test(piece))) continue;
    const general = piece.replace(/\.\d+\./g, ".{E}.");
    const weight = general.replace(/\.bias$/, ".weight");
    const weightRead = general.endsWith(".bias") &&
      READ.some((r) => r.test(piece.replace(/\.bias$/, ".weight")));
    found.add(weightRead ? general : weight.replace(/\.weight$/, ""));
  }
  return [...found].sort();
}
