// This module is browser compatible.

/**
 * GLM-4.7-Flash (`Glm4MoeLiteForCausalLM`), after llama.cpp's
 * `Glm4MoeLiteModel` (conversion/glm.py, a `DeepseekV2Model`), GGUF
 * architecture `deepseek2`: DeepSeek-V3's multi-head latent attention,
 * experts and sigmoid router (`deepseek2.ts`: `kv_b_proj` split into
 * `attn_k_b`/`attn_v_b`, `e_score_correction_bias` → `exp_probs_b.bias`),
 * GLM's vocabulary (special tokens by name, `glm4` pre-tokenizer), and
 * GLM-4.5's multi-token-prediction layers kept as `blk.N.nextn.*`
 * (`glm4moe.ts`), counted into `block_count`.
 *
 * realizar has no GLM model: APR output keeps the checkpoint's tensors, its
 * shared experts under the name realizar's loader asks for.
 *
 * @module
 */

import { type Family, SHARED_EXPERT_APR_NAMES } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { expertScoringFunction } from "../text_model.ts";
import {
  DEEPSEEK2,
  deepseek2ImpliedKeys,
  deepseek2JoinedBack,
  deepseek2Made,
  deepseek2Unsupported,
  nextnReadBackRefusal,
  writeDeepseek2Kv,
} from "./deepseek2.ts";
import { GLM_SPECIAL_TOKENS, NEXTN_BLOCK, nextnLayers } from "./glm4moe.ts";

/**
 * The leading dense layers: `first_k_dense_replace` (published configs),
 * else those `mlp_layer_types` names `dense` before the first `sparse`
 * (transformers' own field; the converter would write 0 then, and
 * llama.cpp would look for experts in the dense layers).
 */
function leadingDense(h: Readonly<Record<string, unknown>>): number | undefined {
  const given = h["first_k_dense_replace"];
  if (typeof given === "number") return given;
  const kinds = h["mlp_layer_types"];
  if (!Array.isArray(kinds)) return undefined;
  const first = kinds.indexOf("sparse");
  return first === -1 ? kinds.length : first;
}

/**
 * Whether llama.cpp's deepseek2 scores experts with a sigmoid without an
 * `expert_gating_func` key: only for GLM-4.7-Flash's own shape (47 or 48
 * layers, vocabulary 154880), else with a softmax.
 */
function sigmoidByDefault(w: KvWriter): boolean {
  const layers = w.num("num_hidden_layers");
  return (layers === 47 || layers === 48) && w.num("vocab_size") === 154880;
}

/**
 * `config.json` as the deepseek2 writer reads it: the leading dense layers
 * filled in, and transformers' sigmoid named where llama.cpp would not
 * assume it.
 */
function asDeepseek(w: KvWriter, hparams: Record<string, unknown> = {}): KvWriter {
  const h = w.hparams;
  const extra: Record<string, unknown> = { ...hparams };
  const dense = leadingDense(h);
  if (dense !== undefined) extra["first_k_dense_replace"] = dense;
  if (expertScoringFunction(w) == null && !sigmoidByDefault(w)) extra["scoring_func"] = "sigmoid";
  return w.over({ ...h, ...extra });
}

/** `Glm4MoeLiteModel.set_gguf_parameters`. */
function writeGlm4MoeLiteKv(w: KvWriter): void {
  const nextn = nextnLayers(w.hparams);
  // block_count is the class's: the trunk and the MTP layers.
  const inner = asDeepseek(w, { num_hidden_layers: w.need("num_hidden_layers") + nextn });
  w.writeOver(inner.hparams, writeDeepseek2Kv);
  if (nextn > 0) w.u32("nextn_predict_layers", nextn);
}

/** What of a config llama.cpp's `deepseek2` would run otherwise than transformers, or `undefined`. */
function unsupported(w: KvWriter): string | undefined {
  const kinds = w.hparams["mlp_layer_types"];
  const dense = leadingDense(w.hparams) ?? 0;
  if (Array.isArray(kinds) && kinds.some((k, i) => k !== (i < dense ? "dense" : "sparse"))) {
    return `its config.json has mlp_layer_types ${JSON.stringify(kinds)}; llama.cpp's ` +
      `deepseek2 runs the first ${dense} layers dense, the rest sparse`;
  }
  const scored = expertScoringFunction(w) == null
    ? w.over({ ...w.hparams, scoring_func: "sigmoid" })
    : w;
  return deepseek2Unsupported(scored);
}

/** GLM-4.7-Flash. */
export const GLM4MOE_LITE: Family = {
  name: "glm4moe-lite",
  apr: { rename: SHARED_EXPERT_APR_NAMES },
  source: "llama.cpp conversion/glm.py Glm4MoeLiteModel; transformers Glm4MoeLiteForCausalLM",
  // DeepSeek's fields, and what GLM-4.7-Flash adds.
  configFields: {
    ...DEEPSEEK2.configFields,
    written: [...DEEPSEEK2.configFields.written ?? [], "num_nextn_predict_layers"],
    checked: [...DEEPSEEK2.configFields.checked ?? [], "mlp_layer_types"],
    // Not DeepSeek's "dropped" multi-token-prediction layers: these are written.
    irrelevant: { qk_head_dim: "qk_nope_head_dim + qk_rope_head_dim, which are written" },
  },
  hfArchitectures: ["Glm4MoeLiteForCausalLM"],
  hfModelTypes: ["glm4_moe_lite"],
  ggufArchitecture: "deepseek2",
  ggufRopeType: "norm",
  blockNames: [...DEEPSEEK2.blockNames, ...NEXTN_BLOCK],
  experts: DEEPSEEK2.experts!,
  permutesQk: false,
  hfRopeInterleaved: true,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeGlm4MoeLiteKv,
    impliedKeys: deepseek2ImpliedKeys,
    llamaKeys: true,
    unsupported,
    made: deepseek2Made,
    extraBlocks: nextnLayers,
    joinedBack: deepseek2JoinedBack,
    hfNameBack: DEEPSEEK2.gguf!.hfNameBack!,
    hfConfigBack: DEEPSEEK2.gguf!.hfConfigBack!,
  },
  preTokenizer: "glm4",
  specialTokensByName: GLM_SPECIAL_TOKENS,
  ggufReadBackRefusalOf: nextnReadBackRefusal("a GLM-4.7-Flash"),
};
