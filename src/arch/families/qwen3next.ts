// This module is browser compatible.

/**
 * Qwen3-Next (`Qwen3NextForCausalLM`), after llama.cpp's `Qwen3NextModel`
 * (conversion/qwen.py, a `Qwen2MoeModel`), GGUF architecture `qwen3next`;
 * and what Qwen3.5 (`qwen35.ts`) shares with it.
 *
 * A hybrid: most layers are gated DeltaNet linear attention (`linear_attn.*`,
 * llama.cpp's recurrent `ssm_*` tensors), every `full_attention_interval`-th
 * (by `layer_types`) gated full attention, whose `q_proj` holds each head's
 * query and output gate side by side (llama.cpp splits it the same way, so
 * it is written as it is). Every layer's feed-forward is Qwen2-MoE's (experts,
 * a shared expert with its sigmoid gate). On the way to GGUF, as the
 * converter does: `A_log` becomes `ssm_a = −exp(A_log)`; `dt_bias` is
 * `ssm_dt.bias`; the depthwise `conv1d` kernel `[channels, 1, kernel]` loses
 * its middle axis; every RMSNorm but the linear attention's gated one is
 * stored as `w − 1` (transformers multiplies by `1 + w`, llama.cpp by `w`),
 * so 1 is added; and the fused `in_proj_qkvz`, grouped per key head as
 * `[q, k, v, z]`, is split into `attn_qkv` (all q rows, then all k, then all
 * v) and `attn_gate` (the z rows).
 *
 * Multi-token-prediction layers (`mtp.*`, which transformers does not load)
 * are written as the converter writes them by default, as the blocks after
 * the trunk (`mtp_num_hidden_layers` counts them, else their tensors do;
 * `nextn_predict_layers`).
 *
 * @module
 */

import { tensorByteLength } from "../../dtype.ts";
import type { TensorInfo } from "../../tensor.ts";
import { type Family, LLAMA_BLOCK, type MadeTensor } from "../family.ts";
import { type KvWriter, record } from "../kv.ts";
import { mapFloats, rangesInOrder } from "../transforms.ts";
import { activation, type Assumption, type ConfigFields, SILU } from "../config_fields.ts";
import { EVERY_LAYER_MOE, QWEN_MOE_EXPERTS, writeQwenMoeKv } from "./qwen2moe.ts";
import { mtpSourceNames, NEXTN_BLOCK } from "../nextn.ts";

/** The linear attention's sizes (`linear_*` of `config.json`). */
export interface LinearAttention {
  readonly keyHeads: number;
  readonly valueHeads: number;
  readonly keyDim: number;
  readonly valueDim: number;
  readonly hidden: number;
}

/** The linear attention's sizes, or a RangeError naming what is missing. */
export function linearAttention(hparams: Readonly<Record<string, unknown>>): LinearAttention {
  const get = (key: string): number => {
    const v = hparams[key];
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
      throw new RangeError(`config.json has no positive integer ${key}`);
    }
    return v;
  };
  return {
    keyHeads: get("linear_num_key_heads"),
    valueHeads: get("linear_num_value_heads"),
    keyDim: get("linear_key_head_dim"),
    valueDim: get("linear_value_head_dim"),
    hidden: get("hidden_size"),
  };
}

/**
 * `Qwen3NextModel.set_gguf_parameters` after Qwen2-MoE's keys: the linear
 * attention's sizes as llama.cpp's SSM keys, which layers are recurrent, and
 * the rotated dims (`partial_rotary_factor` of the head, 0.25 by default).
 */
