// This module is browser compatible.

/**
 * Gemma 4's text model (`Gemma4ForCausalLM`, the language model of
 * `Gemma4ForConditionalGeneration`), after llama.cpp's `Gemma4Model`
 * (conversion/gemma.py): Gemma 3's keys, then per-layer-type head sizes
 * (full-attention layers' `global_head_dim`, sliding ones' `head_dim`),
 * KV head counts per layer where full layers have their own
 * (`attention_k_eq_v` models), the sliding-window pattern, per-layer
 * embeddings, the layers that reuse earlier layers' KV, double-wide MLPs on
 * those, and the full layers' proportional RoPE as `rope_freqs` (1 for the
 * rotated pairs, 10³⁰ for the others). Norms are not shifted (Gemma 4's
 * RMSNorm multiplies by `w`). Each layer's `layer_scalar` becomes
 * `layer_output_scale`; the MoE block (26B-A4B) keeps its experts fused
 * (`ffn_gate_up_exps`), its router's `scale` and `per_expert_scale` become
 * `ffn_gate_inp.scale` and `ffn_down_exps.scale`.
 *
 * What llama.cpp de3ff81 computes with no key for (`src/models/gemma4.cpp`,
 * `llama-model.cpp`'s KV reuse) is checked by `unsupported`.
 *
 * @module
 */

import type { TensorInfo } from "../../tensor.ts";
import type { Family, GeneratedTensor, MadeTensor } from "../family.ts";
import { type KvWriter, record } from "../kv.ts";
import { activation, type ConfigFields, GELU } from "../config_fields.ts";
import { writeGemma3Keys } from "./gemma3.ts";
import { GEMMA2_BLOCK } from "./gemma2.ts";

/** Gemma 4's block: Gemma 2's, the MoE block's norms and router, per-layer input, output scale. */
const GEMMA4_BLOCK: readonly (readonly [string, string])[] = [
  ...GEMMA2_BLOCK,
  ["layer_output_scale", "layer_scalar"],
  ["ffn_gate_inp", "router.proj"],
  ["pre_ffw_norm_2", "pre_feedforward_layernorm_2"],
  ["post_ffw_norm_1", "post_feedforward_layernorm_1"],
  ["post_ffw_norm_2", "post_feedforward_layernorm_2"],
  ["inp_gate", "per_layer_input_gate"],
  ["proj", "per_layer_projection"],
  ["post_norm", "post_per_layer_input_norm"],
];

/** Whole-model tensors besides the common ones: the per-layer embeddings. */
const GEMMA4_GLOBALS: readonly (readonly [string, string])[] = [
  ["per_layer_token_embd", "model.embed_tokens_per_layer"],
  ["per_layer_model_proj", "model.per_layer_model_projection"],
  ["per_layer_proj_norm", "model.per_layer_projection_norm"],
];

/** transformers' `Gemma4TextConfig` RoPE when config.json has none. */
const DEFAULT_ROPE = {
  sliding_attention: { rope_type: "default", rope_theta: 10_000 },
  full_attention: { rope_type: "proportional", partial_rotary_factor: 0.25, rope_theta: 1_000_000 },
} as const;

/** The writer over the config with transformers' default RoPE where it has none. */
export function withDefaultRope(w: KvWriter): KvWriter {
  if (record(w.hparams["rope_parameters"]) !== undefined) return w;
  return w.over({ ...w.hparams, rope_parameters: DEFAULT_ROPE });
}

/** The layer types (`layer_types`), which the converter requires. */
function layerTypes(w: KvWriter): string[] {
  const types = w.find("layer_types");
  if (!Array.isArray(types) || !types.every((t) => typeof t === "string")) {
    throw new RangeError("config.json has no layer_types");
  }
  return types as string[];
}

/**
 * A full-attention layer's setting: `global_head_dim` /
 * `num_global_key_value_heads` as published configs have them, else the
 * first full layer's in `per_layer_config` (what transformers 5.18 saves),
 * as the converter reads it.
 */
function fullLayerSetting(w: KvWriter, global: string, key: string): number | undefined {
  const direct = w.num(global);
  if (direct !== undefined) return direct;
  const perLayer = record(w.hparams["per_layer_config"]);
  if (perLayer === undefined) return undefined;
  const types = layerTypes(w);
  for (const [index, config] of Object.entries(perLayer)) {
    const value = record(config)?.[key];
    if (types[Number(index)] === "full_attention" && typeof value === "number") {
      // Read so, the key it makes names per_layer_config.N.<key> as its source.
      return w.findIn("per_layer_config", index, key) as number;
    }
  }
  return undefined;
}

/**
 * The full layers' head size. transformers 5.18 saves only a full layer's
 * settings that differ from the config's, so a `per_layer_config` without
 * one means `head_dim` (the converter then fails: "assert head_dim_full").
 */
