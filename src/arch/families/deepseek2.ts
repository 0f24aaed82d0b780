// This module is browser compatible.

/**
 * DeepSeek-V2 and V3 (`DeepseekV2ForCausalLM`, `DeepseekV3ForCausalLM`:
 * DeepSeek-V2/V2.5/V2-Lite, V3, R1 and the models built on them), after
 * llama.cpp's `DeepseekV2Model` (conversion/deepseek.py), GGUF
 * architecture `deepseek2`.
 *
 * Multi-head latent attention (MLA): queries through a low-rank `q_a_proj`
 * → `q_a_layernorm` → `q_b_proj` (or a plain `q_proj` without a q LoRA),
 * keys and values through one `kv_a_proj_with_mqa` (the compressed latent
 * plus the shared RoPE key) → `kv_a_layernorm` → `kv_b_proj`. llama.cpp runs
 * MLA with the absorption trick, so the converter splits `kv_b_proj`
 * (`[heads × (nope + v), kv_lora]`) per head into `attn_k_b` (each head's
 * `nope` rows, transposed: `[heads, kv_lora, nope]`) and `attn_v_b` (its `v`
 * rows: `[heads, v, kv_lora]`), and writes the attention as MQA over the
 * latent (`head_count_kv` 1, `key_length` kv_lora + rope, `value_length`
 * kv_lora; the per-head sizes as `*_length_mla`).
 *
 * Feed-forward: `first_k_dense_replace` dense layers, then MoE layers with
 * routed experts (stacked into `ffn_*_exps`), shared experts (`*_shexp`) and
 * the router `mlp.gate`; V3's router adds `e_score_correction_bias`
 * (`exp_probs_b.bias`), sigmoid scores and expert groups (`n_group`,
 * `topk_group`), which the common keys carry (`text_model.ts`).
 *
 * RoPE: transformers rotates adjacent pairs of the `qk_rope_head_dim` dims
 * (complex rotation in V2, `rope_interleave` in V3), as llama.cpp's NORM does,
 * so nothing is permuted. Multi-token-prediction layers (V3's layer 61, past
 * `num_hidden_layers`) are dropped, as the converter drops them.
 *
 * A GGUF read back joins `attn_k_b` and `attn_v_b` into `kv_b_proj` again
 * (`joinedBack`), exactly: the split only moves values.
 *
 * realizar has no DeepSeek model: APR output keeps the checkpoint's tensors
 * under their Hugging Face names.
 *
 * @module
 */

import { DTYPES, tensorByteLength } from "../../dtype.ts";
import type { TensorInfo } from "../../tensor.ts";
import {
  type ExpertLayout,
  type Family,
  type ImpliedKey,
  type JoinedTensor,
  LLAMA_BLOCK,
  type MadeTensor,
  SHARED_EXPERT_APR_NAMES,
} from "../family.ts";
import { KIMI_TIKTOKEN } from "../kimi_tiktoken.ts";
import type { KvWriter } from "../kv.ts";
import { expertScoringFunction, writeTextModelKv } from "../text_model.ts";
import { columnsAsRows, keepRanges } from "../transforms.ts";
import { activation, SILU } from "../config_fields.ts";
import { GATE_SCORE_BIAS, scoreBiasHfName } from "../router_bias.ts";
import { impliedKeys } from "../implied_keys.ts";

