// This module is browser compatible.

/**
 * DeepSeek-V3.2 (`DeepseekV32ForCausalLM`: V3.2-Exp, V3.2), after llama.cpp's
 * `DeepseekV32Model` (conversion/deepseek.py), GGUF architecture
 * `deepseek32`.
 *
 * DeepSeek-V3's layer (MLA, `kv_b_proj` split, V3's sigmoid router: all
 * `deepseek2.ts`'s) plus DeepSeek Sparse Attention's "lightning indexer" on
 * every layer: `self_attn.indexer.{wq_b, wk, k_norm, weights_proj}` under
 * gguf-py's `indexer.*` names, and its sizes (`index_n_heads`,
 * `index_head_dim`, `index_topk`) as the `attention.indexer.*` keys. The
 * indexer rotates the first `qk_rope_head_dim` dims of its heads by halves,
 * as llama.cpp's graph does (NEOX), so nothing is permuted.
 *
 * Unlike V3's, the converter keeps the multi-token-prediction layers past
 * `num_hidden_layers` (`blk.N.nextn.*` and the layer's own attention and
 * experts) and counts them into `block_count`; llama.cpp loads a file
 * without them too (transformers builds none, so a model it saved has none).
 *
 * A GGUF reads back as DeepSeek-V2's does (`kv_b_proj` joined again, the
 * router bias and experts unstacked), the indexer's tensors under their
 * names again, and the MTP blocks as the checkpoint holds them: layers past
 * the trunk (`model.layers.61.*`), their own tensors under the names
 * {@linkcode NEXTN_BLOCK} gives. The indexer's `weights_proj`, which the
 * converter writes F32, reads back F32 as the GGUF holds it, as the norms
 * and routers do: exact for any checkpoint, but no longer BF16 where the
 * checkpoint had it so (the GGUF does not say).
 *
 * realizar has no DeepSeek model: APR output keeps the checkpoint's tensors
 * under their Hugging Face names.
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import {
  DEEPSEEK2,
  DEEPSEEK2_BLOCK,
  DEEPSEEK2_CONFIG_FIELDS,
  deepseek2ConfigBack,
  deepseek2JoinedBack,
  deepseek2Made,
  deepseek2Unsupported,
  twiceWrittenKvB,
  writeDeepseek2Kv,
} from "./deepseek2.ts";
import { NEXTN_BLOCK, nextnLayers } from "../nextn.ts";
import { GATE_SCORE_BIAS, scoreBiasHfName } from "../router_bias.ts";

/**
 * `DeepseekV2Model.set_gguf_parameters` with `block_count` counting the
 * multi-token-prediction layers, then the MTP layer count: the part
 * `DeepseekV32Model` and `GlmMoeDsaModel` share.
 */
export function writeMlaWithNextnKv(w: KvWriter): void {
  const h = w.hparams;
  w.writeOver(
    { ...h, num_hidden_layers: w.need("num_hidden_layers") + nextnLayers(h) },
    writeDeepseek2Kv,
  );
}

/** The DSA indexer's sizes, as `DeepseekV32Model`/`GlmMoeDsaModel` write them. */
export function writeIndexerKv(w: KvWriter): void {
  w.u32("attention.indexer.head_count", w.need("index_n_heads"));
  w.u32("attention.indexer.key_length", w.need("index_head_dim"));
  w.u32("attention.indexer.top_k", w.need("index_topk"));
}

/** `DeepseekV32Model.set_gguf_parameters`. */
function writeDeepseek32Kv(w: KvWriter): void {
  writeMlaWithNextnKv(w);
  w.u32("nextn_predict_layers", w.find("num_nextn_predict_layers"));
  writeIndexerKv(w);
}

/**
 * What of an indexer's config llama.cpp cannot run, or `undefined`: its
 * graph rotates the first `qk_rope_head_dim` dims of each indexer head
 * (asserting they fit), and its Hadamard rotation of the indexer's q and k
 * exists from 64 dims on.
 */
export function indexerUnsupported(w: KvWriter): string | undefined {
  const dim = w.need("index_head_dim");
  const rope = w.need("qk_rope_head_dim");
  if (dim < rope) {
    return `its config.json has index_head_dim ${dim} below qk_rope_head_dim ${rope}, which ` +
      `llama.cpp's indexer rotates in each of its heads (it aborts)`;
  }
  if (dim < 64 || (dim & (dim - 1)) !== 0) {
    return `its config.json has index_head_dim ${dim}: llama.cpp rotates the indexer's q and k ` +
      `by a Hadamard matrix it makes for powers of two from 64 on`;
  }
  return undefined;
}

