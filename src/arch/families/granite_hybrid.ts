// This module is browser compatible.

/**
 * Granite 4.0-H (`GraniteMoeHybridForCausalLM`), after llama.cpp's
 * `GraniteHybridModel` (conversion/granite.py, a `Mamba2Model` and a
 * `GraniteMoeModel`): Mamba-2 layers (`model.layers.N.mamba.*`, made as
 * Mamba-2's: `ssm.ts`) and attention layers (Q/K permuted, as Llama's), each
 * followed by a MoE block whose experts are fused (`block_sparse_moe.input_linear`,
 * split into gate and up stacks) and a shared MLP (`shared_mlp.input_linear`,
 * split into gate and up rows; the dense variants' only MLP). Granite's keys
 * and multipliers, then the SSM keys; the layer pattern is
 * `attention.head_count_kv` per layer, 0 for a Mamba layer. llama.cpp rotates
 * nothing in a hybrid (`rope.scaling.finetuned` false), as the published
 * configs' `position_embedding_type: "nope"` says.
 *
 * `layer_types` is read in the published spelling (`mamba`/`attention`) and in
 * the one transformers 5 saves (`linear_attention`/`full_attention`), which
 * the converter does not read (it then finds no attention layer).
 *
 * @module
 */

import { tensorByteLength } from "../../dtype.ts";
import type { TensorInfo } from "../../tensor.ts";
import { activation, SILU } from "../config_fields.ts";
import { type Family, LLAMA_BLOCK, type MadeTensor } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { ssmTensors } from "../ssm.ts";
import { keepRanges } from "../transforms.ts";
import { GRANITE_MULTIPLIERS, writeGraniteKv } from "./granite.ts";
import { GRANITEMOE_EXPERTS, writeSharedExpertWidth } from "./granitemoe.ts";
import { DT_BIAS_NAMES, mamba2Tensors, READ_BACK_REFUSAL, unclamped } from "./mamba.ts";
import { impliedKeys } from "../implied_keys.ts";

/**
 * The attention layers (`GraniteHybridModel.get_attn_layers`): from
 * `layer_types` (Granite), else `attn_layer_indices` or
 * `attn_layer_period`/`attn_layer_offset` (Bamba).
 */
function attentionLayers(w: KvWriter): number[] {
  const types = w.find("layer_types") ?? w.find("layers_block_type");
  if (Array.isArray(types) && types.length > 0) {
    return types.flatMap((t, i) => t === "attention" || t === "full_attention" ? [i] : []);
  }
  const indices = w.find("attn_layer_indices");
  if (Array.isArray(indices) && indices.length > 0) return indices.map(Number);
  const period = w.num("attn_layer_period");
  const offset = w.num("attn_layer_offset") ?? (w.hparams["attn_layer_offset"] === 0 ? 0 : NaN);
  const layers = w.num("num_hidden_layers") ?? 0;
  if (period === undefined) return [];
  return Array.from({ length: layers }, (_, i) => i).filter((i) => i % period === offset);
}

/** `mamba_`-prefixed keys too (`GraniteHybridModel.find_hparam`). */
function find(w: KvWriter, ...keys: string[]): unknown {
  return w.find(...keys, ...keys.map((k) => `mamba_${k}`));
}

/** The SSM's inner width and group count as the converter reads them. */
function sizes(w: KvWriter): { inner: number; groups: number } {
  const dModel = Number(find(w, "head_dim", "hidden_size", "d_model"));
  return {
    inner: Number(find(w, "expand", "num_heads")) * dModel,
    groups: Number(find(w, "n_groups", "num_groups")),
  };
}

/**
 * `GraniteHybridModel.set_gguf_parameters`, whose attention rotates (Bamba)
 * or not (Granite 4.0-H).
 */
const writeKv = (rotates: boolean) => (w: KvWriter): void => {
  writeGraniteKv(w);
  writeSharedExpertWidth(w);
  w.u32("ssm.conv_kernel", find(w, "conv_kernel", "d_conv"));
  w.u32("ssm.state_size", find(w, "state_size", "d_state", "state_dim", "ssm_state_size"));
  w.u32("ssm.group_count", sizes(w).groups);
  // Read again here: the inner width's key names the fields it came from.
  w.u32("ssm.inner_size", sizes(w).inner);
  w.u32("ssm.time_step_rank", find(w, "n_heads", "num_heads"));
  const attention = new Set(attentionLayers(w));
  const kv = w.need("num_key_value_heads", "n_head_kv");
  const layers = w.need("num_hidden_layers");
  const perLayer = Array.from({ length: layers }, (_, i) => attention.has(i) ? kv : 0);
  const rotary = w.hparams["attn_rotary_emb"];
  if (typeof rotary === "number" && rotary !== 0) w.u32("rope.dimension_count", rotary);
  w.setArray("attention.head_count_kv", "INT32", perLayer);
  w.set("rope.scaling.finetuned", "BOOL", rotates);
  if (!rotates) w.u32("context_length", 2 ** 20);
};

