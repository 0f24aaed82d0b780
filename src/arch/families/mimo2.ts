// This module is browser compatible.

/**
 * MiMo-V2-Flash (`MiMoV2FlashForCausalLM`), after llama.cpp's `MimoV2Model`
 * (conversion/mimo.py), GGUF architecture `mimo2`.
 *
 * Attention: full-attention layers and sliding-window ones with twice the KV
 * heads and a sink per head (`self_attn.attention_sink_bias`, read as
 * `….weight`), Q/K heads wider than V heads (`head_dim`, `v_head_dim`),
 * RoPE (NEOX) on `int(head_dim × partial_rotary_factor)` dims with a base of
 * each layer kind, values scaled by `attention_value_scale`. Feed-forward: a
 * dense first layer, then experts (stacked gate, up, down) under a sigmoid
 * router with `e_score_correction_bias` (`exp_probs_b.bias`).
 *
 * The published config.json (XiaomiMiMo/MiMo-V2-Flash) says this in keys
 * transformers 5.18's `MiMoV2FlashConfig` does not read — the pattern in
 * `hybrid_layer_pattern` (1 = sliding), `swa_num_key_value_heads`,
 * `rope_theta`, `swa_rope_theta`, `partial_rotary_factor`,
 * `layernorm_epsilon` — and those are what the converter writes.
 * transformers computes with its own fields instead (`layer_types`,
 * `rope_parameters`, `rms_norm_eps`; absent, its defaults, which are the
 * published values): a config whose two say otherwise is refused for GGUF,
 * naming the field. A config saved by transformers (its fields only, which
 * the converter cannot read) is written from them.
 *
 * Multi-token prediction: the converter always counts 3 MTP layers
 * (`model.mtp.layers.{0,1,2}`, which every published checkpoint holds) into
 * `block_count`, the KV-head and sliding-window arrays (as sliding layers)
 * and `nextn_predict_layers`, and writes them as blocks past the trunk;
 * llama.cpp loads a file without them too (transformers builds none, so a
 * model it saved has none).
 *
 * realizar has no MiMo model: APR output keeps the checkpoint's tensors
 * under their Hugging Face names.
 *
 * @module
 */

import type { TensorInfo } from "../../tensor.ts";
import { type Family, LLAMA_BLOCK, type MadeTensor } from "../family.ts";
import { type KvWriter, record } from "../kv.ts";
import { scoringRefusal, writeTextModelKv } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";
import { GATE_SCORE_BIAS, scoreBiasHfName, scoreBiasReadName } from "../router_bias.ts";
import { mtpLayerHfName } from "../nextn.ts";
import { ERNIE_EXPERTS } from "./ernie4_5_moe.ts";

/** `MimoV2Model._n_nextn`: the MTP layers the converter counts, whatever the checkpoint holds. */
const NEXTN = 3;

/** `MiMoV2FlashConfig`'s RoPE defaults (its `rope_parameters` when config.json has none). */
const FULL_THETA = 5_000_000;
const SWA_THETA = 10_000;
const ROTARY = 0.334;

/** The RMSNorm epsilon the converter writes when config.json has no `layernorm_epsilon`. */
const EPSILON = 1e-5;

const SLIDING = "sliding_attention";

/** The layer kinds transformers builds: `layer_types`, else the first and every 6th layer global. */
function layerTypes(w: KvWriter): unknown[] {
  const types = w.hparams["layer_types"];
  if (Array.isArray(types)) return types;
  return Array.from(
    { length: w.need("num_hidden_layers") },
    (_, i) => i === 0 || (i + 1) % 6 === 0 ? "full_attention" : SLIDING,
  );
}

/** The pattern the converter writes: `hybrid_layer_pattern`, else transformers' layer kinds. */
function pattern(w: KvWriter): unknown[] {
  const hybrid = w.hparams["hybrid_layer_pattern"];
  if (Array.isArray(hybrid)) return hybrid;
  return layerTypes(w).map((t) => t === SLIDING ? 1 : 0);
}

