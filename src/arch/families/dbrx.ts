// This module is browser compatible.

/**
 * DBRX (`DbrxForCausalLM`: Databricks' DBRX Base/Instruct), after llama.cpp's
 * `DbrxModel` (conversion/dbrx.py), GGUF architecture `dbrx`.
 *
 * `transformer.blocks.N` of a bias-free LayerNorm (`norm_attn_norm.norm_1`),
 * a fused `Wqkv` whose outputs llama.cpp clamps to ±`clip_qkv`
 * (`attention.clamp_kqv`), a second LayerNorm (`norm_2` →
 * `attn_output_norm`), and a MoE feed-forward: a softmax router
 * (`ffn.router.layer`), top-k weights normalised to sum 1, SwiGLU experts.
 * The config nests its attention and feed-forward fields in `attn_config` and
 * `ffn_config`, and the published config.json keeps the RoPE base in
 * `attn_config.rope_theta`, where the converter reads it.
 *
 * The experts are stored flat, one tensor per kind and layer without a
 * `.weight` suffix: `ffn.experts.mlp.w1` (gate) and `v1` (up) as
 * `[experts × ff, hidden]`, which are GGUF's `[experts, ff, hidden]` stacks
 * byte for byte, and `w2` (down) as each expert's `[ff, hidden]` — the
 * transpose of the down projection — which the converter transposes expert
 * by expert into `ffn_down_exps` `[experts, hidden, ff]`. Its converter
 * class converts every matrix to its `--outtype`, the router too.
 *
 * realizar has no DBRX model: APR output keeps the checkpoint's tensors
 * under their Hugging Face names.
 *
 * @module
 */

import { DTYPES, tensorByteLength } from "../../dtype.ts";
import type { TensorInfo } from "../../tensor.ts";
import type { Family, ImpliedKey, JoinedTensor, MadeTensor } from "../family.ts";
import { record } from "../kv.ts";
import type { KvWriter } from "../kv.ts";
import { columnsAsRows } from "../transforms.ts";
import { impliedKeys, impliedProduct } from "../implied_keys.ts";

/** DBRX's LayerNorm epsilon: torch's default, which the converter writes whatever the config. */
const LAYER_NORM_EPS = 1e-5;

/** A field of `attn_config` or `ffn_config` (recorded as the source of the key it makes). */
function sub(w: KvWriter, config: "attn_config" | "ffn_config", field: string): unknown {
  return w.findIn(config, field);
}

/** A number of `attn_config` or `ffn_config` the converter reads (it raises without). */
function needSub(w: KvWriter, config: "attn_config" | "ffn_config", field: string): number {
  const value = sub(w, config, field);
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new RangeError(`config.json has no number for ${config}.${field}`);
  }
  return value;
}

/** The RoPE base: `attn_config.rope_theta` as published, else transformers 5's `rope_parameters`. */
function ropeBase(w: KvWriter): unknown {
  return sub(w, "attn_config", "rope_theta") ?? w.fullRope["rope_theta"];
}

/** `DbrxModel.set_gguf_parameters`. */
function writeDbrxKv(w: KvWriter): void {
  w.u32("block_count", w.need("n_layers"));
  w.u32("context_length", w.need("max_seq_len"));
  w.u32("embedding_length", w.need("d_model"));
  w.u32("feed_forward_length", needSub(w, "ffn_config", "ffn_hidden_size"));
  w.u32("attention.head_count", w.need("n_heads"));
  w.u32("attention.head_count_kv", needSub(w, "attn_config", "kv_n_heads"));
  w.f32("rope.freq_base", ropeBase(w));
  w.f32("attention.clamp_kqv", needSub(w, "attn_config", "clip_qkv"));
  w.u32("expert_count", needSub(w, "ffn_config", "moe_num_experts"));
  w.u32("expert_used_count", needSub(w, "ffn_config", "moe_top_k"));
  w.f32("attention.layer_norm_epsilon", LAYER_NORM_EPS);
  w.fileType();
}

