// This module is browser compatible.

/**
 * The keys every llama.cpp text model writes: `TextModel.set_gguf_parameters`
 * (conversion/base.py), which most family classes call first and then
 * extend.
 *
 * @module
 */

import type { KvWriter } from "./kv.ts";

/** GGUF `rope.scaling.type` values (gguf-py's `RopeScalingType`). */
const ROPE_SCALING = { linear: "linear", yarn: "yarn", longrope: "longrope" } as const;

/** GGUF `expert_gating_func` values (gguf-py's `ExpertGatingFuncType`). */
export const GATING_FUNC: Readonly<Record<string, number>> = {
  softmax: 1,
  sigmoid: 2,
  sqrtsoftplus: 4,
};

/**
 * `TextModel.set_gguf_parameters`: sizes, heads, RoPE scaling and base, norm
 * epsilons, experts (count, groups, scoring function), head size, file type.
 *
 * @param w The writer over `config.json`.
 */
export function writeTextModelKv(w: KvWriter): void {
  w.u32("block_count", w.need("n_layers", "num_hidden_layers", "n_layer", "num_layers"));
  w.u32(
    "context_length",
    w.find(
      "max_position_embeddings",
      "n_ctx",
      "n_positions",
      "max_length",
      "max_sequence_length",
      "model_max_length",
    ),
  );
  w.u32("embedding_length", w.find("hidden_size", "n_embd", "dim"));
  const ff = w.find(
    "prefix_dense_intermediate_size",
    "dense_intermediate_size",
    "intermediate_size",
    "n_inner",
    "hidden_dim",
  );
  // One per layer (Gemma 3n's list): an INT32 array, as gguf-py writes a list of ints.
  if (Array.isArray(ff)) {
    w.setArray("feed_forward_length", "INT32", integers(ff, "intermediate_size"));
  } else w.u32("feed_forward_length", ff);
  w.u32("attention.head_count", w.find("num_attention_heads", "n_head", "n_heads"));
  w.u32("attention.head_count_kv", w.find("num_key_value_heads", "n_kv_heads"));
  if (w.hparams["is_causal"] === false) w.set("attention.causal", "BOOL", false);
  const rope = w.fullRope;
  const type = rope["rope_type"];
  if (typeof type === "string") {
    const factor = rope["factor"];
    if (type === "linear" && factor != null) {
      w.set("rope.scaling.type", "STRING", ROPE_SCALING.linear);
      w.f32("rope.scaling.factor", factor);
    } else if (type === "yarn" && factor != null) {
      w.set("rope.scaling.type", "STRING", ROPE_SCALING.yarn);
      w.f32("rope.scaling.factor", factor);
      w.u32("rope.scaling.original_context_length", rope["original_max_position_embeddings"]);
      w.f32("rope.scaling.yarn_ext_factor", rope["extrapolation_factor"]);
      w.f32("rope.scaling.yarn_attn_factor", rope["attention_factor"] ?? rope["attn_factor"]);
      w.f32("rope.scaling.yarn_beta_fast", rope["beta_fast"]);
      w.f32("rope.scaling.yarn_beta_slow", rope["beta_slow"]);
    } else if (type === "su" || type === "longrope") {
      w.set("rope.scaling.type", "STRING", ROPE_SCALING.longrope);
    }
  }
  // Multi-axis RoPE (Qwen2-VL): the sections padded to 4 [time, height, width, extra].
  const sections = w.rope["mrope_section"];
  if (Array.isArray(sections)) {
    if (!sections.every((n) => Number.isSafeInteger(n))) {
      throw new RangeError("config.json: mrope_section is not a list of integers");
    }
    const four = [...sections as number[], 0, 0, 0, 0].slice(0, 4);
    w.setArray("rope.dimension_sections", "INT32", four);
  }
  w.f32("rope.freq_base", rope["rope_theta"]);
  const swa = w.rope["sliding_attention"];
  if (swa !== null && typeof swa === "object") {
    w.f32("rope.freq_base_swa", (swa as Record<string, unknown>)["rope_theta"]);
  }
  w.f32("attention.layer_norm_rms_epsilon", w.find("rms_norm_eps", "norm_eps"));
  w.f32(
    "attention.layer_norm_epsilon",
    w.find("layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"),
  );
  w.u32("expert_count", w.find("num_local_experts", "num_experts", "n_routed_experts"));
  w.u32(
    "expert_used_count",
    w.find("num_experts_per_tok", "num_experts_per_token", "top_k_experts"),
  );
  w.u32("expert_group_count", w.find("n_group"));
  w.u32("expert_group_used_count", w.find("topk_group"));
  const scoring = expertScoringFunction(w);
  if (scoring != null) {
    const type = Object.hasOwn(GATING_FUNC, String(scoring))
      ? GATING_FUNC[String(scoring)]
      : undefined;
    if (type === undefined) {
      throw new RangeError(
        `config.json: the expert scoring function ${JSON.stringify(scoring)} is not one ` +
          `llama.cpp knows (${Object.keys(GATING_FUNC).join(", ")})`,
      );
    }
    w.u32("expert_gating_func", type);
  }
  const headDim = w.find("head_dim");
  if (headDim != null) {
    w.u32("attention.key_length", headDim);
    w.u32("attention.value_length", headDim);
  }
  w.fileType();
}

function integers(values: readonly unknown[], key: string): number[] {
  if (!values.every((n) => Number.isSafeInteger(n))) {
    throw new RangeError(`config.json: ${key} is not a list of integers`);
  }
  return values as number[];
}

/**
 * The experts' scoring function a config names, under any of the names the
 * converter looks for (`score_function`, `scoring_func`, …), or `undefined`.
 *
 * @param w The writer over `config.json`.
 * @returns The value as the config has it.
 */
export function expertScoringFunction(w: KvWriter): unknown {
  return w.find(
    "score_function",
    "scoring_func",
    "score_func",
    "moe_router_activation",
    "moe_router_activation_func",
    "expert_selection_fn",
  );
}

/**
 * A family's keys (by default {@linkcode writeTextModelKv}) for a family
 * whose transformers router always scores its experts with `scoring` (no
 * config field says so): published configs name it in `scoring_func`, from
 * which the converter writes `expert_gating_func`; without it the converter
 * writes none and llama.cpp aborts at the first MoE layer (or refuses to
 * load), so `scoring` is written then.
 *
 * @param w The writer over `config.json`.
 * @param scoring The function transformers hard-codes (`sigmoid`).
 * @param write The keys the family writes first (its converter's base class's).
 */
export function writeTextModelKvScoredBy(
  w: KvWriter,
  scoring: string,
  write: (w: KvWriter) => void = writeTextModelKv,
): void {
  if (expertScoringFunction(w) != null) return write(w);
  w.writeOver({ ...w.hparams, scoring_func: scoring }, write);
}

/**
 * The refusal of a config whose `scoring_func` names another function than
 * the one transformers hard-codes for the family, or `undefined`.
 *
 * @param w The writer over `config.json`.
 * @param scoring The function transformers hard-codes (`sigmoid`).
 * @param model The family, as the message names it.
 */
export function scoringRefusal(w: KvWriter, scoring: string, model: string): string | undefined {
  const given = expertScoringFunction(w);
  if (given == null || given === scoring) return undefined;
  return `its config.json has scoring_func ${JSON.stringify(given)}; transformers scores ` +
    `${model}'s experts with a ${scoring}, and llama.cpp would use ${JSON.stringify(given)}`;
}