/** The sliding layers' KV heads: `swa_num_key_value_heads`, else transformers' twice the global ones. */
function swaKvHeads(w: KvWriter): number {
  return w.num("swa_num_key_value_heads") ?? 2 * w.need("num_key_value_heads");
}

/** The rotated share of a head the converter writes. */
function rotary(w: KvWriter): number {
  return w.num("partial_rotary_factor") ?? Number(w.fullRope["partial_rotary_factor"] ?? ROTARY);
}

/** `MimoV2Model.set_gguf_parameters`. */
function writeMimo2Kv(w: KvWriter): void {
  const h = w.hparams;
  // block_count is the class's: the trunk and the MTP layers.
  w.writeOver({ ...h, num_hidden_layers: w.need("num_hidden_layers") + NEXTN }, writeTextModelKv);
  const hybrid = [...pattern(w), ...Array.from({ length: NEXTN }, () => 1)] as number[];
  const kv = w.need("num_key_value_heads");
  const swaKv = swaKvHeads(w);
  // Which layers have the sliding layers' KV heads: the pattern's (for messages).
  w.cite("hybrid_layer_pattern", "layer_types");
  w.setArray("attention.head_count_kv", "INT32", hybrid.map((s) => s === 1 ? swaKv : kv));
  w.u32("attention.sliding_window", w.need("sliding_window"));
  w.cite("hybrid_layer_pattern", "layer_types");
  w.setArray("attention.sliding_window_pattern", "INT32", hybrid);
  w.u32("attention.value_length", w.need("v_head_dim"));
  w.u32("expert_count", w.need("n_routed_experts"));
  w.u32("expert_feed_forward_length", w.need("moe_intermediate_size"));
  w.u32("rope.dimension_count", Math.trunc(w.need("head_dim") * rotary(w)));
  w.f32("attention.layer_norm_rms_epsilon", w.num("layernorm_epsilon") ?? EPSILON);
  w.f32("attention.value_scale", w.find("attention_value_scale"));
  w.u32("nextn_predict_layers", NEXTN);
}

/** transformers' RoPE of a layer kind: its `rope_parameters` entry, else the class's default. */
function hfRope(w: KvWriter, kind: string): Record<string, unknown> {
  const given = record(record(w.hparams["rope_parameters"])?.[kind]);
  const theta = kind === SLIDING ? SWA_THETA : FULL_THETA;
  return { rope_type: "default", rope_theta: theta, partial_rotary_factor: ROTARY, ...given };
}