/**
 * The top-level copies transformers keeps of the nested sizes
 * (`num_key_value_heads` of `attn_config.kv_n_heads`, `ffn_config.hidden_size`
 * of `d_model`), which it overwrites on loading and the converter does not
 * read: one the tensors contradict is a broken checkpoint.
 */
function dbrxImplied(h: Readonly<Record<string, unknown>>): readonly ImpliedKey[] {
  const ffn = record(h["ffn_config"]) ?? {};
  const width = impliedProduct(ffn, "embedding_length", "hidden_size");
  return [
    ...impliedKeys(h, [["attention.head_count_kv", "num_key_value_heads"]]),
    ...width === undefined ? [] : [{ ...width, from: `ffn_config.${width.from}` }],
  ];
}

/** What llama.cpp's dbrx graph computes otherwise than transformers, or `undefined`. */
function dbrxUnsupported(w: KvWriter): string | undefined {
  // llama.cpp normalises the top-k weights to sum 1: transformers' p-norm with p = 1.
  const norm = sub(w, "ffn_config", "moe_normalize_expert_weights") ?? null;
  if (norm !== 1) {
    return `its config.json has ffn_config.moe_normalize_expert_weights ${JSON.stringify(norm)}; ` +
      `llama.cpp's dbrx normalises the experts' weights to sum 1 (1, as published)`;
  }
  const act = record(sub(w, "ffn_config", "ffn_act_fn"))?.["name"] ?? "silu";
  if (act !== "silu" && act !== "swish") {
    return `its config.json has ffn_config.ffn_act_fn ${JSON.stringify(act)}; llama.cpp's dbrx ` +
      `computes SiLU`;
  }
  const clip = sub(w, "attn_config", "clip_qkv") ?? null;
  if (typeof clip !== "number") {
    return `its config.json has attn_config.clip_qkv ${JSON.stringify(clip)}; llama.cpp's dbrx ` +
      `needs attention.clamp_kqv (the converter fails without it)`;
  }
  const type = w.fullRope["rope_type"];
  if (type !== undefined && type !== "default") {
    return `its config.json has rope_type ${JSON.stringify(type)}; the converter writes only ` +
      `rope.freq_base for dbrx and llama.cpp rotates without scaling`;
  }
  const published = sub(w, "attn_config", "rope_theta");
  const theta = w.fullRope["rope_theta"];
  if (published !== undefined && theta !== undefined && published !== theta) {
    return `its config.json has attn_config.rope_theta ${JSON.stringify(published)} and ` +
      `rope_parameters.rope_theta ${JSON.stringify(theta)}; transformers rotates with the ` +
      `second, the converter writes the first`;
  }
  return undefined;
}

const EXPERTS = /^transformer\.blocks\.(\d+)\.ffn\.experts\.mlp\.(w1|v1|w2)$/;
const STACK = { w1: "ffn_gate_exps", v1: "ffn_up_exps", w2: "ffn_down_exps" } as const;

/** The flat experts as GGUF's stacks, `w2` transposed expert by expert. */
function dbrxExperts(tensors: readonly TensorInfo[], w: KvWriter): MadeTensor[] {
  const experts = needSub(w, "ffn_config", "moe_num_experts");
  const ff = needSub(w, "ffn_config", "ffn_hidden_size");
  const hidden = w.need("d_model");
  return tensors.flatMap((info): MadeTensor[] => {
    const m = EXPERTS.exec(info.name);
    if (m === null) return [];
    const kind = m[2] as keyof typeof STACK;
    if (
      info.shape.length !== 2 || info.shape[0] !== experts * ff || info.shape[1] !== hidden ||
      DTYPES[info.dtype].layout !== "elements"
    ) {
      throw new RangeError(
        `Cannot convert "${info.name}" ${info.dtype} [${info.shape}] to GGUF: expected a float ` +
          `[moe_num_experts × ffn_hidden_size, d_model] = [${experts * ff}, ${hidden}] matrix`,
      );
    }
    const shape = kind === "w2" ? [experts, hidden, ff] : [experts, ff, hidden];
    const made: TensorInfo = {
      name: `blk.${m[1]}.${STACK[kind]}.weight`,
      dtype: info.dtype,
      shape,
      byteLength: tensorByteLength(info.dtype, shape),
    };
    const width = tensorByteLength(info.dtype, [1]);
    return [{
      info: made,
      needs: [info.name],
      open: ([source]) =>
        kind === "w2"
          ? columnsAsRows(source!.open(), { matrices: experts, rows: ff, cols: hidden, width })
          : source!.open(),
    }];
  });
}