export function writeQwen3NextKv(w: KvWriter): void {
  const mtp = mtpLayers(w.hparams);
  // block_count is the class's: the trunk and the MTP layers.
  w.writeOver(
    { ...w.hparams, num_hidden_layers: w.need("num_hidden_layers") + mtp },
    writeQwenMoeKv,
  );
  if (mtp > 0) w.u32("nextn_predict_layers", mtp);
  w.u32("ssm.conv_kernel", w.need("linear_conv_kernel_dim"));
  w.u32("ssm.state_size", w.need("linear_key_head_dim"));
  w.u32("ssm.group_count", w.need("linear_num_key_heads"));
  w.u32("ssm.time_step_rank", w.need("linear_num_value_heads"));
  w.u32("ssm.inner_size", w.need("linear_value_head_dim") * w.need("linear_num_value_heads"));
  const types = w.find("layer_types");
  if (Array.isArray(types)) {
    const layers = w.need("num_hidden_layers");
    if (types.length !== layers) {
      throw new RangeError(
        `config.json: layer_types has ${types.length} entries for ${layers} layers`,
      );
    }
    // The MTP layers attend (full attention).
    const recurrent = [...types.map((t) => t === "linear_attention"), ...Array(mtp).fill(false)];
    w.setArray("attention.recurrent_layers", "BOOL", recurrent);
  }
  w.u32("full_attention_interval", w.hparams["full_attention_interval"] ?? 4);
  const head = w.num("head_dim") ?? w.need("hidden_size") / w.need("num_attention_heads");
  const factor = w.rope["partial_rotary_factor"] ?? 0.25;
  if (typeof factor !== "number") {
    throw new RangeError("config.json: partial_rotary_factor is not a number");
  }
  w.u32("rope.dimension_count", Math.trunc(head * factor));
}

/**
 * What llama.cpp's qwen3next and qwen35 loaders assume of the linear
 * attention: one head size for keys and values (both read from
 * `ssm.state_size`), and value heads a multiple of the key heads.
 */
export function linearAttentionRefusal(w: KvWriter): string | undefined {
  const a = linearAttention(w.hparams);
  if (a.keyDim !== a.valueDim) {
    return `its config.json has linear_key_head_dim ${a.keyDim} and linear_value_head_dim ` +
      `${a.valueDim}; llama.cpp's ${w.arch} takes both from ssm.state_size (one size)`;
  }
  if (a.valueHeads % a.keyHeads !== 0) {
    return `its config.json has linear_num_value_heads ${a.valueHeads}, not a multiple of ` +
      `linear_num_key_heads ${a.keyHeads}, which llama.cpp's ${w.arch} needs`;
  }
  // Checked before the keys are made: each MTP layer is a block of block_count
  // and an entry of recurrent_layers (Qwen3.5 publishes 1).
  const mtp = mtpLayers(w.hparams);
  const layers = w.need("num_hidden_layers");
  if (mtp > layers) {
    return `its config.json has mtp_num_hidden_layers ${mtp}, more than its ` +
      `num_hidden_layers ${layers}: no multi-token-prediction block count a checkpoint has`;
  }
  return undefined;
}

/**
 * The full-attention layers' output projection has a bias in transformers
 * with `attention_bias`; llama.cpp's qwen3next and qwen35 graphs add none.
 */
export const NO_ATTENTION_BIAS: Assumption = {
  field: "attention_bias",
  hfDefault: false,
  llamaCpp: false,
};

/**
 * The fields Qwen3-Next and Qwen3.5 share (the MoE widths are absent from
 * the dense Qwen3.5's config); Qwen3.5-MoE's router always normalises its
 * top-k weights, as llama.cpp's does.
 */
export const LINEAR_ATTENTION_FIELDS: ConfigFields = {
  written: [
    "mtp_num_hidden_layers",
    "linear_conv_kernel_dim",
    "linear_key_head_dim",
    "linear_num_key_heads",
    "linear_num_value_heads",
    "layer_types",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
  ],
  checked: ["linear_value_head_dim"],
  irrelevant: {
    mtp_use_dedicated_embeddings:
      "the multi-token-prediction layers, which llama.cpp's main pass never runs",
  },
  assumed: [activation("hidden_act", SILU), NO_ATTENTION_BIAS],
};

/** Qwen3-Next: every layer MoE with normalised top-k weights (llama.cpp's `norm_w` true). */
const QWEN3NEXT_FIELDS: ConfigFields = {
  ...LINEAR_ATTENTION_FIELDS,
  assumed: [
    ...LINEAR_ATTENTION_FIELDS.assumed!,
    ...EVERY_LAYER_MOE,
    { field: "norm_topk_prob", hfDefault: true, llamaCpp: true },
  ],
};

