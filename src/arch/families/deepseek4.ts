// This module is browser compatible.

/**
 * DeepSeek-V4 (`DeepseekV4ForCausalLM`: V4-Flash, V4-Pro), after llama.cpp's
 * `DeepseekV4Model` (conversion/deepseek.py), GGUF architecture `deepseek4`.
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
 * GGUF is written as the converter writes it: the hash layers' tables as I32
 * and every layer's routed experts repacked to ggml's MXFP4 blocks (the same
 * nibble order as gpt-oss's, unchanged in value), stacked, both before every
 * other tensor; the bare parameters as `.weight`, `hc_head_*` as
 * `output_hc_*`, the non-hash layers' `ffn.gate.bias` as `exp_probs_b.bias`
 * (the hash layers' unused one dropped, with the `mtp.*` layer); its default
 * chat template (`models/templates/`, the Flash-0731 one for a folder naming
 * 0731) right after `general.architecture`, which a model's own replaces in
 * place; file type `MOSTLY_MXFP4_MOE` and each F32 tensor F32, each BF16
 * matrix BF16, whatever `--outtype` (`tensor_force_quant`); the published
 * FP8 projections (E4M3 `.weight` + E8M0 `.scale` per 128×128 block, which
 * the fp8 checkpoint reader dequantizes as `dequant_model` does) Q8_0,
 * whatever `--outtype` too (`fp8AsQ8_0`). The K-quant presets keep the
 * experts MXFP4, as `llama-quantize --tensor-type exps=mxfp4` does (plain
 * llama-quantize refuses to requantize MXFP4), and refuse those Q8_0
 * matrices without `--allow-requantize`, as llama-quantize does.
 *
 * llama.cpp's CPU kernel multiplies MXFP4 weights by activations rounded to
 * Q8_0, which moves expert and indexer choices: measured on the deepseek4
 * fixture (tests/testdata/families), llama.cpp runs the converter's file
 * (aprkit's, byte for byte) 0.68 off transformers' log-probs (0.64 with
 * flash attention off and an F32 KV cache), while the same file with its
 * experts decoded to F32 runs within 1e-4 there: the graph computes as
 * transformers does. llama.cpp also hard-codes what a config could set
 * otherwise, refused here: 4 hyper-connection streams (it asserts),
 * compress ratios of 0, 4 and 128 only (it refuses others), sqrt(softplus)
 * scoring (it refuses others) and a Hadamard rotation of the indexer from 64
 * dims on. A config.json as transformers 5 saves it (`layer_types` +
 * `compress_rates`, `mlp_layer_types`, `rope_parameters` main/compress), on
 * which the converter fails (and, given only `compress_ratios` and
 * `num_hash_layers`, writes no YaRN: 1.08 off), is folded back into the
 * published form first (`publishedForm`).
 *
 * realizar has no DeepSeek-V4 model: APR output keeps the checkpoint's
 * tensors under their Hugging Face names (the experts as stored).
 *
 * @module
 */

import { DTYPES, elementCount, tensorByteLength } from "../../dtype.ts";
import type { TensorInfo } from "../../tensor.ts";
import { CONVERTER_TEMPLATES } from "../_converter_templates.ts";
import type { Family, MadeTensor } from "../family.ts";
import { type KvWriter, record } from "../kv.ts";
import { activation, SILU } from "../config_fields.ts";
import { scoringRefusal, writeTextModelKvScoredBy } from "../text_model.ts";
import { concatPayloads, int64AsInt32, repackMxfp4 } from "../transforms.ts";
import { INDEXER_FIELDS, indexerUnsupported, writeIndexerKv } from "./deepseek32.ts";

/** The pieces of a layer the GGUF tables name without `.weight` (published as bare parameters). */
const BARE_PIECES =
  /^(hc_(attn|ffn)_(fn|base|scale)|attn\.attn_sink|attn\.(indexer\.)?compressor\.ape|ffn\.gate\.tid2eid)$/;

/** A routed expert's MXFP4 scales, which belong to its `.weight`. */
const EXPERT_SCALE = /^ffn\.experts\.\d+\.w[123]\.scale$/;

/** Bare parameters the converter maps as `<name>.weight` (`_map_dsv4_tensor_name`). */
const BARE_NAME =
  /^(hc_head_(fn|base|scale)|layers\.\d+\.(hc_(attn|ffn)_(fn|base|scale)|attn\.attn_sink|attn\.(indexer\.)?compressor\.ape))$/;