/**
 * What of a YaRN config llama.cpp's `deepseek32` and `glm-dsa` scale
 * otherwise than transformers, or `undefined`. llama.cpp takes YaRN's
 * `mscale` as 1 on every architecture but `deepseek2` (src/llama-context.cpp
 * reads it from `mscale_all_dim` for `LLM_ARCH_DEEPSEEK2` alone), so its
 * rotated dims are scaled by mscale(1)/mscale(all) and every score by
 * mscale(1)² (the graphs' `kq_scale`), where transformers scales them by
 * `attention_factor` (else mscale(mscale)/mscale(all)) and mscale(all)²:
 * equal for a factor above 1 only with both 1, as DeepSeek-V3.2's
 * config.json has them. Measured on the deepseek32 fixture's weights with
 * both 0.707 (DeepSeek-V2's): the converter's file 1.92 off transformers'
 * log-probs; mscale 1 with mscale_all_dim 0.707: 0.67 (glm-dsa's with both
 * 0.707: 3.00).
 */
export function yarnUnsupported(w: KvWriter): string | undefined {
  const rope = w.rope;
  if ((rope["rope_type"] ?? rope["type"]) !== "yarn") return undefined;
  const factor = typeof rope["factor"] === "number" ? rope["factor"] : 1;
  if (factor <= 1) return undefined;
  const m = rope["mscale"] ?? null;
  const all = rope["mscale_all_dim"] ?? null;
  const attention = rope["attention_factor"] ?? null;
  if (m === 1 && all === 1 && (attention === null || attention === 1)) return undefined;
  return `its config.json has YaRN mscale ${JSON.stringify(m)} and mscale_all_dim ` +
    `${JSON.stringify(all)}${attention === null ? "" : ` with attention_factor ${attention}`}: ` +
    `llama.cpp's ${w.arch} scales attention as with both 1 (DeepSeek-V3.2's; it reads mscale ` +
    `for deepseek2 alone): log-probs 0.7–3 apart from transformers' on the fixtures' weights`;
}

/**
 * What of a config llama.cpp's `deepseek32` cannot take, or `undefined`.
 */
function unsupported(w: KvWriter): string | undefined {
  const mla = deepseek2Unsupported(w);
  if (mla !== undefined) return mla;
  if (w.hparams["q_lora_rank"] == null) {
    return "its config.json has no q_lora_rank: llama.cpp's deepseek32 requires a q LoRA " +
      "(the indexer reads its queries from it)";
  }
  // The converter writes expert_gating_func only from scoring_func (not a
  // DeepseekV32Config field), and llama.cpp's deepseek32 requires the key.
  if (w.hparams["scoring_func"] == null) {
    return "its config.json has no scoring_func: llama.cpp's deepseek32 requires " +
      "expert_gating_func, which llama.cpp's converter writes from it (published configs say " +
      '"sigmoid", as transformers scores)';
  }
  return yarnUnsupported(w) ?? indexerUnsupported(w);
}

/** The DSA indexer's tensors, as DeepSeek-V3.2 and GLM-5 name them. */
export const INDEXER_BLOCK: readonly (readonly [string, string])[] = [
  ["indexer.k_norm", "self_attn.indexer.k_norm"],
  ["indexer.proj", "self_attn.indexer.weights_proj"],
  ["indexer.attn_k", "self_attn.indexer.wk"],
  ["indexer.attn_q_b", "self_attn.indexer.wq_b"],
];

/** The config fields the DSA indexer adds, written as `attention.indexer.*`. */
export const INDEXER_FIELDS = ["index_n_heads", "index_head_dim", "index_topk"] as const;

/** DeepSeek-V3.2-Exp, V3.2: DeepSeek-V3's family with the indexer, MTP layers kept. */
export const DEEPSEEK32: Family = {
  ...DEEPSEEK2,
  name: "deepseek32",
  source: "llama.cpp conversion/deepseek.py DeepseekV32Model; transformers DeepseekV32ForCausalLM",
  configFields: {
    ...DEEPSEEK2_CONFIG_FIELDS,
    written: [
      ...DEEPSEEK2_CONFIG_FIELDS.written,
      ...INDEXER_FIELDS,
      "num_nextn_predict_layers",
    ],
    checked: [...DEEPSEEK2_CONFIG_FIELDS.checked, "q_lora_rank"],
    irrelevant: {
      ...DEEPSEEK2_CONFIG_FIELDS.irrelevant,
      mlp_layer_types: "first_k_dense_replace's dense-then-sparse pattern, which transformers " +
        "derives from it and the converter writes as leading_dense_block_count",
      layer_types: '"indexed_attention" on every layer, as llama.cpp\'s deepseek32 computes',
      head_dim: "qk_rope_head_dim, which transformers sets it to",
    },
  },
  hfArchitectures: ["DeepseekV32ForCausalLM"],
  hfModelTypes: ["deepseek_v32"],
  ggufArchitecture: "deepseek32",
  blockNames: [...DEEPSEEK2_BLOCK, GATE_SCORE_BIAS, ...INDEXER_BLOCK, ...NEXTN_BLOCK],
  gguf: {
    writeKv: writeDeepseek32Kv,
    llamaKeys: true,
    unsupported,
    made: deepseek2Made,
    extraBlocks: nextnLayers,
    joinedBack: deepseek2JoinedBack,
    hfNameBack: scoreBiasHfName,
    hfConfigBack: deepseek2ConfigBack,
  },
  // The MTP blocks read back as the layers the checkpoint holds them as.
  ggufReadBackRefusalOf: twiceWrittenKvB,
};