/** The gated norms of the linear attention stay as they are; every other norm gets 1 added. */
export function qwenNextShift(ggufName: string): number {
  return ggufName.endsWith("norm.weight") && !ggufName.includes(".ssm_norm.") ? 1 : 0;
}

/** `model.layers.N.linear_attn.<piece>` of a tensor name, or `undefined`. */
export const LINEAR = /^model\.layers\.(\d+)\.linear_attn\.(.+)$/;

/** A made tensor of one source, `shape` of the source's type. */
export function madeFrom(
  info: TensorInfo,
  name: string,
  shape: readonly number[],
  open: (source: () => ReadableStream<Uint8Array>) => ReadableStream<Uint8Array>,
): MadeTensor {
  return {
    info: { name, dtype: info.dtype, shape, byteLength: tensorByteLength(info.dtype, shape) },
    needs: [info.name],
    open: ([source]) => open(() => source!.open()),
  };
}

/**
 * `A_log` as `ssm_a = −exp(A_log)`, computed in float32 and written as F32
 * (the converter's result for an F32 or a BF16 checkpoint), its entries in
 * `order` when given (Qwen3.5's value heads).
 */
export function ssmA(info: TensorInfo, blk: string, order?: readonly number[]): MadeTensor {
  if (info.dtype !== "F32" && info.dtype !== "BF16") {
    throw new RangeError(
      `Cannot convert "${info.name}" ${info.dtype} to GGUF: ssm_a = −exp(A_log) is made ` +
        `from F32 or BF16 values only`,
    );
  }
  const dtype = info.dtype;
  const width = tensorByteLength(dtype, [1]);
  const shape = info.shape;
  return {
    info: { name: `${blk}.ssm_a`, dtype: "F32", shape, byteLength: tensorByteLength("F32", shape) },
    needs: [info.name],
    open: ([source]) => {
      const open = () => source!.open();
      const values = order === undefined
        ? open()
        : rangesInOrder(open, order.map((i) => [i * width, (i + 1) * width]));
      return mapFloats(values, dtype, (v) => -Math.exp(v));
    },
  };
}

/**
 * The depthwise `conv1d` kernel `[channels, 1, kernel]` as `[channels,
 * kernel]` (the converter's `squeeze`): the same bytes, or with the channels
 * after the first `first` regrouped in blocks of `block` (Qwen3.5's value
 * heads, after the q and k channels).
 */
export function convKernel(
  info: TensorInfo,
  blk: string,
  order?: { readonly first: number; readonly blocks: readonly number[]; readonly block: number },
): MadeTensor {
  const shape = info.shape.filter((n) => n !== 1);
  if (shape.length !== 2) {
    throw new RangeError(
      `Cannot convert "${info.name}" [${info.shape}] to GGUF: expected a [channels, 1, kernel] ` +
        `convolution`,
    );
  }
  if (order !== undefined && shape[0] !== order.first + order.blocks.length * order.block) {
    throw new RangeError(
      `Cannot convert "${info.name}" [${info.shape}] to GGUF: expected ` +
        `${order.first + order.blocks.length * order.block} channels`,
    );
  }
  const rowBytes = tensorByteLength(info.dtype, [shape[1]!]);
  return madeFrom(
    info,
    `${blk}.ssm_conv1d.weight`,
    shape,
    (open) =>
      order === undefined ? open() : rangesInOrder(open, [
        ...order.first > 0 ? [[0, order.first * rowBytes] as const] : [],
        ...order.blocks.map((b) =>
          [
            (order.first + b * order.block) * rowBytes,
            (order.first + (b + 1) * order.block) * rowBytes,
          ] as const
        ),
      ]),
  );
}

