// This module is browser compatible.

/**
 * Hy4 (`HYV4ForCausalLM`: tencent/Hy4-preview), after llama.cpp's
 * `HYV4Model` (conversion/hy_v4.py, a `DeepseekV2Model`), GGUF architecture
 * `hy_v4`.
 *
 * DeepSeek-V3.2's multi-head latent attention and DSA indexer (its
 * selection shared by the layers `indexer_types` marks `shared`), with a
 * sigmoid gate on the attention output (`self_attn.linear_gate`) and a
 * learned sink per head (`learnable_sink_param`); 4 hyper-connection
 * streams in place of the residual (`hc_attn_layer`/`hc_mlp_layer.hc_pre.*`
 * per layer, `hc_head.*` before the final norm); a dense first layer, then
 * experts stacked as transformers 5 stores them (`mlp.experts.gate_up_proj`,
 * `down_proj`) beside a shared MLP, a sigmoid router with DeepSeek-V3's
 * selection bias, the routed SwiGLU clamped at `swiglu_limit`. The tensor
 * names are the published checkpoint's, which the converter reads and
 * transformers 5.18 loads (its `save_pretrained` writes others: it reverses
 * its load-time renaming into `hc_pre.hc_attn_layer.*` and the MLPs'
 * `gate_proj` into `linear_gate`).
 *
 * The published rows of the RoPE dims (`q_b_proj`'s, `kv_a_proj_with_mqa`'s,
 * the indexer's `wq_b`/`wk`/`k_norm`) rotate as adjacent pairs: Tencent's
 * vLLM and SGLang code rotate them so (`is_neox_style=False`,
 * `rope_interleave`), and so does llama.cpp's `hy_v4` graph (NORM) on the
 * converter's unpermuted rows. transformers 5.18's `HYV4ForCausalLM` rotates
 * halves (`rotate_half`) and so computes the published weights otherwise
 * (4.19 log-probs apart on the fixture); it is not the reference here. The
 * GGUF is the converter's, byte for byte, and APR says `rope_type` 0.
 * docs/INTEROP.md has the evidence and the measurements.
 *
 * realizar has no Hy4 model: APR output keeps the checkpoint's tensors under
 * their Hugging Face names.
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { GATING_FUNC } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";
import {
  DEEPSEEK2_BLOCK,
  DEEPSEEK2_CONFIG_FIELDS,
  deepseek2ImpliedKeys,
  deepseek2Made,
  writeDeepseek2Kv,
} from "./deepseek2.ts";
import { INDEXER_BLOCK, INDEXER_FIELDS, writeIndexerKv } from "./deepseek32.ts";
import { QWEN_MOE_EXPERTS } from "./qwen2moe.ts";

/**
 * The leading dense layers `HYV4Model` derives from `mlp_layer_types` when
 * `first_k_dense_replace` is absent (it refuses dense layers after a sparse one).
 */
function leadingDense(h: Readonly<Record<string, unknown>>): unknown {
  const types = h["mlp_layer_types"];
  if (h["first_k_dense_replace"] != null || !Array.isArray(types)) {
    return h["first_k_dense_replace"];
  }
  const lead = types.findIndex((t) => t !== "dense");
  return lead === -1 ? types.length : lead;
}

/**
 * Which layers own an indexer (`indexer_types` "full"; "shared" ones reuse
 * the last full layer's selection), as `HYV4Model.indexer_is_full` reads it,
 * or `undefined` for a checkpoint without DSA.
 */
function indexerIsFull(w: KvWriter): boolean[] | undefined {
  const layers = w.need("num_hidden_layers");
  const types = w.hparams["indexer_types"];
  if (Array.isArray(types)) return types.slice(0, layers).map((t) => t === "full");
  const kinds = w.hparams["layer_types"];
  const sparse = ["sparse_attention", "deepseek_sparse_attention"];
  if (!Array.isArray(kinds) || !kinds.some((t) => sparse.includes(t))) return undefined;
  return kinds.slice(0, layers).map((t) => sparse.includes(t));
}