const TID2EID = /^layers\.(\d+)\.ffn\.gate\.tid2eid$/;
const GATE_BIAS = /^layers\.(\d+)\.ffn\.gate\.bias$/;
/** The hash layers' selection bias for image tokens (`FFN_EXP_PROBS_B_VL`). */
const GATE_BIAS_VL = /^layers\.(\d+)\.ffn\.gate\.bias_vl$/;
const EXPERT = /^layers\.(\d+)\.ffn\.experts\.\d+\.w[123]\.(weight|scale)$/;

/** The routed experts' stacks, in the order the converter writes each layer's. */
const EXPERT_STACKS = [
  ["w1", "ffn_gate_exps"],
  ["w2", "ffn_down_exps"],
  ["w3", "ffn_up_exps"],
] as const;

/** llama.cpp's `LLAMA_FTYPE_MOSTLY_MXFP4_MOE`, which `DeepseekV4Model.prepare_tensors` always sets. */
const MOSTLY_MXFP4_MOE = 38;

/** The compress ratios llama.cpp's deepseek4 loads ("only supports compression ratios 0, 4, and 128"). */
const COMPRESS_RATIOS = [0, 4, 128];

/** The default chat template `DeepseekV4Model.__init__` writes (`models/templates/`). */
function defaultTemplate(folderName: string | undefined): string {
  const name = folderName?.includes("0731") === true
    ? "deepseek-ai-DeepSeek-V4-Flash-0731.jinja"
    : "deepseek-ai-DeepSeek-V4.jinja";
  return CONVERTER_TEMPLATES[name]!;
}

/** The published `compress_ratios`, one per layer (the MTP layer's after them). */
function compressRatios(w: KvWriter): number[] {
  // Found (not read directly), so the key names the field.
  const ratios = w.find("compress_ratios");
  if (!Array.isArray(ratios) || !ratios.every((r) => Number.isSafeInteger(r))) {
    throw new RangeError("config.json has no list of integers for compress_ratios");
  }
  return ratios as number[];
}

/** transformers 5's layer types → the published compress ratios (`_COMPRESS_RATIO_TO_LAYER_TYPE`). */
const LAYER_RATIO_KEYS: Readonly<Record<string, string | 0>> = {
  sliding_attention: 0,
  compressed_sparse_attention: "compressed_sparse_attention",
  heavily_compressed_attention: "heavily_compressed_attention",
};

/** `DeepseekV4Config.default_compress_rates`. */
const DEFAULT_COMPRESS_RATES = {
  compressed_sparse_attention: 4,
  heavily_compressed_attention: 128,
};

/**
 * A config.json in the published form (`compress_ratios`, `num_hash_layers`,
 * `rope_scaling` + `rope_theta`), which the converter reads: one saved by
 * transformers 5 (`layer_types` + `compress_rates`, `mlp_layer_types`,
 * `rope_parameters` keyed `main`/`compress`) folded back as transformers
 * folds the published one into its fields. What cannot be folded back is
 * left out, for `unsupported` to name.
 */
function publishedForm(h: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...h };
  const layers = h["layer_types"];
  if (out["compress_ratios"] == null && Array.isArray(layers)) {
    const rates = { ...DEFAULT_COMPRESS_RATES, ...record(h["compress_rates"]) } as Record<
      string,
      unknown
    >;
    const ratios = layers.map((t) => {
      const key = Object.hasOwn(LAYER_RATIO_KEYS, String(t)) ? LAYER_RATIO_KEYS[String(t)] : null;
      return key === 0 ? 0 : key === null ? null : rates[key!];
    });
    if (ratios.every((r) => Number.isSafeInteger(r))) out["compress_ratios"] = ratios;
  }
  const mlp = h["mlp_layer_types"];
  if (out["num_hash_layers"] == null && Array.isArray(mlp)) {
    const hash = mlp.filter((t) => t === "hash_moe").length;
    // Only a leading run of hash layers has a published form.
    if (mlp.slice(0, hash).every((t) => t === "hash_moe")) out["num_hash_layers"] = hash;
  }
  const rope = record(h["rope_parameters"]);
  const main = record(rope?.["main"]);
  const compress = record(rope?.["compress"]);
  if (h["rope_scaling"] == null && (main !== undefined || compress !== undefined)) {
    out["rope_parameters"] = undefined;
    out["rope_theta"] = main?.["rope_theta"] ?? h["rope_theta"];
    out["compress_rope_theta"] = compress?.["rope_theta"] ?? h["compress_rope_theta"];
    // The published rope_scaling is the compressed layers' YaRN; the main
    // RoPE is plain (transformers folds it so).
    const type = compress?.["rope_type"] ?? compress?.["type"];
    if (type === "yarn") {
      out["rope_scaling"] = {
        type: "yarn",
        factor: compress!["factor"],
        original_max_position_embeddings: compress!["original_max_position_embeddings"],
        beta_fast: compress!["beta_fast"],
        beta_slow: compress!["beta_slow"],
      };
    }
  }
  return out;
}