/** `DeepseekV2Model.set_gguf_parameters` (its subclasses' too). */
export function writeDeepseek2Kv(w: KvWriter): void {
  const h = w.hparams;
  // The converter sets these on its hparams before the common keys: MLA as
  // MQA (one KV head), and DeepSeek's default epsilon.
  w.writeOver(
    { ...h, num_key_value_heads: 1, rms_norm_eps: h["rms_norm_eps"] ?? 1e-6 },
    writeTextModelKv,
  );
  const hasMoe = h["n_routed_experts"] != null;
  const dense = w.find("first_k_dense_replace") ??
    (hasMoe ? 0 : w.need("num_hidden_layers"));
  w.u32("leading_dense_block_count", dense);
  const kvLora = Object.hasOwn(h, "kv_lora_rank") ? w.need("kv_lora_rank") : 512;
  w.u32("vocab_size", w.need("vocab_size"));
  w.u32("attention.q_lora_rank", w.find("q_lora_rank"));
  const rope = w.need("qk_rope_head_dim");
  w.u32("attention.kv_lora_rank", kvLora);
  w.cite("kv_lora_rank", "qk_rope_head_dim");
  w.u32("attention.key_length", kvLora + rope);
  w.u32("attention.value_length", kvLora);
  w.cite("qk_rope_head_dim");
  w.u32("attention.key_length_mla", w.need("qk_nope_head_dim") + rope);
  w.u32("attention.value_length_mla", w.need("v_head_dim"));
  w.u32("expert_feed_forward_length", w.need("moe_intermediate_size", "intermediate_size"));
  w.u32("expert_count", w.find("n_routed_experts"));
  w.u32(
    "expert_shared_count",
    Object.hasOwn(h, "n_shared_experts") ? w.find("n_shared_experts") : 0,
  );
  w.f32("expert_weights_scale", w.find("routed_scaling_factor"));
  // Left out, transformers' default (V3: true, V2: false) rather than the
  // converter's none, which llama.cpp reads as false.
  const norm = h["norm_topk_prob"] ?? isV3(h);
  if (norm !== false) w.set("expert_weights_norm", "BOOL", true);
  w.u32("rope.dimension_count", rope);
  const mscaleAll = w.rope["mscale_all_dim"];
  // llama.cpp divides it by 0.1 again on load ([TAG_DEEPSEEK2_YARN_LOG_MUL_FIX]).
  if (typeof mscaleAll === "number") w.f32("rope.scaling.yarn_log_multiplier", 0.1 * mscaleAll);
}

/** The model types whose transformers class has V3's sigmoid router (V3.2, GLM-5 inherit it; GLM-4.7-Flash's is V3's). */
const V3_MODEL_TYPES = new Set(["deepseek_v3", "deepseek_v32", "glm_moe_dsa", "glm4_moe_lite"]);
const V3_ARCHITECTURES = new Set([
  "DeepseekV3ForCausalLM",
  "DeepseekV32ForCausalLM",
  "GlmMoeDsaForCausalLM",
  "Glm4MoeLiteForCausalLM",
]);

/** Whether a config is DeepSeek-V3's class (V3, R1, Kimi-K2, V3.2, GLM-4.7-Flash), not V2's. */
function isV3(h: Readonly<Record<string, unknown>>): boolean {
  return V3_MODEL_TYPES.has(String(h["model_type"])) ||
    (Array.isArray(h["architectures"]) && V3_ARCHITECTURES.has(h["architectures"][0]));
}

/**
 * YaRN's two magnitude scales as llama.cpp's deepseek2 can take them, or why
 * not. transformers scales the rotated dims by mscale(`mscale`) /
 * mscale(`mscale_all_dim`) and every score by mscale(`mscale_all_dim`)²;
 * the converter writes only `mscale_all_dim` (as `yarn_log_multiplier`) and
 * llama.cpp's deepseek2 uses it for both, so the two agree only when the
 * config's are equal (DeepSeek-V2/V3's 0.707 and 0.707, Kimi-K2's 1 and 1).
 * Measured on the deepseek3 fixture's weights: `mscale` 1 beside
 * `mscale_all_dim` 0.707 runs 0.27 off transformers' log-probs.
 */
function yarnScaleUnsupported(w: KvWriter): string | undefined {
  // deepseek32 and glm-dsa read neither (their own rule, yarnUnsupported).
  if (w.arch !== "deepseek2") return undefined;
  const rope = w.rope;
  if ((rope["rope_type"] ?? rope["type"]) !== "yarn") return undefined;
  const factor = typeof rope["factor"] === "number" ? rope["factor"] : 1;
  const all = rope["mscale_all_dim"];
  // Without mscale_all_dim transformers falls back to YaRN's plain scale, as llama.cpp does.
  if (factor <= 1 || typeof all !== "number" || all === 0) return undefined;
  const m = rope["mscale"];
  if (m === all) return undefined;
  return `its config.json has YaRN mscale ${JSON.stringify(m ?? null)} and mscale_all_dim ` +
    `${all}: llama.cpp's ${w.arch} reads only mscale_all_dim and scales attention as if ` +
    `mscale were equal to it (every published DeepSeek-V2/V3 config has them equal)`;
}

/**
 * What of a config llama.cpp's `deepseek2` (and `deepseek32`) would run
 * otherwise than transformers, or `undefined`.
 */