/** `HYV4Model.set_gguf_parameters`. */
function writeHyV4Kv(w: KvWriter): void {
  const h: Record<string, unknown> = {
    ...w.hparams,
    first_k_dense_replace: leadingDense(w.hparams),
  };
  // One expert group of one: the converter drops both keys (ungrouped routing).
  if (h["n_group"] === 1 && h["topk_group"] === 1) {
    delete h["n_group"];
    delete h["topk_group"];
  }
  w.writeOver(h, writeDeepseek2Kv);
  w.u32("expert_gating_func", GATING_FUNC["sigmoid"]);
  const limit = w.num("swiglu_limit") ?? 0;
  if (limit > 0) {
    w.setArray("swiglu_clamp_exp", "FLOAT32", Array(w.need("num_hidden_layers")).fill(limit));
  }
  w.u32("hyper_connection.count", w.need("hc_mult"));
  w.f32("hyper_connection.epsilon", w.need("hc_eps"));
  w.f32("hyper_connection.magnitude", w.need("hc_magnitude"));
  const full = indexerIsFull(w);
  if (full !== undefined) {
    writeIndexerKv(w);
    w.setArray("attention.indexer.types", "BOOL", full);
  }
}

/** The parameters the converter reads with a `.weight` suffix it adds (`HYV4Model.modify_tensors`). */
const UNSUFFIXED =
  /(\.self_attn\.learnable_sink_param|\.hc_head\.hc_head_(?:fn|base|scale)|\.hc_(?:attn|mlp)_layer\.hc_pre\.hc_(?:fn|base|scale))$/;

/** The multi-token-prediction layers, which the converter never reads. */
const drops = (name: string) => name.startsWith("model.mtp_layers.");

/** Hy4-preview. */
export const HY_V4: Family = {
  name: "hy-v4",
  source: "llama.cpp conversion/hy_v4.py HYV4Model; transformers HYV4ForCausalLM",
  configFields: {
    // What hy_v4.py writes.
    written: [
      ...DEEPSEEK2_CONFIG_FIELDS.written,
      ...INDEXER_FIELDS,
      "indexer_types",
      "mlp_layer_types",
      "hc_mult",
      "hc_eps",
      "hc_magnitude",
      "swiglu_limit",
    ],
    checked: [],
    assumed: [activation("hidden_act", SILU)],
    irrelevant: {
      ...DEEPSEEK2_CONFIG_FIELDS.irrelevant,
      layer_types: '"indexed_attention" on every layer, the only kind HYV4 has',
      head_dim: "qk_rope_head_dim, which transformers sets it to",
      learnable_sink_init: "the sinks' initial value (training only); the sinks are tensors",
    },
  },
  hfArchitectures: ["HYV4ForCausalLM"],
  hfModelTypes: ["hy_v4"],
  ggufArchitecture: "hy_v4",
  ggufRopeType: "norm",
  blockNames: [
    ...DEEPSEEK2_BLOCK,
    ...INDEXER_BLOCK,
    ["attn_gate", "self_attn.linear_gate"],
    ["attn_sinks", "self_attn.learnable_sink_param"],
    ["hc_attn_fn", "hc_attn_layer.hc_pre.hc_fn"],
    ["hc_attn_base", "hc_attn_layer.hc_pre.hc_base"],
    ["hc_attn_scale", "hc_attn_layer.hc_pre.hc_scale"],
    ["hc_ffn_fn", "hc_mlp_layer.hc_pre.hc_fn"],
    ["hc_ffn_base", "hc_mlp_layer.hc_pre.hc_base"],
    ["hc_ffn_scale", "hc_mlp_layer.hc_pre.hc_scale"],
  ],
  globalNames: [
    ["output_hc_fn", "model.hc_head.hc_head_fn"],
    ["output_hc_base", "model.hc_head.hc_head_base"],
    ["output_hc_scale", "model.hc_head.hc_head_scale"],
  ],
  permutesQk: false,
  // Published in adjacent-pair order (above), as DeepSeek's: APR rope_type 0.
  hfRopeInterleaved: true,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  experts: QWEN_MOE_EXPERTS,
  gguf: {
    writeKv: writeHyV4Kv,
    // As DeepSeek-V2's: transformers sets head_dim and qk_head_dim on loading.
    impliedKeys: deepseek2ImpliedKeys,
    llamaKeys: true,
    made: deepseek2Made,
    drops,
    hfName: (name) => UNSUFFIXED.test(name) ? `${name}.weight` : name,
  },
  ggufReadBackRefusal:
    "aprkit does not read a Hy4 GGUF back into Hugging Face's layout (its kv_b_proj is split and " +
    "transposed per head, experts stacked); --keep-names keeps its GGUF tensors",
  // The converter names tencent/Hy4-preview's tokenizer hy_v4 by its hash
  // (DeepSeek-V3's steps, which llama.cpp runs alike under that name).
  preTokenizer: "hy_v4",
};