const STACKS = /^blk\.(\d+)\.(ffn_gate_exps|ffn_up_exps|ffn_down_exps)\.weight$/;
const FLAT = { ffn_gate_exps: "w1", ffn_up_exps: "v1", ffn_down_exps: "w2" } as const;

/**
 * A GGUF read back: each stack as the flat `[experts × ffn_hidden_size,
 * d_model]` matrix again, `w2` transposed back expert by expert (the inverse
 * of {@linkcode dbrxExperts}).
 */
function dbrxJoinedBack(tensors: readonly TensorInfo[]): JoinedTensor[] {
  return tensors.flatMap((info): JoinedTensor[] => {
    const m = STACKS.exec(info.name);
    if (m === null || info.shape.length !== 3) return [];
    const kind = m[2] as keyof typeof FLAT;
    const [experts, rows, cols] = info.shape as [number, number, number];
    const down = kind === "ffn_down_exps";
    return [{
      name: `transformer.blocks.${m[1]}.ffn.experts.mlp.${FLAT[kind]}`,
      shape: down ? [experts * cols, rows] : [experts * rows, cols],
      parts: [{ name: info.name, transposed: down }],
      blocks: experts,
    }];
  });
}

/** DBRX Base, DBRX Instruct. */
export const DBRX: Family = {
  name: "dbrx",
  source: "llama.cpp conversion/dbrx.py DbrxModel; transformers DbrxForCausalLM",
  configFields: {
    written: ["d_model", "n_heads", "n_layers", "max_seq_len"],
    checked: ["attn_config", "ffn_config"],
    irrelevant: { emb_pdrop: "training only (dropout)" },
  },
  hfArchitectures: ["DbrxForCausalLM"],
  hfModelTypes: ["dbrx"],
  ggufArchitecture: "dbrx",
  ggufRopeType: "neox",
  hfBlockPrefix: "transformer.blocks",
  blockNames: [
    ["attn_norm", "norm_attn_norm.norm_1"],
    ["attn_qkv", "norm_attn_norm.attn.Wqkv"],
    ["attn_output", "norm_attn_norm.attn.out_proj"],
    ["attn_output_norm", "norm_attn_norm.norm_2"],
    ["ffn_gate_inp", "ffn.router.layer"],
  ],
  globalNames: [
    ["token_embd", "transformer.wte"],
    ["output_norm", "transformer.norm_f"],
    ["output", "lm_head"],
  ],
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeDbrxKv,
    impliedKeys: dbrxImplied,
    unsupported: dbrxUnsupported,
    made: dbrxExperts,
    quantizesEveryMatrix: true,
    joinedBack: dbrxJoinedBack,
    // The sizes dbrxExperts reads, for a GGUF read back and written again.
    hfConfigBack: (key) => ({
      d_model: key("embedding_length"),
      ffn_config: {
        moe_num_experts: key("expert_count"),
        ffn_hidden_size: key("feed_forward_length"),
      },
    }),
  },
  // The converter names databricks/dbrx-base's tokenizer dbrx by its hash.
  preTokenizer: "dbrx",
};