const why = (what: string, llamaCpp: string) =>
  `its config.json has ${what}; llama.cpp's granitehybrid reads no key for it and computes ` +
  `as with ${llamaCpp}`;

/** What both classes refuse: no Mamba layer, a clamped time step. */
function hybridUnsupported(w: KvWriter): string | undefined {
  const layers = w.num("num_hidden_layers") ?? 0;
  if (attentionLayers(w).length === layers) {
    return "its layer pattern has no Mamba layer; llama.cpp's converter writes such a model as " +
      "granite or granitemoe, which aprkit does not write";
  }
  if (!unclamped(w.hparams["time_step_limit"])) {
    return why(`time_step_limit ${JSON.stringify(w.hparams["time_step_limit"])}`, "no clamp");
  }
  return undefined;
}

function unsupported(w: KvWriter): string | undefined {
  const position = w.hparams["position_embedding_type"] ?? null;
  if (position === "rope") {
    return why(`position_embedding_type "rope"`, `"nope" (a hybrid's attention rotates nothing)`);
  }
  return hybridUnsupported(w);
}

/**
 * Bamba rotates part of each head (transformers' default 0.5): llama.cpp
 * rotates the first `rope.dimension_count` of the converter's permuted rows,
 * which are not the dims transformers' partial `rotate_half` pairs.
 */
function bambaUnsupported(w: KvWriter): string | undefined {
  const partial = w.fullRope["partial_rotary_factor"] ?? 0.5;
  if (partial !== 1) {
    return `its config.json has partial_rotary_factor ${partial} (transformers' default 0.5 when ` +
      `absent); llama.cpp rotates the converter's permuted Q/K rows otherwise than transformers ` +
      `rotates part of each head (1.46 apart in log-probability, measured), and computes as ` +
      `transformers only with 1`;
  }
  return hybridUnsupported(w);
}

/** A 2-D tensor's rows `[from, to)` under a GGUF name. */
function rows(info: TensorInfo, name: string, from: number, to: number): MadeTensor {
  const [all, cols] = info.shape as [number, number];
  const rowBytes = tensorByteLength(info.dtype, [cols]);
  const shape = [to - from, cols];
  if (info.shape.length !== 2 || to > all) {
    throw new RangeError(`Cannot split "${info.name}" [${info.shape}] at row ${from}–${to}`);
  }
  return {
    info: { name, dtype: info.dtype, shape, byteLength: tensorByteLength(info.dtype, shape) },
    needs: [info.name],
    open: ([source]) => keepRanges(source!.open(), [[from * rowBytes, to * rowBytes]]),
  };
}

/**
 * The shared MLP (`GraniteMoeModel.modify_tensors`): `input_linear` split
 * into gate and up rows, as the shared expert's with experts, else as the
 * dense feed-forward's; `output_linear` likewise.
 */
function sharedMlp(tensors: readonly TensorInfo[], w: KvWriter): MadeTensor[] {
  const experts = Boolean(w.hparams["num_local_experts"]);
  const suffix = experts ? "_shexp" : "";
  const made: MadeTensor[] = [];
  for (const info of tensors) {
    const m = /^model\.layers\.(\d+)\.shared_mlp\.(input|output)_linear\.weight$/.exec(info.name);
    if (m === null) continue;
    const blk = `blk.${m[1]}`;
    if (m[2] === "output") {
      made.push(rows(info, `${blk}.ffn_down${suffix}.weight`, 0, info.shape[0]!));
      continue;
    }
    const ff = w.need("shared_intermediate_size");
    made.push(rows(info, `${blk}.ffn_gate${suffix}.weight`, 0, ff));
    made.push(rows(info, `${blk}.ffn_up${suffix}.weight`, ff, 2 * ff));
  }
  return made;
}

const SSM = mamba2Tensors("mamba", sizes);

