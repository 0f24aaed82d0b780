// This module is browser compatible.

/**
 * Falcon-H1 (`FalconH1ForCausalLM`), after llama.cpp's `FalconH1Model`
 * (conversion/falcon_h1.py, a `Mamba2Model`): every layer runs attention
 * (RoPE, NEOX) and a Mamba-2 mixer side by side on one RMSNorm's output and
 * adds both, then a SwiGLU MLP. Its µP multipliers are folded into the
 * weights as the converter folds them (torch's `tensor * scalar`: a float32
 * product rounded to the tensor's type): `embedding_multiplier` into the
 * embedding, `lm_head_multiplier` into the LM head, `attention_in_multiplier`
 * into Q, K and V (`key_multiplier` into K first), `attention_out_multiplier`
 * into the attention output, `ssm_in_multiplier` and then the five
 * `ssm_multipliers` (z, x, B, C, dt rows) into the SSM's input projection,
 * `ssm_out_multiplier` into its output, `mlp_multipliers` into the gate and
 * down projections. The pre-MLP norm is written as `ffn_norm` without
 * `.weight`, as the converter's tensor map names it and llama.cpp loads it.
 *
 * @module
 */

import { activation, SILU } from "../config_fields.ts";
import { type Family, GLOBAL_NAMES, type ImpliedKey, type MadeTensor } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import type { TensorInfo } from "../../tensor.ts";
import { clampRefusal, DT_BIAS_NAMES, mamba2Tensors, READ_BACK_REFUSAL } from "./mamba.ts";
import { ssmTensors } from "../ssm.ts";
import { scaleFloats } from "../transforms.ts";
import { impliedKeys } from "../implied_keys.ts";

/** The SSM's inner width (`mamba_d_ssm`, else `mamba_expand × hidden_size`) and group count. */
function sizes(w: KvWriter): { inner: number; groups: number } {
  const inner = w.num("mamba_d_ssm") ?? w.need("mamba_expand") * w.need("hidden_size");
  return { inner, groups: w.need("mamba_n_groups") };
}

/**
 * `FalconH1Model.set_gguf_parameters`: `Mamba2Model`'s keys (the SSM's from
 * the `mamba_` fields), then the attention's and the model's, overriding
 * the placeholders in place.
 */
function writeKv(w: KvWriter): void {
  const { inner, groups } = sizes(w);
  w.u32("context_length", 2 ** 20);
  w.u32("embedding_length", w.need("hidden_size"));
  w.u32("feed_forward_length", 0);
  w.u32("attention.head_count", 0);
  w.u32("block_count", w.need("num_hidden_layers"));
  w.u32("ssm.conv_kernel", w.need("mamba_d_conv"));
  w.u32("ssm.inner_size", inner);
  w.u32("ssm.state_size", w.need("mamba_d_state"));
  w.u32("ssm.time_step_rank", Math.trunc(inner / w.need("mamba_d_head")));
  w.u32("ssm.group_count", groups);
  w.f32("attention.layer_norm_rms_epsilon", w.need("rms_norm_eps"));
  w.fileType();
  w.u32("vocab_size", w.need("vocab_size"));
  w.u32("context_length", w.num("max_position_embeddings") ?? 0);
  w.u32("feed_forward_length", w.need("intermediate_size"));
  w.u32("attention.head_count", w.need("num_attention_heads"));
  w.u32("attention.head_count_kv", w.need("num_key_value_heads"));
  w.u32("attention.key_length", w.need("head_dim"));
  w.u32("attention.value_length", w.need("head_dim"));
  w.f32("rope.freq_base", w.fullRope["rope_theta"] ?? w.need("rope_theta"));
}

/**
 * What transformers builds the SSM by and the converter does not read: the
 * heads (it divides the inner width by `mamba_d_head`) and their product
 * with the head size (`mamba_expand` is read without `mamba_d_ssm`, and
 * ignored by both with it).
 */
function falconH1Implied(h: Readonly<Record<string, unknown>>): readonly ImpliedKey[] {
  return impliedKeys(h, [
    ["ssm.time_step_rank", "mamba_n_heads"],
    ["ssm.inner_size", "mamba_d_head", "mamba_n_heads"],
  ]);
}

/** A config field's number (a multiplier list's entry), 1 where absent. */
function factor(w: KvWriter, field: string, at?: number): number {
  const value = w.hparams[field];
  const picked = at === undefined ? value : Array.isArray(value) ? value[at] : undefined;
  return typeof picked === "number" ? picked : 1;
}

