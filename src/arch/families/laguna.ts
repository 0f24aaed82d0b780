// This module is browser compatible.

/**
 * Laguna (`LagunaForCausalLM`: poolside's Laguna XS/S/M), after llama.cpp's
 * `LagunaModel` (conversion/laguna.py), GGUF architecture `laguna`: leading
 * dense layers, then routed experts (stacked gate, up, down) with a shared
 * one, a sigmoid router with `e_score_correction_bias` (`exp_probs_b`),
 * normalised top-k weights × `moe_routed_scaling_factor`; attention with Q/K
 * norms, per-layer query heads (`attention.head_count` an array) and a
 * softplus gate on its output (`g_proj` → `attn_gate`, per head or per
 * element); partial RoPE per layer type (`rope.dimension_count{,_swa}`).
 *
 * llama.cpp's `laguna` (src/models/laguna.cpp) reads no sliding-window
 * pattern: with a window, every 4th layer from 0 is global and the others
 * slide, rotated without scaling. A config otherwise is refused for GGUF.
 *
 * @module
 */

import { type Family, type LayerTensors, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { GATING_FUNC, writeTextModelKv } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";
import { scoreBiasHfName, scoreBiasReadName } from "../router_bias.ts";
import { ERNIE_EXPERTS } from "./ernie4_5_moe.ts";
import { QWEN_SHARED_EXPERT_BLOCK } from "./qwen2moe.ts";

function layers(w: KvWriter): number {
  return w.need("num_hidden_layers");
}

/**
 * The query heads of each layer (`num_attention_heads_per_layer`, else the
 * one count). Beside the list, `num_attention_heads` computes nothing:
 * transformers builds each layer from the list and sizes heads by
 * `head_dim` (its config always has one), and the converter's per-layer
 * `head_count` replaces the count `TextModel` wrote (key_length from
 * `head_dim`); so it stays a written field, read only without the list
 * (Laguna M.1), where the tensors are checked against it.
 */
function headsPerLayer(w: KvWriter): number[] {
  const heads = w.find("num_attention_heads_per_layer");
  if (Array.isArray(heads) && heads.length > 0) return heads as number[];
  return Array.from({ length: layers(w) }, () => w.need("num_attention_heads"));
}

/**
 * Each layer's attention gate (`g_proj`) as transformers builds it: one row
 * per head (`gating` true or "per-head") or per head element
 * ("per-element"). llama.cpp takes either width off the tensor, so a
 * `gating` the tensor contradicts would be written as given.
 */
function attentionGates(h: Readonly<Record<string, unknown>>): LayerTensors | undefined {
  const gating = h["gating"];
  const perHead = gating === true || gating === "per-head";
  // Another value is refused for GGUF (unsupported).
  if (!perHead && gating !== "per-element") return undefined;
  const given = h["num_attention_heads_per_layer"];
  const layers = h["num_hidden_layers"];
  const heads = Array.isArray(given)
    ? given
    : typeof layers === "number" && Number.isSafeInteger(layers) && layers > 0
    ? Array.from({ length: layers }, () => h["num_attention_heads"])
    : [];
  const head = h["head_dim"] ??
    Math.trunc(Number(h["hidden_size"]) / Number(h["num_attention_heads"]));
  const counts = [...heads, head];
  if (heads.length === 0 || !counts.every((n) => Number.isSafeInteger(n) && (n as number) > 0)) {
    return undefined;
  }
  const rows = (heads as number[]).map((n) => perHead ? n : n * (head as number));
  const source = Array.isArray(given)
    ? `num_attention_heads_per_layer ${JSON.stringify(given)}`
    : `num_attention_heads ${h["num_attention_heads"]}`;
  return {
    kind: "ATTN_GATE",
    instead: "ATTN_Q",
    has: rows.map(() => true),
    rows,
    from: `gating ${JSON.stringify(gating)}, ${source}${perHead ? "" : `, head_dim ${head}`}`,
    tensor: "an attention gate (g_proj)",
    with: "a gated attention layer",
    without: "an ungated one",
  };
}

/** The layers before the first sparse one (`leading_dense_block_count`). */
function leadingDense(w: KvWriter): number {
  const kinds = w.find("mlp_layer_types") as unknown[];
  const first = kinds.findIndex((k) => k !== "dense");
  return first === -1 ? kinds.length : first;
}

/** The rotated width of a layer type's RoPE (`head_dim × partial_rotary_factor`). */
function ropeDims(w: KvWriter, rope: unknown): number {
  const share = (rope as Record<string, unknown>)["partial_rotary_factor"] ?? 1;
  return Math.trunc(w.need("head_dim") * Number(share));
}

/** `LagunaModel.set_gguf_parameters`. */
function writeLagunaKv(w: KvWriter): void {
  writeTextModelKv(w);
  w.u32("vocab_size", w.need("vocab_size"));
  w.setArray("attention.head_count", "INT32", headsPerLayer(w));
  const window = w.num("sliding_window") ?? 0;
  if (window > 0) w.u32("attention.sliding_window", window);
  w.u32("expert_feed_forward_length", w.find("moe_intermediate_size"));
  w.u32("expert_shared_feed_forward_length", w.find("shared_expert_intermediate_size"));
  w.set("expert_weights_norm", "BOOL", true);
  w.f32("expert_weights_scale", w.need("moe_routed_scaling_factor"));
  w.u32("expert_gating_func", GATING_FUNC["sigmoid"]);
  w.u32("leading_dense_block_count", leadingDense(w));
  w.u32("rope.dimension_count", ropeDims(w, w.fullRope));
  const swa = w.rope["sliding_attention"];
  if (swa != null) w.u32("rope.dimension_count_swa", ropeDims(w, swa));
}

function unsupported(w: KvWriter): string | undefined {
  const h = w.hparams;
  const why = (what: string) =>
    `its config.json says ${what}; llama.cpp's laguna would not run it as transformers does ` +
    `(APR and SafeTensors output keep it)`;
  if (h["attention_bias"] === true) return why("attention_bias true (it loads no o_proj bias)");
  const gating = h["gating"];
  if (gating !== true && gating !== "per-head" && gating !== "per-element") {
    return why(
      `gating ${JSON.stringify(gating)} (the converter knows true, "per-head", "per-element")`,
    );
  }
  const kinds = h["mlp_layer_types"];
  if (!Array.isArray(kinds)) {
    return why("no mlp_layer_types (the converter counts the dense layers from them)");
  }
  const dense = leadingDense(w);
  if (kinds.some((k, i) => k !== (i < dense ? "dense" : "sparse"))) {
    return why(
      `mlp_layer_types ${JSON.stringify(kinds)} (llama.cpp: leading dense layers, then sparse)`,
    );
  }
  const window = w.num("sliding_window") ?? 0;
  const types = Array.isArray(h["layer_types"])
    ? h["layer_types"] as unknown[]
    : Array.from({ length: layers(w) }, () => "full_attention");
  const want = types.map((_, i) =>
    window > 0 && i % 4 !== 0 ? "sliding_attention" : "full_attention"
  );
  if (types.some((t, i) => t !== want[i])) {
    return why(
      `layer_types ${JSON.stringify(types)} with sliding_window ${window}; llama.cpp's laguna ` +
        (window > 0 ? "slides every layer but each 4th from 0" : "slides none"),
    );
  }
  const swa = w.rope["sliding_attention"] as Record<string, unknown> | undefined;
  // More rotated dimensions than a head has: transformers cannot apply them, and
  // llama.cpp (which checks no bound for laguna) would rotate past the head.
  for (
    const [kind, rope] of [["full_attention", w.fullRope], ["sliding_attention", swa]] as const
  ) {
    if (rope == null) continue;
    const dims = ropeDims(w, rope);
    if (!(dims > 0 && dims <= w.need("head_dim"))) {
      return why(
        `rope_parameters.${kind}.partial_rotary_factor ` +
          `${JSON.stringify(rope["partial_rotary_factor"])}, ${dims} rotated dimensions of a ` +
          `${w.need("head_dim")}-wide head`,
      );
    }
  }
  const swaType = swa?.["rope_type"] ?? "default";
  if (types.includes("sliding_attention") && swaType !== "default") {
    return why(
      `rope_type ${JSON.stringify(swaType)} for sliding_attention (llama.cpp: no scaling)`,
    );
  }
  return undefined;
}

/** Laguna XS.2, S.2, M.1. */
export const LAGUNA: Family = {
  name: "laguna",
  source: "llama.cpp conversion/laguna.py LagunaModel; transformers LagunaForCausalLM",
  configFields: {
    written: [
      "moe_intermediate_size",
      "shared_expert_intermediate_size",
      "moe_routed_scaling_factor",
      "num_attention_heads_per_layer",
      "sliding_window",
    ],
    // gating also against the tensors: g_proj's rows per head or per element.
    checked: ["attention_bias", "gating", "mlp_layer_types", "layer_types"],
    assumed: [
      activation("hidden_act", SILU),
      { field: "moe_apply_router_weight_on_input", hfDefault: false, llamaCpp: false },
      { field: "moe_router_logit_softcapping", hfDefault: 0, llamaCpp: 0 },
    ],
  },
  hfArchitectures: ["LagunaForCausalLM"],
  // poolside/Laguna-XS.2's hash: newline runs split off in custom code, then
  // Qwen2's regex. The published steps are recognised as laguna (the table's
  // entry); another spelling is refused naming it
  // (tests/testdata/tokenizers/pre_tokenizers/README.md, "Families").
  customPreTokenizer: "laguna",
  hfModelTypes: ["laguna"],
  ggufArchitecture: "laguna",
  ggufRopeType: "neox",
  blockNames: [
    ...LLAMA_BLOCK,
    ...QWEN_SHARED_EXPERT_BLOCK,
    ["attn_gate", "self_attn.g_proj"],
    ["exp_probs_b", "mlp.experts.e_score_correction"],
  ],
  experts: ERNIE_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeLagunaKv,
    unsupported,
    llamaKeys: true,
    hfName: scoreBiasReadName,
    hfNameBack: scoreBiasHfName,
    layerTensors: attentionGates,
  },
};