function fullHeadDim(w: KvWriter): number {
  const dim = fullLayerSetting(w, "global_head_dim", "head_dim") ??
    (record(w.hparams["per_layer_config"]) !== undefined ? w.num("head_dim") : undefined);
  if (dim === undefined) {
    throw new RangeError("config.json has no global_head_dim (nor a full layer's head_dim)");
  }
  return dim;
}

/** The image-text class whose converter (`Gemma4UnifiedModel`) also writes the suppressed ids. */
const UNIFIED = "Gemma4UnifiedForConditionalGeneration";

/** `Gemma4Model.set_gguf_parameters`: Gemma 3's keys, then Gemma 4's. */
export function writeGemma4Kv(w: KvWriter): void {
  if (record(w.hparams["rope_parameters"]) === undefined) {
    return w.writeOver({ ...w.hparams, rope_parameters: DEFAULT_ROPE }, writeGemma4Kv);
  }
  writeGemma3Keys(w);
  const layers = w.need("num_hidden_layers");
  const shared = w.need("num_kv_shared_layers");
  w.u32("attention.shared_kv_layers", shared);
  w.u32("embedding_length_per_layer_input", w.num("hidden_size_per_layer_input") ?? 0);
  const swa = layerTypes(w).map((t) => t === "sliding_attention");
  w.setArray("attention.sliding_window_pattern", "BOOL", swa);
  const headFull = fullHeadDim(w);
  const headSwa = w.need("head_dim");
  w.u32("attention.key_length", headFull);
  w.u32("attention.value_length", headFull);
  w.u32("attention.key_length_swa", headSwa);
  w.u32("attention.value_length_swa", headSwa);
  w.u32("expert_feed_forward_length", w.find("expert_intermediate_size", "moe_intermediate_size"));
  if (w.hparams["use_double_wide_mlp"] === true) {
    const ff = w.need("intermediate_size");
    const widths = Array.from({ length: layers }, (_, i) => i < layers - shared ? ff : 2 * ff);
    w.setArray("feed_forward_length", "INT32", widths);
  }
  const kvFull = fullLayerSetting(w, "num_global_key_value_heads", "num_key_value_heads");
  const kvSwa = w.num("num_key_value_heads");
  if (kvFull !== undefined && kvSwa !== undefined) {
    w.setArray("attention.head_count_kv", "INT32", swa.map((s) => s ? kvSwa : kvFull));
  }
  // The full layers rotate their whole head (the unrotated pairs by rope_freqs); the
  // converter reads the sliding layers' share from rope_parameters' top level.
  const swaShare = w.rope["partial_rotary_factor"];
  w.u32("rope.dimension_count", fullHeadDim(w));
  w.u32(
    "rope.dimension_count_swa",
    Math.trunc(headSwa * (typeof swaShare === "number" ? swaShare : 1)),
  );
  // Gemma4UnifiedModel.set_gguf_parameters: generation_config.json's suppressed ids.
  if (w.hfClass === UNIFIED && w.suppressTokens !== undefined) {
    w.setArray("tokenizer.ggml.suppress_tokens", "INT32", w.suppressTokens);
  }
}

/**
 * `Gemma4Model.generate_extra_tensors`: the full layers' proportional RoPE,
 * whose unrotated pairs ggml's NEOX rotation cannot skip, as frequency
 * factors: 1 for the rotated pairs, 10³⁰ (no rotation) for the others.
 */
function ropeFreqs(given: KvWriter): readonly GeneratedTensor[] {
  const w = withDefaultRope(given);
  const full = w.fullRope;
  if (full["rope_type"] !== "proportional") {
    throw new RangeError(
      `config.json's full-attention RoPE is ${JSON.stringify(full["rope_type"])}; Gemma 4's ` +
        `converter writes only proportional RoPE`,
    );
  }
  const head = fullHeadDim(w);
  const share = full["partial_rotary_factor"];
  if (typeof share !== "number") {
    throw new RangeError("config.json's proportional RoPE has no partial_rotary_factor");
  }
  const rotated = Math.trunc(head * share / 2);
  const values = new Float32Array(Math.trunc(head / 2)).fill(1e30);
  values.fill(1, 0, rotated);
  return [{ name: "rope_freqs.weight", values }];
}

/** What llama.cpp reads no key for, checked. */
function unsupported(given: KvWriter): string | undefined {
  const w = withDefaultRope(given);
  return ropeUnsupported(w) ?? sharedKvUnsupported(w) ?? perLayerUnsupported(w);
}

/**
 * The sliding layers' RoPE must be the default over their whole head (what
 * llama.cpp rotates them with), the full layers' proportional without a
 * `factor` (the converter writes none, transformers divides by it).
 */