/**
 * The factors of a tensor's values, by the converter's test of its name
 * (`FalconH1Model.modify_tensors`, first match), or `undefined` for one it
 * keeps as it is.
 */
function factorsOf(
  name: string,
  info: TensorInfo,
  w: KvWriter,
): ((index: number) => readonly number[]) | undefined {
  const one = (...f: number[]) => () => f;
  if (name.includes("down_proj")) return one(factor(w, "mlp_multipliers", 1));
  if (name.includes("gate_proj")) return one(factor(w, "mlp_multipliers", 0));
  const attentionIn = factor(w, "attention_in_multiplier");
  if (name.includes("k_proj")) return one(factor(w, "key_multiplier"), attentionIn);
  if (name.includes("q_proj") || name.includes("v_proj")) return one(attentionIn);
  if (name.includes("o_proj")) return one(factor(w, "attention_out_multiplier"));
  if (name.includes("out_proj")) return one(factor(w, "ssm_out_multiplier"));
  if (name.includes("in_proj")) {
    // Rows z (inner), x (inner), B, C (groups × state each), dt (heads).
    const { inner, groups } = sizes(w);
    const state = groups * w.need("mamba_d_state");
    const bounds = [inner, 2 * inner, 2 * inner + state, 2 * inner + 2 * state];
    const cols = info.shape[1] ?? 1;
    const ssmIn = factor(w, "ssm_in_multiplier");
    const segment = bounds.map((_, i) => factor(w, "ssm_multipliers", i));
    segment.push(factor(w, "ssm_multipliers", 4));
    return (index) => {
      const row = Math.floor(index / cols);
      const i = bounds.findIndex((b) => row < b);
      return [ssmIn, segment[i === -1 ? 4 : i]!];
    };
  }
  if (name.includes("lm_head")) return one(factor(w, "lm_head_multiplier"));
  if (name.includes("embed_tokens")) return one(factor(w, "embedding_multiplier"));
  return undefined;
}

const BLOCK = /^model\.layers\.(\d+)\.(.+)$/;

/**
 * The tensors the converter multiplies, under their GGUF names, and the
 * pre-MLP norm renamed; the SSM's reshaped ones (`ssm.ts`).
 */
function made(tensors: readonly TensorInfo[], w: KvWriter): MadeTensor[] {
  const out: MadeTensor[] = ssmTensors(tensors, w, "model.layers", SSM);
  for (const info of tensors) {
    const renamed = ggufName(info.name);
    if (renamed === undefined) continue;
    if (renamed.endsWith(".ffn_norm.weight")) {
      // The converter's tensor map names it without a suffix, and llama.cpp loads it so.
      const bare = renamed.slice(0, -".weight".length);
      out.push({ info: { ...info, name: bare }, needs: [info.name], open: ([s]) => s!.open() });
      continue;
    }
    const factors = factorsOf(info.name, info, w);
    if (factors === undefined) continue;
    if (info.dtype !== "F32" && info.dtype !== "BF16") {
      throw new RangeError(
        `Cannot convert "${info.name}" to GGUF: it is ${info.dtype}; aprkit folds Falcon-H1's ` +
          `multipliers into F32 and BF16 values only`,
      );
    }
    const dtype = info.dtype;
    out.push({
      info: { ...info, name: renamed },
      needs: [info.name],
      open: ([source]) => scaleFloats(source!.open(), dtype, factors),
    });
  }
  return out;
}

/** A block's tensors: GGUF base name → Hugging Face piece after `model.layers.N.`. */
const FALCON_H1_BLOCK: readonly (readonly [string, string])[] = [
  ["attn_norm", "input_layernorm"],
  ["attn_q", "self_attn.q_proj"],
  ["attn_k", "self_attn.k_proj"],
  ["attn_v", "self_attn.v_proj"],
  ["attn_output", "self_attn.o_proj"],
  ["ssm_in", "mamba.in_proj"],
  ["ssm_conv1d", "mamba.conv1d"],
  ["ssm_dt", "mamba.dt_proj"],
  ["ssm_norm", "mamba.norm"],
  ["ssm_out", "mamba.out_proj"],
  ["ffn_norm", "pre_ff_layernorm"],
  ["ffn_gate", "feed_forward.gate_proj"],
  ["ffn_up", "feed_forward.up_proj"],
  ["ffn_down", "feed_forward.down_proj"],
];
const BY_PIECE = new Map(FALCON_H1_BLOCK.map(([gguf, hf]) => [hf, gguf]));
const BY_GLOBAL = new Map(GLOBAL_NAMES.map(([gguf, hf]) => [hf, gguf]));