/** What of a config llama.cpp's `mimo2` would run otherwise than transformers, or `undefined`. */
function unsupported(w: KvWriter): string | undefined {
  const h = w.hparams;
  const why = (what: string) =>
    `its config.json says ${what}; llama.cpp's mimo2 would not run it as transformers does ` +
    `(APR and SafeTensors output keep it)`;
  for (
    const [swa, main] of [["swa_head_dim", "head_dim"], ["swa_v_head_dim", "v_head_dim"], [
      "swa_num_attention_heads",
      "num_attention_heads",
    ]] as const
  ) {
    if (h[swa] != null && h[swa] !== h[main]) {
      return why(
        `${swa} ${h[swa]}, not ${main} ${h[main]} (transformers and the converter take ` +
          `${main} for the sliding layers too)`,
      );
    }
  }
  const kv = w.need("num_key_value_heads");
  if (swaKvHeads(w) !== 2 * kv) {
    return why(
      `swa_num_key_value_heads ${swaKvHeads(w)} (transformers builds twice ` +
        `num_key_value_heads, ${2 * kv})`,
    );
  }
  if (h["topk_method"] != null && h["topk_method"] !== "noaux_tc") {
    return why(
      `topk_method ${JSON.stringify(h["topk_method"])} (transformers and llama.cpp ` +
        `route as noaux_tc)`,
    );
  }
  const scoring = scoringRefusal(w, "sigmoid", "MiMo-V2-Flash");
  if (scoring !== undefined) return scoring;
  if (h["add_full_attention_sink_bias"] === true) {
    return why(
      "add_full_attention_sink_bias true (transformers builds sinks on the sliding " +
        "layers only)",
    );
  }
  const types = layerTypes(w);
  const hybrid = pattern(w);
  const odd = hybrid.findIndex((s) => s !== 0 && s !== 1);
  if (odd >= 0) {
    return why(
      `hybrid_layer_pattern ${JSON.stringify(hybrid)}, whose layer ${odd} is ` +
        `${JSON.stringify(hybrid[odd])}, neither 0 (full attention) nor 1 (sliding): the ` +
        `converter gives it the full layers' KV heads, llama.cpp slides any non-zero layer`,
    );
  }
  if (
    hybrid.length !== w.need("num_hidden_layers") ||
    hybrid.some((s, i) => (s === 1) !== (types[i] === SLIDING))
  ) {
    return why(
      `hybrid_layer_pattern ${JSON.stringify(hybrid)}, which the converter writes, ` +
        `but transformers computes layer_types ${JSON.stringify(types)}`,
    );
  }
  const eps = w.num("layernorm_epsilon") ?? EPSILON;
  const hfEps = w.num("rms_norm_eps") ?? EPSILON;
  if (eps !== hfEps) {
    return why(
      `layernorm_epsilon ${eps} (written; ${EPSILON} when absent) but transformers ` +
        `normalises with rms_norm_eps ${hfEps}`,
    );
  }
  const full = hfRope(w, "full_attention");
  const swa = hfRope(w, SLIDING);
  const theta = w.fullRope["rope_theta"];
  const swaTheta = record(w.rope[SLIDING])?.["rope_theta"] ?? theta;
  const written: [string, unknown, unknown][] = [
    ["rope_theta", theta, full["rope_theta"]],
    ["swa_rope_theta", swaTheta, swa["rope_theta"]],
    ["partial_rotary_factor", rotary(w), full["partial_rotary_factor"]],
    ["partial_rotary_factor", rotary(w), swa["partial_rotary_factor"]],
  ];
  for (const [field, ours, theirs] of written) {
    if (ours !== theirs) {
      return why(
        `${field} ${ours} (written) but transformers computes with ${theirs} ` +
          `(rope_parameters, else MiMoV2FlashConfig's default)`,
      );
    }
  }
  for (const rope of [full, swa]) {
    if (rope["rope_type"] !== "default") {
      return why(`rope_type ${JSON.stringify(rope["rope_type"])} (llama.cpp: no scaling)`);
    }
  }
  return undefined;
}

const MTP = /^model\.mtp\.layers\.(\d+)\.(.+)$/;

/** An MTP layer's norm before its MLP (`pre_mlp_layernorm`), which the converter maps as `ffn_norm`. */
const MTP_ONLY: readonly (readonly [string, string])[] = [["ffn_norm", "pre_mlp_layernorm"]];

/** The name the converter maps a checkpoint tensor under: sinks with `.weight`, the router bias as `.bias`. */
function readName(name: string): string {
  return name.endsWith(".attention_sink_bias") ? `${name}.weight` : scoreBiasReadName(name);
}

/**
 * The inverse of {@linkcode readName}, for a GGUF read back, with the MTP
 * blocks (past the trunk) under `model.mtp.layers.i`, their `ffn_norm` as
 * `pre_mlp_layernorm` (a trunk layer's is `post_attention_layernorm`).
 */
function hfNameBack(name: string, ggufNames?: ReadonlySet<string>): string {
  const mtp = mtpLayerHfName(name, ggufNames, "model.mtp.layers");
  const named = mtp === name
    ? name
    : mtp.replace(".post_attention_layernorm.", ".pre_mlp_layernorm.");
  return named.endsWith(".attention_sink_bias.weight")
    ? named.slice(0, -".weight".length)
    : scoreBiasHfName(named);
}

/** The block: Llama's, the sinks, the router, the MTP layers' own tensors. */
const BLOCK: readonly (readonly [string, string])[] = [
  ...LLAMA_BLOCK,
  ["attn_sinks", "self_attn.attention_sink_bias"],
  ["ffn_gate_inp", "mlp.gate"],
  GATE_SCORE_BIAS,
  ["nextn.eh_proj", "eh_proj"],
  ["nextn.enorm", "enorm"],
  ["nextn.hnorm", "hnorm"],
  ["layer_output_norm", "final_layernorm"],
];