/** `DeepseekV4Model.set_gguf_parameters`, over the published form. */
function writeDeepseek4Kv(w: KvWriter): void {
  w.writeOver(publishedForm(w.hparams), writePublishedKv);
}

/** `DeepseekV4Model.set_gguf_parameters` on a published config.json. */
function writePublishedKv(w: KvWriter): void {
  // The published rope_scaling and rope_theta, as the converter reads them.
  w.writeOver(
    { ...w.hparams, rope_parameters: undefined },
    (parent) => writeTextModelKvScoredBy(parent, "sqrtsoftplus"),
  );
  const layers = w.need("num_hidden_layers");
  const limit = w.need("swiglu_limit");
  const hc = w.need("hc_mult");
  w.u32("rope.dimension_count", w.need("qk_rope_head_dim"));
  w.u32("attention.q_lora_rank", w.need("q_lora_rank"));
  w.u32("attention.sliding_window", w.need("sliding_window"));
  w.u32("expert_feed_forward_length", w.need("moe_intermediate_size"));
  w.u32("expert_shared_count", w.need("n_shared_experts"));
  w.f32("expert_weights_scale", w.need("routed_scaling_factor"));
  // transformers' default (the converter reads it through transformers' config).
  w.set("expert_weights_norm", "BOOL", w.hparams["norm_topk_prob"] ?? true);
  w.setArray("swiglu_clamp_exp", "FLOAT32", Array(layers).fill(limit));
  w.setArray("swiglu_clamp_shexp", "FLOAT32", Array(layers).fill(limit));
  writeIndexerKv(w);
  w.u32("attention.output_group_count", w.need("o_groups"));
  w.u32("attention.output_lora_rank", w.need("o_lora_rank"));
  w.setArray("attention.compress_ratios", "INT32", compressRatios(w));
  w.f32("attention.compress_rope_freq_base", w.need("compress_rope_theta"));
  // Read at the top: named exactly (o_groups may hold the same number).
  w.computedFrom("hc_mult");
  w.u32("hyper_connection.count", hc);
  w.u32("hyper_connection.sinkhorn_iterations", w.need("hc_sinkhorn_iters"));
  w.f32("hyper_connection.epsilon", w.need("hc_eps"));
  w.u32("hash_layer_count", w.need("num_hash_layers"));
  w.computedFrom("hidden_size", "hc_mult");
  w.u32("embedding_length_out", w.need("hidden_size") * hc);
}

/**
 * What of a config llama.cpp's deepseek4 cannot run, or that the converter
 * cannot read (transformers 5's own form), or `undefined`.
 */
function unsupported(config: KvWriter): string | undefined {
  const w = config.over(publishedForm(config.hparams));
  const h = w.hparams;
  if (h["num_hash_layers"] == null || h["compress_ratios"] == null) {
    return "its config.json gives neither compress_ratios and num_hash_layers (the published " +
      "form, which llama.cpp's converter reads) nor layer_types and mlp_layer_types with " +
      "a leading run of hash_moe layers that fold into them";
  }
  const rope = record(h["rope_parameters"]);
  if (rope !== undefined && h["rope_scaling"] == null) {
    return "its config.json's rope_parameters are not transformers 5's main/compress pair, " +
      "which aprkit writes as the published rope_scaling and rope_theta";
  }
  const scaling = record(h["rope_scaling"]);
  const attention = record(record(config.hparams["rope_parameters"])?.["compress"])
    ?.["attention_factor"];
  const main = record(record(config.hparams["rope_parameters"])?.["main"]);
  if (
    (attention != null && attention !== 1) ||
    (main !== undefined && (main["rope_type"] ?? "default") !== "default") ||
    (scaling !== undefined && (scaling["type"] ?? scaling["rope_type"]) !== "yarn")
  ) {
    return "its config.json's RoPE is not the published one (YaRN on the compressed layers " +
      "only, attention factor 1), which llama.cpp's deepseek4 computes";
  }
  const hc = w.need("hc_mult");
  if (hc !== 4) {
    return `its config.json has hc_mult ${hc}; llama.cpp's deepseek4 computes 4 ` +
      "hyper-connection streams (it asserts)";
  }
  const ratios = compressRatios(w);
  const layers = w.need("num_hidden_layers");
  const other = ratios.find((r) => !COMPRESS_RATIOS.includes(r));
  if (other !== undefined || ratios.length < layers) {
    return `its config.json has compress_ratios ${JSON.stringify(ratios)}; llama.cpp's ` +
      `deepseek4 loads one of ${COMPRESS_RATIOS.join(", ")} for each of its ${layers} layers`;
  }
  const hash = w.need("num_hash_layers");
  if (!Number.isSafeInteger(hash) || hash < 0 || hash > layers) {
    return `its config.json has num_hash_layers ${hash}, not 0 to its ${layers} layers`;
  }
  return scoringRefusal(w, "sqrtsoftplus", "DeepSeek-V4") ?? indexerUnsupported(w);
}