/** Qwen3-Next's fused `in_proj_qkvz` split into `attn_qkv` and `attn_gate`. */
function splitQkvz(info: TensorInfo, blk: string, a: LinearAttention): MadeTensor[] {
  const perKey = a.valueHeads / a.keyHeads * a.valueDim;
  const group = 2 * a.keyDim + 2 * perKey;
  const [rows, cols] = [info.shape[0] ?? 0, info.shape[1] ?? 0];
  if (info.shape.length !== 2 || rows !== a.keyHeads * group || cols !== a.hidden) {
    throw new RangeError(
      `Cannot convert "${info.name}" [${info.shape}] to GGUF: expected [${a.keyHeads * group}, ` +
        `${a.hidden}] (each key head's q, k, v and z rows)`,
    );
  }
  const rowBytes = tensorByteLength(info.dtype, [cols]);
  // Key head g's rows [from, from + count) of its group, as byte ranges.
  const part = (from: number, count: number) =>
    Array.from({ length: a.keyHeads }, (_, g) => {
      const start = (g * group + from) * rowBytes;
      return [start, start + count * rowBytes] as const;
    });
  const q = part(0, a.keyDim);
  const k = part(a.keyDim, a.keyDim);
  const v = part(2 * a.keyDim, perKey);
  const z = part(2 * a.keyDim + perKey, perKey);
  const qkvRows = a.keyHeads * (2 * a.keyDim + perKey);
  return [
    madeFrom(
      info,
      `${blk}.attn_qkv.weight`,
      [qkvRows, cols],
      (open) => rangesInOrder(open, [...q, ...k, ...v]),
    ),
    madeFrom(
      info,
      `${blk}.attn_gate.weight`,
      [a.keyHeads * perKey, cols],
      (open) => rangesInOrder(open, z),
    ),
  ];
}

/** `Qwen3NextModel.modify_tensors`: the tensors that are not renamed. */
function qwen3NextMade(tensors: readonly TensorInfo[], w: KvWriter): MadeTensor[] {
  const made: MadeTensor[] = [];
  for (const info of tensors) {
    const m = LINEAR.exec(info.name);
    if (m === null) continue;
    const blk = `blk.${m[1]}`;
    if (m[2] === "A_log") made.push(ssmA(info, blk));
    else if (m[2] === "conv1d.weight") made.push(convKernel(info, blk));
    else if (m[2] === "in_proj_qkvz.weight") {
      made.push(...splitQkvz(info, blk, linearAttention(w.hparams)));
    }
  }
  return made;
}

/** `dt_bias` read as `dt_proj.bias`, as the converter renames it before mapping. */
export function dtBiasName(name: string): string {
  return name.endsWith(".linear_attn.dt_bias")
    ? `${name.slice(0, -".dt_bias".length)}.dt_proj.bias`
    : name;
}

/**
 * The multi-token-prediction layers the converter appends after the trunk:
 * `mtp_num_hidden_layers` (Qwen3.5's config.json; 0 without it).
 */
export function mtpLayers(hparams: Readonly<Record<string, unknown>>): number {
  const n = hparams["mtp_num_hidden_layers"];
  return typeof n === "number" && Number.isSafeInteger(n) && n > 0 ? n : 0;
}

/**
 * `config.json` with `mtp_num_hidden_layers` counted from the tensors where it
 * has none (or 0), as the converter's `_QwenMtpMixin` counts them: the highest
 * `mtp.layers.N` plus one (Qwen3-Next publishes no count). Without such a
 * tensor the config stays as it is (the converter then stops on an assertion
 * unless `--no-mtp`; aprkit leaves `mtp.*` out, as `--no-mtp` does). A count
 * without any `mtp.*` tensor (a fine-tune saved by transformers, which models
 * no MTP layer, keeps the published config's 1) becomes 0: the model as the
 * converter's `--no-mtp` writes it, where its count would make a file
 * llama.cpp refuses ("missing tensor 'blk.N.attn_norm.weight'").
 */
export function countedMtpConfig(
  config: Readonly<Record<string, unknown>>,
  names: readonly string[],
): Readonly<Record<string, unknown>> {
  const text = record(config["text_config"]);
  let count = 0;
  for (const name of names) {
    const m = /^(?:model\.)?mtp\.layers\.(\d+)\./.exec(name);
    if (m !== null) count = Math.max(count, Number(m[1]) + 1);
  }
  const counted = mtpLayers({ ...config, ...text });
  if (counted > 0 && (count > 0 || names.some((n) => dropsMtp(n)))) return config;
  if (counted === 0 && count === 0) return config;
  // Where the converter reads it: a multimodal config's text_config.
  return text === undefined
    ? { ...config, mtp_num_hidden_layers: count }
    : { ...config, text_config: { ...text, mtp_num_hidden_layers: count } };
}