export function deepseek2Unsupported(
  w: KvWriter,
  /** What llama.cpp scores with when the converter writes no `expert_gating_func`. */
  scoringWhenAbsent = "softmax",
): string | undefined {
  const h = w.hparams;
  const heads = w.need("num_attention_heads");
  const kvHeads = w.num("num_key_value_heads") ?? heads;
  // The converter splits kv_b_proj by num_key_value_heads; MLA has one block per head.
  if (kvHeads !== heads) {
    return `its config.json has num_key_value_heads ${kvHeads} and num_attention_heads ${heads}; ` +
      `MLA's kv_b_proj is split per attention head, which llama.cpp's converter does with ` +
      `num_key_value_heads`;
  }
  const layers = w.need("num_hidden_layers");
  // llama.cpp takes a deepseek2 file of 26 or 27 layers for V2-Lite (no q LoRA) and
  // needs attention.q_lora_rank otherwise.
  const lite = layers === 26 || layers === 27 ||
    (layers === 48 && w.num("vocab_size") === 128256);
  if (h["q_lora_rank"] == null && !lite) {
    return `its config.json has no q_lora_rank with ${layers} layers: llama.cpp's deepseek2 ` +
      `runs a model without a q LoRA only with 26 or 27 layers (DeepSeek-V2-Lite's), or 48 ` +
      `with a vocabulary of 128256`;
  }
  // V3's rope_interleave: false rotates rotate_half's halves, not llama.cpp's NORM pairs.
  if (h["rope_interleave"] === false) {
    return "its config.json has rope_interleave false: llama.cpp's deepseek2 rotates " +
      "adjacent pairs (rope_interleave true, every published DeepSeek model)";
  }
  const yarn = yarnScaleUnsupported(w);
  if (yarn !== undefined) return yarn;
  // V2's group_limited_greedy ranks groups by their best expert; llama.cpp's
  // deepseek2 by the sum of their best two (V3's noaux_tc), and with groups
  // written it always groups, which V2's greedy does not.
  // Either way only when some groups are left out (topk_group < n_group).
  const v3 = isV3(h);
  const method = h["topk_method"] ?? "greedy";
  const groups = w.num("n_group") ?? 1;
  const used = w.num("topk_group") ?? groups;
  if (!v3 && (method === "greedy" || method === "group_limited_greedy") && used < groups) {
    return `its config.json has topk_method ${JSON.stringify(method)} with n_group ${groups} ` +
      `and topk_group ${used}; llama.cpp's deepseek2 reads no key for it and picks expert ` +
      `groups as topk_method "noaux_tc" does (by the sum of each group's two best scores)`;
  }
  const scoring = expertScoringFunction(w);
  // transformers' DeepSeek-V3 always scores with a sigmoid, V2 with a softmax;
  // llama.cpp reads the converter's expert_gating_func, softmax without it.
  const want = v3 ? "sigmoid" : "softmax";
  if ((scoring ?? scoringWhenAbsent) !== want) {
    return `its config.json has scoring_func ${JSON.stringify(scoring ?? null)}, and ` +
      `transformers scores ${h["model_type"] ?? "its"} experts with a ${want} (llama.cpp would ` +
      `use ${scoring ?? scoringWhenAbsent})`;
  }
  return undefined;
}

const KV_B = /^model\.layers\.(\d+)\.self_attn\.kv_b_proj\.weight$/;
const SCORE_BIAS = /^model\.layers\.(\d+)\.mlp\.gate\.e_score_correction_bias$/;

/**
 * The router's `e_score_correction_bias` as `exp_probs_b.bias` (the tensor
 * map's FFN_EXP_PROBS_B; a name without `.weight`/`.bias`, so not a block
 * name), or `undefined` for another tensor. GLM-4.5's router has it too.
 */
export function scoreCorrectionBias(info: TensorInfo): MadeTensor | undefined {
  const bias = SCORE_BIAS.exec(info.name);
  if (bias === null) return undefined;
  return {
    info: { ...info, name: `blk.${bias[1]}.exp_probs_b.bias` },
    needs: [info.name],
    open: ([source]) => source!.open(),
  };
}

/** `kv_b_proj` split into `attn_k_b` and `attn_v_b`; `e_score_correction_bias` renamed. */
export function deepseek2Made(tensors: readonly TensorInfo[], w: KvWriter): MadeTensor[] {
  const made: MadeTensor[] = [];
  for (const info of tensors) {
    const bias = scoreCorrectionBias(info);
    if (bias !== undefined) {
      made.push(bias);
      continue;
    }
    const kvB = KV_B.exec(info.name);
    if (kvB !== null) made.push(...splitKvB(info, `blk.${kvB[1]}`, w.hparams));
  }
  return made;
}