/** A tensor's GGUF name, or `undefined` for one the family table does not name. */
function ggufName(name: string): string | undefined {
  const suffix = /\.(weight|bias)$/.exec(name)?.[1];
  if (suffix === undefined) return undefined;
  const base = name.slice(0, -suffix.length - 1);
  if (BY_GLOBAL.has(base)) return `${BY_GLOBAL.get(base)}.${suffix}`;
  const m = BLOCK.exec(base);
  const gguf = m === null ? undefined : BY_PIECE.get(m[2]!);
  return gguf === undefined ? undefined : `blk.${m![1]}.${gguf}.${suffix}`;
}

const SSM = mamba2Tensors("mamba", sizes);

function unsupported(w: KvWriter): string | undefined {
  const clamped = clampRefusal(w);
  if (clamped !== undefined) return clamped;
  if (w.hparams["mamba_rms_norm"] === true && w.hparams["mamba_norm_before_gate"] !== false) {
    return "its config.json has mamba_rms_norm true with mamba_norm_before_gate " +
      `${JSON.stringify(w.hparams["mamba_norm_before_gate"] ?? true)} (transformers' default ` +
      "true when absent); llama.cpp's falcon-h1 gates the SSM's output before its norm, as " +
      "with mamba_norm_before_gate false (1.43 apart in log-probability, measured)";
  }
  const tied = w.hparams["tie_word_embeddings"] === true;
  const embedding = factor(w, "embedding_multiplier");
  const head = factor(w, "lm_head_multiplier");
  if (tied && embedding !== head) {
    return `its config.json ties the embeddings with embedding_multiplier ${embedding} and ` +
      `lm_head_multiplier ${head}; the converter folds the first into the one matrix llama.cpp ` +
      `also reads as the LM head, which then computes as with lm_head_multiplier ${embedding}`;
  }
  const rope = w.fullRope["rope_type"] ?? "default";
  if (rope !== "default") {
    return `its config.json has rope type ${JSON.stringify(rope)}; llama.cpp's converter ` +
      `writes only Falcon-H1's RoPE base, and llama.cpp computes as with "default"`;
  }
  return undefined;
}

/** Falcon-H1. */
export const FALCON_H1: Family = {
  name: "falcon_h1",
  source: "llama.cpp conversion/falcon_h1.py FalconH1Model; transformers FalconH1ForCausalLM",
  configFields: {
    written: [
      "mamba_d_ssm",
      "mamba_expand",
      "mamba_n_heads",
      "mamba_d_head",
      "mamba_n_groups",
      "mamba_d_state",
      "mamba_d_conv",
      // Its bias tensor, which llama.cpp loads when the file has it.
      "mamba_conv_bias",
      // The gated norm's weight, which llama.cpp applies when the file has it.
      "mamba_rms_norm",
      // Folded into the weights.
      "attention_in_multiplier",
      "attention_out_multiplier",
      "embedding_multiplier",
      "key_multiplier",
      "lm_head_multiplier",
      "mlp_multipliers",
      "ssm_in_multiplier",
      "ssm_multipliers",
      "ssm_out_multiplier",
    ],
    checked: ["time_step_limit", "mamba_norm_before_gate"],
    assumed: [
      activation("hidden_act", SILU),
      // llama.cpp loads no bias for the SSM's in/out projections.
      { field: "mamba_proj_bias", hfDefault: false, llamaCpp: false },
      { field: "projectors_bias", hfDefault: false, llamaCpp: false },
    ],
    irrelevant: {
      mamba_chunk_size: "the chunked scan computes the same values as one pass",
      num_logits_to_keep: "how many positions transformers computes logits for",
      layer_types: 'transformers\' property: every layer "hybrid" (attention and Mamba-2)',
      layers_block_type: 'transformers\' property: every layer "hybrid" (attention and Mamba-2)',
    },
  },
  hfArchitectures: ["FalconH1ForCausalLM"],
  hfModelTypes: ["falcon_h1"],
  ggufArchitecture: "falcon-h1",
  ggufRopeType: "neox",
  blockNames: FALCON_H1_BLOCK,
  globalNames: [["output_norm", "model.final_layernorm"]],
  hybrid: true,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  ggufReadBackRefusal: READ_BACK_REFUSAL.replace("a Mamba GGUF", "a Falcon-H1 GGUF"),
  gguf: { writeKv, unsupported, made, impliedKeys: falconH1Implied, ...DT_BIAS_NAMES },
  // The converter names tiiuae/Falcon-H1-1B-Base's tokenizer falcon-h1 by its hash.
  preTokenizer: "falcon-h1",
};