export function ropeUnsupported(w: KvWriter): string | undefined {
  const sliding = record(w.rope["sliding_attention"]) ?? {};
  const type = sliding["rope_type"] ?? "default";
  if (type !== "default") {
    return `its config.json has sliding-attention RoPE ${JSON.stringify(type)}; llama.cpp's ` +
      `gemma4 rotates the sliding layers with the default RoPE`;
  }
  const factor = w.fullRope["factor"];
  if (factor !== undefined && factor !== 1) {
    return `its config.json's proportional RoPE has factor ${JSON.stringify(factor)}; the ` +
      `converter writes no key for it and llama.cpp computes as with 1`;
  }
  return undefined;
}

/**
 * llama.cpp's KV reuse (`llama_model::create_memory`): a layer from
 * `num_hidden_layers − num_kv_shared_layers` on reads the KV of the layer
 * just before them when it is a full-attention one, of the one before that
 * when sliding; transformers of the last earlier layer of the same type.
 */
function sharedKvUnsupported(w: KvWriter): string | undefined {
  const shared = w.num("num_kv_shared_layers") ?? 0;
  const types = layerTypes(w);
  const first = types.length - shared;
  if (shared <= 0) return undefined;
  if (
    first < 2 || types[first - 1] !== "full_attention" || types[first - 2] !== "sliding_attention"
  ) {
    return `its config.json has num_kv_shared_layers ${shared} with layer_types ` +
      `${JSON.stringify(types.slice(Math.max(0, first - 2), first))} before the shared layers; ` +
      `llama.cpp reuses layer ${first - 1}'s KV for full-attention layers and layer ` +
      `${first - 2}'s for sliding ones, so those two must be full and sliding`;
  }
  return undefined;
}

/**
 * `per_layer_config` (transformers 5.18's form of `global_head_dim`) may set
 * only the full layers' head size and KV heads, alike on every full layer:
 * the converter writes one of each. The per-layer embedding's rows must be
 * the vocabulary's (llama.cpp loads it with `vocab_size` rows).
 */
export function perLayerUnsupported(w: KvWriter): string | undefined {
  const perLayer = record(w.hparams["per_layer_config"]);
  const types = layerTypes(w);
  if (perLayer !== undefined) {
    const full = JSON.stringify(record(perLayer[String(types.indexOf("full_attention"))]) ?? {});
    for (const [index, config] of Object.entries(perLayer)) {
      const keys = Object.keys(record(config) ?? {});
      const bad = keys.find((k) => k !== "head_dim" && k !== "num_key_value_heads");
      if (bad !== undefined || types[Number(index)] !== "full_attention") {
        return `its config.json's per_layer_config sets ${bad ?? keys.join(", ")} on layer ` +
          `${index}; llama.cpp's gemma4 reads one head size and KV head count for sliding ` +
          `layers and one for full ones`;
      }
      if (JSON.stringify(config) !== full) {
        return `its config.json's per_layer_config differs between full-attention layers ` +
          `(layer ${index}: ${JSON.stringify(config)}); the converter writes the first one's`;
      }
    }
  }
  // transformers gives full layers num_global_key_value_heads only with attention_k_eq_v;
  // the converter writes it for them whenever it is set.
  const globalKv = w.num("num_global_key_value_heads");
  if (
    w.hparams["attention_k_eq_v"] !== true && globalKv !== undefined &&
    globalKv !== w.num("num_key_value_heads")
  ) {
    return `its config.json has num_global_key_value_heads ${globalKv} without ` +
      `attention_k_eq_v; transformers then gives every layer num_key_value_heads ` +
      `(${w.num("num_key_value_heads")}), the converter writes ${globalKv} for the full layers`;
  }
  const perLayerInput = w.num("hidden_size_per_layer_input") ?? 0;
  const rows = w.num("vocab_size_per_layer_input");
  if (perLayerInput > 0 && rows !== undefined && rows !== w.num("vocab_size")) {
    return `its config.json has vocab_size_per_layer_input ${rows}; llama.cpp's gemma4 loads ` +
      `the per-layer embedding with vocab_size (${w.num("vocab_size")}) rows`;
  }
  return undefined;
}

const ROUTER_SCALE = /^(model\.layers\.\d+)\.router\.(scale|per_expert_scale)$/;

/**
 * `Gemma4Model.modify_tensors`: the router's input scale as
 * `ffn_gate_inp.scale`, its per-expert scale as `ffn_down_exps.scale`,
 * written where they are.
 */