/** `DeepseekV2Model.modify_tensors` on `kv_b_proj`. */
function splitKvB(
  info: TensorInfo,
  blk: string,
  hparams: Readonly<Record<string, unknown>>,
): MadeTensor[] {
  const heads = hparams["num_attention_heads"];
  const nope = hparams["qk_nope_head_dim"];
  const v = hparams["v_head_dim"];
  if (typeof heads !== "number" || typeof nope !== "number" || typeof v !== "number") {
    throw new RangeError(
      `Cannot convert "${info.name}" to GGUF: splitting it needs config.json's ` +
        `num_attention_heads, qk_nope_head_dim and v_head_dim (kept in APR as hf_config)`,
    );
  }
  const [rows, cols] = [info.shape[0] ?? 0, info.shape[1] ?? 0];
  if (
    info.shape.length !== 2 || DTYPES[info.dtype].layout !== "elements" ||
    rows !== heads * (nope + v)
  ) {
    throw new RangeError(
      `Cannot convert "${info.name}" ${info.dtype} [${info.shape}] to GGUF: expected a float ` +
        `[num_attention_heads × (qk_nope_head_dim + v_head_dim), kv_lora_rank] matrix`,
    );
  }
  const width = tensorByteLength(info.dtype, [1]);
  const rowBytes = cols * width;
  // Head h's rows: nope key rows, then v value rows.
  const rowsOf = (first: number, count: number) =>
    Array.from({ length: heads }, (_, h) => {
      const start = (h * (nope + v) + first) * rowBytes;
      return [start, start + count * rowBytes] as const;
    });
  const tensor = (name: string, shape: number[]) => ({
    name,
    dtype: info.dtype,
    shape,
    byteLength: tensorByteLength(info.dtype, shape),
  });
  return [
    {
      info: tensor(`${blk}.attn_k_b.weight`, [heads, cols, nope]),
      needs: [info.name],
      open: ([source]) =>
        columnsAsRows(keepRanges(source!.open(), rowsOf(0, nope)), {
          matrices: heads,
          rows: nope,
          cols,
          width,
        }),
    },
    {
      info: tensor(`${blk}.attn_v_b.weight`, [heads, v, cols]),
      needs: [info.name],
      open: ([source]) => keepRanges(source!.open(), rowsOf(nope, v)),
    },
  ];
}

const K_B = /^blk\.(\d+)\.attn_k_b\.weight$/;
const KV_B_GGUF = /^blk\.(\d+)\.attn_kv_b\.weight$/;

/**
 * `kv_b_proj` joined again from `attn_k_b` (each head's key rows,
 * transposed back) and `attn_v_b` (its value rows), head by head: the
 * inverse of {@linkcode splitKvB}. A GGUF of an older converter, from
 * before the split, holds it whole, as `attn_kv_b` (which llama.cpp still
 * loads): named back.
 *
 * @param tensors The GGUF's tensors.
 * @returns One join per layer with both parts, or with `attn_kv_b`.
 */
export function deepseek2JoinedBack(tensors: readonly TensorInfo[]): JoinedTensor[] {
  const names = new Map(tensors.map((t) => [t.name, t]));
  return tensors.flatMap((info): JoinedTensor[] => {
    const whole = KV_B_GGUF.exec(info.name)?.[1];
    if (whole !== undefined) {
      const name = `model.layers.${whole}.self_attn.kv_b_proj.weight`;
      return [{ name, shape: info.shape, parts: [{ name: info.name }], blocks: 1 }];
    }
    const layer = K_B.exec(info.name)?.[1];
    const vB = names.get(`blk.${layer}.attn_v_b.weight`);
    if (layer === undefined || vB === undefined) return [];
    // attn_k_b [heads, kv_lora, nope], attn_v_b [heads, v, kv_lora].
    const [heads = 0, kvLora = 0, nope = 0] = info.shape;
    const v = vB.shape[1] ?? 0;
    return [{
      name: `model.layers.${layer}.self_attn.kv_b_proj.weight`,
      shape: [heads * (nope + v), kvLora],
      parts: [{ name: info.name, transposed: true }, { name: vB.name }],
      blocks: heads,
    }];
  });
}