/** A tensor under a GGUF name, its bytes as they are. */
function copied(info: TensorInfo, name: string): MadeTensor {
  return { info: { ...info, name }, needs: [info.name], open: ([source]) => source!.open() };
}

/**
 * `_write_hash_routing_tensors`: a hash layer's token → expert table as
 * I32, written first.
 */
function hashTable(info: TensorInfo, layer: number): MadeTensor {
  if (info.dtype !== "I64" && info.dtype !== "I32") {
    throw new RangeError(
      `Cannot convert "${info.name}" ${info.dtype} [${info.shape}] to GGUF: expected the ` +
        "hash routing table as I64 or I32 expert ids",
    );
  }
  const shape = info.shape;
  return {
    info: {
      name: `blk.${layer}.ffn_gate_tid2eid.weight`,
      dtype: "I32",
      shape,
      byteLength: elementCount(shape) * 4,
    },
    needs: [info.name],
    first: true,
    open: ([source]) => info.dtype === "I64" ? int64AsInt32(source!.open()) : source!.open(),
  };
}

/**
 * `_write_mxfp4_expert_tensor`: one projection of a layer's routed experts,
 * each expert's E2M1 pairs (`.weight`, I8 `[rows, cols / 2]`) and E8M0
 * scales (`.scale`, `[rows, cols / 32]`) repacked to ggml's MXFP4 blocks,
 * unchanged in value (gpt-oss's repacking: the same nibble order), stacked
 * `[experts, rows, cols]` and written first.
 */
function expertStack(
  byName: ReadonlyMap<string, TensorInfo>,
  layer: number,
  proj: string,
  gguf: string,
  experts: number,
): MadeTensor {
  // A missing expert tensor is named when the stack waits for it in vain
  // ("never arrived"); the shape check first names a misspelt one.
  const names = Array.from({ length: experts }, (_, e) => {
    const base = `layers.${layer}.ffn.experts.${e}.${proj}`;
    return [`${base}.weight`, `${base}.scale`] as const;
  });
  const pairs = names.flatMap(([w, s]) => {
    const [weight, scale] = [byName.get(w), byName.get(s)];
    return weight === undefined || scale === undefined ? [] : [[weight, scale] as const];
  });
  if (pairs.length === 0) {
    throw new RangeError(
      `Cannot stack the experts of layer ${layer}: none has its ${proj}.weight and ${proj}.scale`,
    );
  }
  const [w0] = pairs[0]!;
  const [rows, packed] = [w0.shape[0] ?? 0, w0.shape[1] ?? 0];
  for (const [weight, scale] of pairs) {
    if (
      (weight.dtype !== "I8" && weight.dtype !== "U8") || weight.shape.length !== 2 ||
      weight.shape[0] !== rows || weight.shape[1] !== packed || packed % 16 !== 0 ||
      (scale.dtype !== "F8_E8M0" && scale.dtype !== "U8") || scale.shape.length !== 2 ||
      scale.shape[0] !== rows || scale.shape[1] !== packed / 16
    ) {
      throw new RangeError(
        `Cannot convert "${weight.name}" ${weight.dtype} [${weight.shape}] and "${scale.name}" ` +
          `${scale.dtype} [${scale.shape}] to GGUF: expected every expert's MXFP4 pairs I8 ` +
          `[${rows}, ${packed}] (a multiple of 16) and E8M0 scales [${rows}, ${packed / 16}]`,
      );
    }
  }
  const shape = [experts, rows, packed * 2];
  const layout = { rows, groups: packed / 16, start: 0, step: 1 };
  return {
    info: {
      name: `blk.${layer}.${gguf}.weight`,
      dtype: "MXFP4",
      shape,
      byteLength: tensorByteLength("MXFP4", shape),
    },
    needs: names.flat(),
    first: true,
    open: (sources) =>
      concatPayloads(
        names.map((_, e) => () =>
          repackMxfp4(sources[2 * e]!.open(), sources[2 * e + 1]!.open(), layout)
        ),
      ),
  };
}