function routerScales(tensors: readonly TensorInfo[]): MadeTensor[] {
  const made: MadeTensor[] = [];
  for (const t of tensors) {
    const match = ROUTER_SCALE.exec(t.name);
    if (match === null) continue;
    const layer = match[1]!.slice("model.layers.".length);
    const kind = match[2] === "scale" ? "ffn_gate_inp" : "ffn_down_exps";
    made.push({
      info: { ...t, name: `blk.${layer}.${kind}.scale` },
      needs: [t.name],
      open: ([source]) => source!.open(),
    });
  }
  return made;
}

/** `Gemma4Model.filter_tensors`: `layer_scalar` is named as a `.weight`. */
function hfName(name: string): string {
  return name.endsWith(".layer_scalar") ? `${name}.weight` : name;
}

/**
 * GGUF names the family's table does not map back: the MoE block's tensors,
 * which the converter only renames (its experts stay fused as transformers
 * stores them).
 */
const BACK: readonly (readonly [string, string])[] = [
  ["ffn_gate_up_exps.weight", "experts.gate_up_proj"],
  ["ffn_down_exps.weight", "experts.down_proj"],
  ["ffn_gate_inp.scale", "router.scale"],
  ["ffn_down_exps.scale", "router.per_expert_scale"],
];
const GGUF_BLOCK = /^blk\.(\d+)\.(.+)$/;

/** The inverse of {@linkcode hfName} and of the MoE block's renames, for a GGUF read back. */
function hfNameBack(name: string): string {
  if (name.endsWith(".layer_scalar.weight")) return name.slice(0, -".weight".length);
  const block = GGUF_BLOCK.exec(name);
  const hf = BACK.find(([gguf]) => gguf === block?.[2])?.[1];
  return hf === undefined ? name : `model.layers.${block![1]}.${hf}`;
}

/**
 * Gemma 4: what llama.cpp reads no key for is checked by `unsupported`; the
 * rest is written.
 */
export const GEMMA4_FIELDS: ConfigFields = {
  written: [
    "final_logit_softcapping",
    "sliding_window",
    "layer_types",
    "num_kv_shared_layers",
    "hidden_size_per_layer_input",
    "use_double_wide_mlp",
    "moe_intermediate_size",
    "top_k_experts",
    // Tensors: the MoE block's (router, experts, their norms), V projections only where
    // transformers has them (llama.cpp uses K as V where the file has no attn_v).
    "enable_moe_block",
    "attention_k_eq_v",
  ],
  checked: ["rope_parameters", "per_layer_config", "vocab_size_per_layer_input"],
  assumed: [
    activation("hidden_activation", GELU, "gelu_pytorch_tanh"),
    // src/models/gemma4.cpp loads no biases (a file with them is one it refuses to load).
    { field: "attention_bias", hfDefault: false, llamaCpp: false },
    // llama.cpp's gemma4 is causal for text ("vision" changes only image tokens' attention).
    {
      field: "use_bidirectional_attention",
      hfDefault: null,
      hfDefaultByType: {
        gemma4_unified: "vision",
        gemma4_unified_text: "vision",
        gemma4_unified_assistant: "vision",
      },
      llamaCpp: null,
      alike: ["vision"],
    },
  ],
  ropeTypes: ["proportional"],
  irrelevant: {
    eoa_token_index: "the audio tower's end token (Gemma4Config), not the text model's",
  },
};

/** Gemma 4, text only (the language model of `Gemma4ForConditionalGeneration`). */
export const GEMMA4: Family = {
  name: "gemma4",
  source: "llama.cpp conversion/gemma.py Gemma4Model; transformers Gemma4ForCausalLM",
  configFields: GEMMA4_FIELDS,
  hfArchitectures: ["Gemma4ForCausalLM"],
  hfModelTypes: ["gemma4_text", "gemma4", "gemma4_unified"],
  ggufArchitecture: "gemma4",
  ggufRopeType: "neox",
  blockNames: GEMMA4_BLOCK,
  globalNames: GEMMA4_GLOBALS,
  experts: {
    prefix: "experts",
    stacks: [],
    stacked: [["gate_up_proj", ["ffn_gate_up_exps"]], ["down_proj", ["ffn_down_exps"]]],
  },
  permutesQk: false,
  tiedByDefault: true,
  ggufRenamesOnly: false,
  embeddingRowsMayDiffer: true,
  llamaHfVocabulary: {
    model: "gemma4",
    // Gemma4Model.set_vocab: "always render these tokens, so that the chat parser can read them".
    userDefined: [
      "<|channel>",
      "<channel|>",
      "<|tool_call>",
      "<tool_call|>",
      "<|tool_response>",
      "<tool_response|>",
      '<|"|>',
    ],
    addSpacePrefix: false,
    addBosToken: true,
  },
  gguf: {
    writeKv: writeGemma4Kv,
    unsupported,
    generate: ropeFreqs,
    made: routerScales,
    hfName,
    hfNameBack,
  },
};