/**
 * The sizes {@linkcode splitKvB} reads, from a GGUF's keys (`key_length_mla`
 * is `qk_nope_head_dim` + `qk_rope_head_dim`, `key_length` `kv_lora_rank` +
 * `qk_rope_head_dim`).
 *
 * @param key A key's value by its name after the architecture's (`deepseek2.`).
 * @returns The config fields the GGUF gives.
 */
export function deepseek2ConfigBack(key: (name: string) => unknown): Record<string, unknown> {
  const [heads, qk, latentKey, kvLora, dims, v] = [
    "attention.head_count",
    "attention.key_length_mla",
    "attention.key_length",
    "attention.kv_lora_rank",
    "rope.dimension_count",
    "attention.value_length_mla",
  ].map(key);
  // The whole qk_rope_head_dim is key_length less the latent: GLM-5's
  // rope.dimension_count is its partial_rotary_factor's share of it.
  const rope = typeof latentKey === "number" && typeof kvLora === "number"
    ? latentKey - kvLora
    : dims;
  if (typeof qk !== "number" || typeof rope !== "number") return {};
  return { num_attention_heads: heads, qk_nope_head_dim: qk - rope, v_head_dim: v };
}

/**
 * Why a GGUF that holds `kv_b_proj` both whole and split (an older
 * converter's) is not read back, or `undefined`.
 *
 * @param names The GGUF's tensor names.
 * @returns The refusal, or `undefined`.
 */
export function twiceWrittenKvB(names: ReadonlySet<string>): string | undefined {
  const both = [...names].some((n) => KV_B_GGUF.test(n)) && [...names].some((n) => K_B.test(n));
  return both
    ? "aprkit does not read a DeepSeek GGUF that holds kv_b_proj twice (attn_kv_b beside " +
      "attn_k_b and attn_v_b, an older converter's) back into Hugging Face's layout; " +
      "--keep-names keeps its GGUF tensors"
    : undefined;
}

/**
 * Why a GGUF with multi-token-prediction layers (`blk.N.nextn.*`, which
 * GLM's converters keep) is not read back, or `undefined` without them.
 *
 * @param model The model, for the message (`a GLM-4.5`).
 * @returns The refusal of a GGUF's tensor names.
 */
export function nextnReadBackRefusal(
  model: string,
): (names: ReadonlySet<string>) => string | undefined {
  return (names) =>
    [...names].some((n) => n.includes(".nextn."))
      ? `aprkit does not read ${model} GGUF with multi-token-prediction layers ` +
        `(blk.N.nextn.*) back into Hugging Face's layout; --keep-names keeps its GGUF tensors`
      : undefined;
}

const LAYER = /^model\.layers\.(\d+)\./;

/**
 * The multi-token-prediction layers (`skip_mtp`): every layer from
 * `num_hidden_layers` on.
 */
function drops(name: string, w: KvWriter): boolean {
  const layer = LAYER.exec(name);
  const layers = w.num("num_hidden_layers");
  return layer !== null && layers !== undefined && Number(layer[1]) >= layers;
}

/** The router and shared experts as DeepSeek's checkpoints name them (GLM-4.5's too). */
export const DEEPSEEK_MOE_BLOCK: readonly (readonly [string, string])[] = [
  ["ffn_gate_inp", "mlp.gate"],
  ["ffn_gate_shexp", "mlp.shared_experts.gate_proj"],
  ["ffn_up_shexp", "mlp.shared_experts.up_proj"],
  ["ffn_down_shexp", "mlp.shared_experts.down_proj"],
];

/**
 * DeepSeek's MoE fields (dots.llm1's, GLM-4.5's too), which the converter
 * writes as `leading_dense_block_count`, `expert_feed_forward_length`,
 * `expert_shared_count`, `expert_weights_norm`, `expert_weights_scale`.
 */
export const DEEPSEEK_MOE_FIELDS: readonly string[] = [
  "first_k_dense_replace",
  "moe_intermediate_size",
  "n_shared_experts",
  "norm_topk_prob",
  "routed_scaling_factor",
];

/** The routed experts, one tensor each (`mlp.experts.E.*_proj`), stacked as the converter does. */
export const DEEPSEEK_EXPERTS: ExpertLayout = {
  prefix: "mlp.experts",
  stacks: [
    { hf: "down_proj", gguf: "ffn_down_exps" },
    { hf: "gate_proj", gguf: "ffn_gate_exps" },
    { hf: "up_proj", gguf: "ffn_up_exps" },
  ],
};

