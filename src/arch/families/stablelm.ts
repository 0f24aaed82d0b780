// This module is browser compatible.

/**
 * StableLM 2 / StableLM-3B-4E1T (`StableLmForCausalLM`), after llama.cpp's
 * `StableLMModel` (conversion/stablelm.py): llama's block with LayerNorms
 * (biases), optional q/k/v biases (`use_qkv_bias`), NEOX RoPE on
 * `partial_rotary_factor` of each head, attention and MLP in parallel when
 * `use_parallel_residual` says so; no RoPE base written. StableLM 2 12B's
 * per-head Q/K LayerNorms (`qk_layernorm`: `self_attn.q_layernorm.norms.H`,
 * one weight-only LayerNorm per head) are stacked per layer into
 * `attn_q_norm` / `attn_k_norm` `[head_dim, heads]` as the converter's
 * `_stack_qk_norm` does, and unstacked again for a GGUF read back.
 *
 * @module
 */

import { tensorByteLength } from "../../dtype.ts";
import type { TensorInfo } from "../../tensor.ts";
import { type Family, LLAMA_BLOCK, type MadeTensor, TensorConfigMismatch } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { activation, SILU } from "../config_fields.ts";
import { unwrittenRopeRefusal } from "../fixed_rope.ts";
import { concatPayloads } from "../transforms.ts";

/** `StableLMModel.set_gguf_parameters`. */
function writeStableLmKv(w: KvWriter): void {
  const hidden = w.need("hidden_size");
  const heads = w.need("num_attention_heads");
  const share = w.rope["partial_rotary_factor"];
  if (typeof share !== "number") {
    throw new RangeError("config.json has no partial_rotary_factor (StableLM needs it)");
  }
  w.u32("context_length", w.need("max_position_embeddings"));
  w.u32("embedding_length", hidden);
  w.u32("block_count", w.need("num_hidden_layers"));
  w.u32("feed_forward_length", w.need("intermediate_size"));
  w.u32("rope.dimension_count", Math.trunc(share * Math.trunc(hidden / heads)));
  w.u32("attention.head_count", heads);
  w.u32("attention.head_count_kv", w.need("num_key_value_heads"));
  w.set("use_parallel_residual", "BOOL", w.hparams["use_parallel_residual"] ?? true);
  w.f32("attention.layer_norm_epsilon", w.need("layer_norm_eps", "norm_eps"));
  w.fileType();
}

/** A RoPE base or scaling the converter writes no key for. */
function stableLmUnsupported(w: KvWriter): string | undefined {
  return unwrittenRopeRefusal(w);
}

/** The per-head norms: layer, `q` or `k`, head. */
const HEAD_NORM = /^model\.layers\.(\d+)\.self_attn\.([qk])_layernorm\.norms\.(\d+)\.weight$/;

/** The GGUF base name of each stack. */
const STACKED = { q: "attn_q_norm", k: "attn_k_norm" } as const;

/**
 * `StableLMModel._stack_qk_norm`: each layer's per-head norms, heads (or KV
 * heads) of them in head order, stacked into one `[heads, head_dim]` tensor
 * written where the layer's last one is.
 *
 * @throws {TensorConfigMismatch} When a layer has another count of them
 * than the config's heads, or they differ in shape or type.
 */
function stackHeadNorms(tensors: readonly TensorInfo[], w: KvWriter): MadeTensor[] {
  const groups = new Map<string, TensorInfo[]>();
  for (const info of tensors) {
    const m = HEAD_NORM.exec(info.name);
    if (m === null) continue;
    const key = `${m[1]}.${m[2]}`;
    groups.set(key, [...groups.get(key) ?? [], info]);
  }
  const made: MadeTensor[] = [];
  for (const [key, infos] of groups) {
    const [layer, qk] = key.split(".") as [string, "q" | "k"];
    const field = qk === "q" ? "num_attention_heads" : "num_key_value_heads";
    const heads = w.need(field);
    const prefix = `model.layers.${layer}.self_attn.${qk}_layernorm.norms`;
    const needs = Array.from({ length: heads }, (_, h) => `${prefix}.${h}.weight`);
    const byName = new Map(infos.map((t) => [t.name, t]));
    const one = infos[0]!;
    const odd = needs.find((n) => byName.get(n)?.dtype !== one.dtype) ??
      infos.find((t) => t.shape.length !== 1 || t.shape[0] !== one.shape[0])?.name;
    if (infos.length !== heads || odd !== undefined) {
      throw new TensorConfigMismatch(
        odd ?? one.name,
        `layer ${layer} has ${infos.length} ${qk}_layernorm norms, config.json's ${field} ` +
          `is ${heads}: stacking them needs one 1-D norm of one shape and type per head, ` +
          `numbered 0 to ${heads - 1}`,
      );
    }
    const shape = [heads, one.shape[0]!];
    made.push({
      info: {
        name: `blk.${layer}.${STACKED[qk]}.weight`,
        dtype: one.dtype,
        shape,
        byteLength: tensorByteLength(one.dtype, shape),
      },
      needs,
      open: (sources) => concatPayloads(sources.map((e) => () => e.open())),
    });
  }
  return made;
}

/** `attn_q_norm` / `attn_k_norm` under the llama block's names (`LLAMA_BLOCK`). */
const STACKED_NAME = /^model\.layers\.(\d+)\.self_attn\.([qk])_norm\.weight$/;

/**
 * The per-head norms a stacked `attn_q_norm` / `attn_k_norm` (named by
 * `LLAMA_BLOCK`) was made from, in order.
 */
function headNormsOf(name: string, shape: readonly number[]): readonly string[] | undefined {
  const m = STACKED_NAME.exec(name);
  if (m === null || shape.length !== 2) return undefined;
  const prefix = `model.layers.${m[1]}.self_attn.${m[2]}_layernorm.norms`;
  return Array.from({ length: shape[0]! }, (_, h) => `${prefix}.${h}.weight`);
}

/** StableLM. */
export const STABLELM: Family = {
  name: "stablelm",
  source: "llama.cpp conversion/stablelm.py StableLMModel; transformers StableLmForCausalLM",
  configFields: {
    written: ["use_qkv_bias", "use_parallel_residual", "qk_layernorm"],
    assumed: [activation("hidden_act", SILU)],
  },
  hfArchitectures: ["StableLmForCausalLM"],
  hfModelTypes: ["stablelm"],
  ggufArchitecture: "stablelm",
  ggufRopeType: "neox",
  blockNames: LLAMA_BLOCK,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: {
    writeKv: writeStableLmKv,
    unsupported: stableLmUnsupported,
    made: stackHeadNorms,
    unstacked: headNormsOf,
  },
};