/**
 * A multi-token-prediction tensor as the block after the trunk, as the
 * converter's `_QwenMtpMixin` reads it (`mtp.layers.i.*` →
 * `model.layers.{N + i}.*`, `mtp.fc` → `model.layers.N.eh_proj`…), where
 * config.json counts MTP layers; every other name as it is.
 */
export function mtpSourceName(
  name: string,
  hparams: Readonly<Record<string, unknown>>,
): string | readonly string[] {
  return mtpSourceNames(name, hparams, mtpLayers(hparams), "first");
}

/**
 * The multi-token-prediction tensors (`mtp.*`) config.json does not count:
 * left out, as `--no-mtp` does (the converter would count them from the
 * tensors; llama.cpp's main pass never runs them).
 */
export function dropsMtp(name: string): boolean {
  return name.startsWith("mtp.") || name.startsWith("model.mtp.");
}

/** Block tensors both families rename: attention, norms, the linear attention's plain ones. */
export const QWEN_NEXT_BLOCK: readonly (readonly [string, string])[] = [
  ...LLAMA_BLOCK.filter(([g]) => g !== "ffn_norm"),
  // The multi-token-prediction layer's own (mtpSourceName).
  ...NEXTN_BLOCK,
  ["post_attention_norm", "post_attention_layernorm"],
  ["ssm_norm", "linear_attn.norm"],
  ["ssm_out", "linear_attn.out_proj"],
  ["ssm_dt", "linear_attn.dt_proj"],
];

/** Qwen2-MoE's router and gated shared expert. */
export const QWEN_SHARED_EXPERT_BLOCK: readonly (readonly [string, string])[] = [
  ["ffn_gate_inp", "mlp.gate"],
  ["ffn_gate_shexp", "mlp.shared_expert.gate_proj"],
  ["ffn_up_shexp", "mlp.shared_expert.up_proj"],
  ["ffn_down_shexp", "mlp.shared_expert.down_proj"],
  ["ffn_gate_inp_shexp", "mlp.shared_expert_gate"],
];

/** Why a GGUF of these families is not read back into Hugging Face's layout. */
export const LINEAR_ATTENTION_READ_BACK =
  "aprkit does not read a Qwen3-Next or Qwen3.5 GGUF back into Hugging Face's layout (ssm_a " +
  "is −exp(A_log) and the linear attention's projections are regrouped); --keep-names keeps " +
  "its GGUF tensors";

/** Qwen3-Next-80B-A3B. */
export const QWEN3NEXT: Family = {
  name: "qwen3next",
  // Gated DeltaNet layers between the attending ones.
  hybrid: true,
  source: "llama.cpp conversion/qwen.py Qwen3NextModel; transformers Qwen3NextForCausalLM",
  configFields: QWEN3NEXT_FIELDS,
  hfArchitectures: ["Qwen3NextForCausalLM"],
  hfModelTypes: ["qwen3_next"],
  ggufArchitecture: "qwen3next",
  ggufRopeType: "neox",
  blockNames: [
    ...QWEN_NEXT_BLOCK,
    ["ssm_ba", "linear_attn.in_proj_ba"],
    ...QWEN_SHARED_EXPERT_BLOCK,
  ],
  experts: QWEN_MOE_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeQwen3NextKv,
    unsupported: linearAttentionRefusal,
    made: qwen3NextMade,
    shift: qwenNextShift,
    hfName: dtBiasName,
    sourceName: mtpSourceName,
    drops: dropsMtp,
    countedConfig: countedMtpConfig,
    extraBlocks: mtpLayers,
    mtpBlocksRequired: true,
  },
  ggufReadBackRefusal: LINEAR_ATTENTION_READ_BACK,
};