/** The hybrids' layer pattern and SSM fields, written as keys or tensor shapes. */
const MAMBA_WRITTEN = [
  "layer_types",
  "mamba_n_heads",
  "mamba_d_head",
  "mamba_expand",
  "mamba_n_groups",
  "mamba_d_state",
  "mamba_d_conv",
  // Its bias tensor, which llama.cpp loads when the file has it.
  "mamba_conv_bias",
];

/** Granite 4.0-H. */
export const GRANITE_HYBRID: Family = {
  name: "granitehybrid",
  source: "llama.cpp conversion/granite.py GraniteHybridModel; transformers " +
    "GraniteMoeHybridForCausalLM",
  configFields: {
    written: [
      ...GRANITE_MULTIPLIERS,
      "shared_intermediate_size",
      "layers_block_type",
      ...MAMBA_WRITTEN,
    ],
    checked: ["position_embedding_type", "time_step_limit"],
    assumed: [
      activation("hidden_act", SILU),
      { field: "mamba_proj_bias", hfDefault: false, llamaCpp: false },
    ],
    irrelevant: {
      mamba_chunk_size: "the chunked scan computes the same values as one pass",
    },
  },
  hfArchitectures: ["GraniteMoeHybridForCausalLM"],
  hfModelTypes: ["granitemoehybrid"],
  ggufArchitecture: "granitehybrid",
  ggufRopeType: "norm",
  blockNames: [
    ...LLAMA_BLOCK,
    ["ffn_gate_inp", "block_sparse_moe.router.layer"],
    ["ssm_in", "mamba.in_proj"],
    ["ssm_conv1d", "mamba.conv1d"],
    ["ssm_dt", "mamba.dt_proj"],
    ["ssm_out", "mamba.out_proj"],
  ],
  experts: GRANITEMOE_EXPERTS,
  hybrid: true,
  permutesQk: true,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  ggufReadBackRefusal: READ_BACK_REFUSAL.replace("a Mamba GGUF", "a Granite 4.0-H GGUF"),
  // Granite 4.0's published tokenizer (100352 tokens, cl100k's) hashes as
  // databricks/dbrx-base's: Llama 3's regex without ignore_merges (aprkit's
  // `smaug-bpe`), which llama.cpp runs alike under `dbrx`.
  preTokenizer: "dbrx",
  gguf: {
    writeKv: writeKv(false),
    // transformers checks mamba_d_head × mamba_n_heads is the inner width; the converter reads neither.
    impliedKeys: (h) => impliedKeys(h, [["ssm.inner_size", "mamba_d_head", "mamba_n_heads"]]),
    unsupported,
    llamaKeys: true,
    made: (tensors, w) => [
      ...ssmTensors(tensors, w, "model.layers", SSM),
      ...sharedMlp(tensors, w),
    ],
    ...DT_BIAS_NAMES,
  },
};

// Bamba has no experts, and its tokenizer is not Granite 4.0's.
const { experts: _experts, preTokenizer: _pre, ...HYBRID } = GRANITE_HYBRID;

/** Bamba: Granite 4.0-H's converter class with RoPE, a dense MLP and its own names. */
export const BAMBA: Family = {
  ...HYBRID,
  name: "bamba",
  source: "llama.cpp conversion/granite.py GraniteHybridModel; transformers BambaForCausalLM",
  configFields: {
    written: [
      "attn_layer_indices",
      ...MAMBA_WRITTEN,
    ],
    checked: ["time_step_limit", "partial_rotary_factor"],
    assumed: GRANITE_HYBRID.configFields.assumed ?? [],
    irrelevant: {
      ...GRANITE_HYBRID.configFields.irrelevant,
      num_logits_to_keep: "how many positions transformers computes logits for",
      z_loss_coefficient: "training only (a loss term)",
    },
  },
  hfArchitectures: ["BambaForCausalLM"],
  hfModelTypes: ["bamba"],
  globalNames: [["output_norm", "model.final_layernorm"]],
  blockNames: [
    ...LLAMA_BLOCK.filter(([gguf]) => gguf.startsWith("attn_")),
    ["ffn_norm", "pre_ff_layernorm"],
    ["ffn_gate", "feed_forward.gate_proj"],
    ["ffn_up", "feed_forward.up_proj"],
    ["ffn_down", "feed_forward.down_proj"],
    ...GRANITE_HYBRID.blockNames.filter(([gguf]) => gguf.startsWith("ssm_")),
  ],
  ggufReadBackRefusal: READ_BACK_REFUSAL.replace("a Mamba GGUF", "a Bamba GGUF"),
  gguf: { ...GRANITE_HYBRID.gguf!, writeKv: writeKv(true), unsupported: bambaUnsupported },
};