/**
 * `DeepseekV4Model.generate_extra_tensors` (the hash layers' tables, then
 * each layer's experts, first) and the selection bias of the other layers
 * (`ffn.gate.bias` → `exp_probs_b.bias`, where its name is the router's) and
 * the image tokens' (`ffn.gate.bias_vl` → `exp_probs_b_vl.bias`).
 */
function deepseek4Made(tensors: readonly TensorInfo[], config: KvWriter): MadeTensor[] {
  const w = config.over(publishedForm(config.hparams));
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const hash = w.need("num_hash_layers");
  const made: MadeTensor[] = [];
  for (let layer = 0; layer < hash; layer++) {
    const info = byName.get(`layers.${layer}.ffn.gate.tid2eid`);
    if (info === undefined) {
      throw new RangeError(
        `Cannot convert to GGUF: hash layer ${layer} has no "layers.${layer}.ffn.gate.tid2eid" ` +
          `(config.json's num_hash_layers is ${hash})`,
      );
    }
    made.push(hashTable(info, layer));
  }
  const experts = w.need("n_routed_experts");
  const layers = [
    ...new Set(tensors.flatMap((t) => {
      const m = EXPERT.exec(t.name);
      return m === null ? [] : [Number(m[1])];
    })),
  ].sort((a, b) => a - b);
  for (const layer of layers) {
    for (const [proj, gguf] of EXPERT_STACKS) {
      made.push(expertStack(byName, layer, proj, gguf, experts));
    }
  }
  for (const info of tensors) {
    const bias = GATE_BIAS.exec(info.name);
    const vl = GATE_BIAS_VL.exec(info.name);
    const name = bias !== null && Number(bias[1]) >= hash
      ? `blk.${bias[1]}.exp_probs_b.bias`
      : vl !== null
      ? `blk.${vl[1]}.exp_probs_b_vl.bias`
      : undefined;
    if (name === undefined) continue;
    if (DTYPES[info.dtype].layout !== "elements") {
      throw new RangeError(
        `Cannot convert "${info.name}" ${info.dtype} to GGUF: expected a float bias`,
      );
    }
    made.push(copied(info, name));
  }
  return made;
}

/**
 * What the converter leaves out: the MTP layers (`mtp.*`, without
 * `--mtp`), a hash layer's selection bias (unused: it routes by the table)
 * and a table outside the hash layers.
 */
function drops(name: string, w: KvWriter): boolean {
  if (name.startsWith("mtp.")) return true;
  const published = publishedForm(w.hparams)["num_hash_layers"];
  const hash = typeof published === "number" ? published : 0;
  const bias = GATE_BIAS.exec(name);
  if (bias !== null) return Number(bias[1]) < hash;
  const table = TID2EID.exec(name);
  return table !== null && Number(table[1]) >= hash;
}

/** DeepSeek-V4-Flash, V4-Pro. */
export const DEEPSEEK4: Family = {
  name: "deepseek4",
  source: "llama.cpp conversion/deepseek.py DeepseekV4Model; transformers DeepseekV4ForCausalLM",
  configFields: {
    // What the converter writes (DeepseekV4Model.set_gguf_parameters); llama.cpp's
    // deepseek4 reads each of them (the values it hard-codes are refused: `unsupported`).
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
    ["output_hc_fn", "hc_head_fn"],
    ["output_hc_base", "hc_head_base"],
    ["output_hc_scale", "hc_head_scale"],
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
  gguf: {
    writeKv: writeDeepseek4Kv,
    writeEarlyKv: (w, folderName) =>
      w.set("tokenizer.chat_template", "STRING", defaultTemplate(folderName)),
    unsupported,
    made: deepseek4Made,
    drops,
    hfName: (name) => BARE_NAME.test(name) ? `${name}.weight` : name,
    fileType: MOSTLY_MXFP4_MOE,
    keepsSourceFloats: true,
    fp8AsQ8_0: true,
  },
  ggufReadBackRefusal:
    "aprkit does not read a DeepSeek-V4 GGUF back into Hugging Face's layout (its experts are " +
    "stacked MXFP4, the hash routing table I32, the MTP layer's e/h projections concatenated); " +
    "--keep-names keeps its GGUF tensors",
};