/**
 * The MTP layers' tensors (`model.mtp.layers.i.*`) as the blocks after the
 * trunk (`blk.{layers + i}.*`), as the converter renames them before mapping.
 */
function mtpMade(tensors: readonly TensorInfo[], w: KvWriter): MadeTensor[] {
  const layers = w.need("num_hidden_layers");
  return tensors.flatMap((info): MadeTensor[] => {
    const m = MTP.exec(info.name);
    if (m === null) return [];
    const piece = /^(.+)\.(weight|bias)$/.exec(readName(m[2]!));
    const gguf = [...BLOCK, ...MTP_ONLY].find(([, hf]) => hf === piece?.[1])?.[0];
    if (Number(m[1]) >= NEXTN || piece === null || gguf === undefined) {
      throw new RangeError(
        `Cannot convert "${info.name}" to GGUF: not a tensor of MiMo-V2-Flash's ${NEXTN} MTP layers`,
      );
    }
    const name = `blk.${layers + Number(m[1])}.${gguf}.${piece[2]}`;
    return [{ info: { ...info, name }, needs: [info.name], open: ([source]) => source!.open() }];
  });
}

/** MiMo-V2-Flash. */
export const MIMO2: Family = {
  name: "mimo2",
  source: "llama.cpp conversion/mimo.py MimoV2Model; transformers MiMoV2FlashForCausalLM",
  configFields: {
    written: [
      "v_head_dim",
      "sliding_window",
      "moe_intermediate_size",
      "attention_value_scale",
      // Dense or MoE per layer: llama.cpp loads the tensors the file has.
      "mlp_layer_types",
      "moe_layer_freq",
      // The published config.json's keys, which the converter reads (and the checks compare).
      "hybrid_layer_pattern",
      "swa_num_key_value_heads",
      "swa_rope_theta",
      "layernorm_epsilon",
    ],
    checked: [
      "layer_types",
      "rope_parameters",
      "rms_norm_eps",
      "swa_head_dim",
      "swa_v_head_dim",
      "swa_num_attention_heads",
      "topk_method",
      "scoring_func",
      "add_full_attention_sink_bias",
    ],
    irrelevant: {
      add_swa_attention_sink_bias:
        "the sliding layers' sinks are tensors, which llama.cpp loads as the file has them",
      sliding_window_size: "the model's own code's copy of sliding_window, which transformers " +
        "and the converter read",
      n_shared_experts: "null in the published configs; transformers builds no shared expert " +
        "(a checkpoint with one has tensors mimo2 has no name for, refused)",
    },
    assumed: [
      activation("hidden_act", SILU),
      { field: "norm_topk_prob", hfDefault: true, llamaCpp: true },
      // llama.cpp's mimo2 reads no expert_weights_scale (the converter writes none).
      { field: "routed_scaling_factor", hfDefault: 1, llamaCpp: 1, alike: [1, null] },
      // Its graph adds no Q/K/V biases.
      { field: "attention_bias", hfDefault: false, llamaCpp: false },
    ],
  },
  hfArchitectures: ["MiMoV2FlashForCausalLM"],
  hfModelTypes: ["mimo_v2_flash"],
  ggufArchitecture: "mimo2",
  ggufRopeType: "neox",
  blockNames: BLOCK,
  experts: ERNIE_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeMimo2Kv,
    // transformers: experts where moe_layer_freq is 1.
    moeLayers: (h) => {
      const freq = h["moe_layer_freq"];
      if (!Array.isArray(freq) || !freq.every((f) => f === 0 || f === 1)) return undefined;
      return { moe: freq.map((f) => f === 1), from: `moe_layer_freq ${JSON.stringify(freq)}` };
    },
    unsupported,
    made: mtpMade,
    extraBlocks: () => NEXTN,
    hfName: readName,
    hfNameBack,
  },
};