/** MLA's tensors, with the MoE block's: DeepSeek-V2's layer (without the experts). */
export const DEEPSEEK2_BLOCK: readonly (readonly [string, string])[] = [
  ...LLAMA_BLOCK.filter(([g]) => !["attn_k", "attn_v", "attn_q_norm", "attn_k_norm"].includes(g)),
  ["attn_q_a", "self_attn.q_a_proj"],
  ["attn_q_a_norm", "self_attn.q_a_layernorm"],
  ["attn_q_b", "self_attn.q_b_proj"],
  ["attn_kv_a_mqa", "self_attn.kv_a_proj_with_mqa"],
  ["attn_kv_a_norm", "self_attn.kv_a_layernorm"],
  ...DEEPSEEK_MOE_BLOCK,
];

/** The config fields `DeepseekV2Model` writes or checks, shared by its subclasses. */
export const DEEPSEEK2_CONFIG_FIELDS = {
  written: [
    ...DEEPSEEK_MOE_FIELDS,
    "kv_lora_rank",
    "q_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
  ],
  checked: ["rope_interleave", "topk_method", "scoring_func"],
  assumed: [activation("hidden_act", SILU)],
  irrelevant: {
    qk_head_dim: "qk_nope_head_dim + qk_rope_head_dim, which are written",
  },
} as const;

/** DeepSeek-V2, V2-Lite, V2.5, V3, R1. */
/**
 * transformers sets `head_dim` (its rotary width) and `qk_head_dim` from the
 * per-part sizes on loading: a saved value the tensors contradict is a
 * broken checkpoint.
 *
 * @param h The config.
 * @returns The keys they imply.
 */
export function deepseek2ImpliedKeys(h: Readonly<Record<string, unknown>>): ImpliedKey[] {
  return impliedKeys(h, [
    ["rope.dimension_count", "head_dim"],
    ["attention.key_length_mla", "qk_head_dim"],
  ]);
}

export const DEEPSEEK2: Family = {
  name: "deepseek2",
  apr: { rename: SHARED_EXPERT_APR_NAMES },
  source: "llama.cpp conversion/deepseek.py DeepseekV2Model; transformers DeepseekV2ForCausalLM, " +
    "DeepseekV3ForCausalLM",
  configFields: {
    ...DEEPSEEK2_CONFIG_FIELDS,
    irrelevant: {
      ...DEEPSEEK2_CONFIG_FIELDS.irrelevant,
      num_nextn_predict_layers: "the multi-token-prediction layers, which the converter drops",
      num_mtp_layers: "the multi-token-prediction layers, which the converter drops",
    },
  },
  hfArchitectures: ["DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"],
  hfModelTypes: ["deepseek_v2", "deepseek_v3"],
  ggufArchitecture: "deepseek2",
  // Kimi-K2 (model_type kimi_k2): EOS stays config.json's (DeepseekV2Model writes no other).
  tiktoken: KIMI_TIKTOKEN,
  ggufRopeType: "norm",
  // The router bias by the name `made` gives it, for a GGUF read back.
  blockNames: [...DEEPSEEK2_BLOCK, GATE_SCORE_BIAS],
  experts: DEEPSEEK_EXPERTS,
  permutesQk: false,
  hfRopeInterleaved: true,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeDeepseek2Kv,
    impliedKeys: deepseek2ImpliedKeys,
    llamaKeys: true,
    unsupported: deepseek2Unsupported,
    made: deepseek2Made,
    drops,
    joinedBack: deepseek2JoinedBack,
    hfNameBack: scoreBiasHfName,
    hfConfigBack: deepseek2ConfigBack,
  },
  // A family spreading this one under a GGUF architecture of its own reads
  // back by its own rule (DeepSeek-V3.2's and GLM-5's set one), or not at all.
  // GLM-4.7-Flash's GGUF, read as this family's, keeps its MTP layers.
  ggufReadBackRefusalOf: (names, metadata) =>
    metadata === undefined || metadata.architecture === "deepseek2"
      ? nextnReadBackRefusal("a DeepSeek (GLM-4.7-Flash)")(names) ?? twiceWrittenKvB(names)
      : `aprkit does not read a ${metadata.architecture} GGUF back into Hugging Face's ` +
        `layout (DeepSeek's, with tensors of its own); --keep-names keeps its GGUF tensors`,
};
