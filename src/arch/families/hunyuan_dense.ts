// This module is browser compatible.

/**
 * Hunyuan dense (`HunYuanDenseV1ForCausalLM`: Hunyuan-0.5B…7B), after
 * llama.cpp's `HunYuanModel` (conversion/hunyuan.py), GGUF architecture
 * `hunyuan-dense`: the common keys, llama block names with per-head Q/K
 * norms (`query_layernorm`, `key_layernorm`, applied after RoPE in both),
 * NEOX RoPE, nothing permuted.
 *
 * RoPE `dynamic` with `alpha` (every published config) is transformers'
 * NTK-alpha: a fixed base `θ · alpha^(d / (d − 2))`, which the converter
 * writes as `rope.freq_base` with no scaling, and, as it assumes the
 * published 256k context, `context_length` and the original context 262144.
 * Its EOS is `eod_token_id`, and with a list of EOS ids in
 * `generation_config.json` the first is the EOT (the converter's fixes of
 * the published configs).
 *
 * llama.cpp's graph loads no output-projection bias: `attention_bias`
 * (which gives `o_proj` one) is refused for GGUF, as are RoPE scalings it has
 * no key for, and a `dynamic` RoPE outside the converter's assumptions.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";

/** What the converter assumes of a `dynamic` RoPE: its 256k context. */
const DYNAMIC_CONTEXT = 256 * 1024;
const DYNAMIC_TRAINED = [32 * 1024, DYNAMIC_CONTEXT];

function headDim(w: KvWriter): number {
  return w.num("head_dim") ?? Math.trunc(w.need("hidden_size") / w.need("num_attention_heads"));
}

/**
 * HunYuan's RoPE `dynamic` with `alpha` as its converter classes write it: the
 * fixed base `θ · alpha^(dim / (dim − 2))`, no scaling, their 256k context.
 * Nothing for another RoPE.
 *
 * @param dim The rotated width the converter class takes.
 * @param defaultAlpha Its `alpha` when the config has none.
 */
export function writeAlphaRope(w: KvWriter, dim: number, defaultAlpha: number): void {
  const rope = w.fullRope;
  if (rope["rope_type"] !== "dynamic") return;
  const alpha = typeof rope["alpha"] === "number" ? rope["alpha"] : defaultAlpha;
  const base = typeof rope["rope_theta"] === "number" ? rope["rope_theta"] : 10000;
  w.f32("rope.freq_base", base * alpha ** (dim / (dim - 2)));
  w.set("rope.scaling.type", "STRING", "none");
  w.f32("rope.scaling.factor", 1);
  w.u32("rope.scaling.original_context_length", DYNAMIC_CONTEXT);
  w.u32("context_length", DYNAMIC_CONTEXT);
}

/** `HunYuanModel.set_gguf_parameters`. */
function writeKv(w: KvWriter): void {
  writeTextModelKv(w);
  writeAlphaRope(w, headDim(w), 50);
}

function unsupported(w: KvWriter): string | undefined {
  return attentionBiasRefusal(w) ?? alphaRopeRefusal(w);
}

/** Why llama.cpp's HunYuan graphs could not run a config's attention biases, or `undefined`. */
export function attentionBiasRefusal(w: KvWriter): string | undefined {
  if (w.hparams["attention_bias"] !== true) return undefined;
  return "its config.json says attention_bias true (an o_proj bias too); llama.cpp's " +
    `${w.arch} loads no output-projection bias and would not run it as transformers does`;
}

/**
 * Why a config's RoPE is not one the converter writes as HunYuan's fixed
 * base (`dynamic` with `alpha`, θ 10000, a 32k or 256k trained context), or
 * `undefined`.
 */
export function alphaRopeRefusal(w: KvWriter): string | undefined {
  const rope = w.fullRope;
  const type = rope["rope_type"] ?? "default";
  if (type === "dynamic") {
    // Without alpha, transformers' dynamic NTK rescales with the sequence length.
    if (typeof rope["alpha"] !== "number") {
      return 'its config.json has rope_type "dynamic" without alpha: transformers rescales ' +
        "RoPE with the sequence length, which llama.cpp has no key for";
    }
    const trained = w.num("max_position_embeddings");
    if (rope["rope_theta"] !== 10000 || !DYNAMIC_TRAINED.includes(trained ?? NaN)) {
      return `its config.json has a dynamic RoPE with rope_theta ${rope["rope_theta"]} and ` +
        `max_position_embeddings ${trained}; llama.cpp's converter writes its 256k context ` +
        `only for HunYuan's published 10000 with 32k or 256k`;
    }
  } else if (type !== "default") {
    return `its config.json has rope_type ${JSON.stringify(type)}; llama.cpp's converter ` +
      `writes no such RoPE scaling for ${w.arch}`;
  }
  return undefined;
}

/** `HunYuanModel.set_vocab`'s fixes: `eod_token_id` as EOS, a list's first EOS as EOT. */
function specialIdsFromConfig(
  config: Readonly<Record<string, unknown>>,
  generation: Readonly<Record<string, unknown>>,
): Record<string, number> {
  const ids: Record<string, number> = {};
  const eos = generation["eos_token_id"];
  if (Array.isArray(eos) && eos.length >= 2 && Number.isSafeInteger(eos[0])) ids["eot"] = eos[0];
  const eod = config["eod_token_id"];
  if (typeof eod === "number" && Number.isSafeInteger(eod)) ids["eos"] = eod;
  return ids;
}

/** Hunyuan-0.5B, 1.8B, 4B, 7B. */
export const HUNYUAN_DENSE: Family = {
  name: "hunyuan-dense",
  source: "llama.cpp conversion/hunyuan.py HunYuanModel; transformers HunYuanDenseV1ForCausalLM",
  configFields: {
    assumed: [activation("hidden_act", SILU)],
    checked: ["attention_bias"],
    written: ["eod_token_id"],
    ropeTypes: ["dynamic"],
  },
  hfArchitectures: ["HunYuanDenseV1ForCausalLM"],
  hfModelTypes: ["hunyuan_v1_dense"],
  ggufArchitecture: "hunyuan-dense",
  ggufRopeType: "neox",
  blockNames: LLAMA_BLOCK.map(([gguf, hf]) =>
    gguf === "attn_q_norm"
      ? [gguf, "self_attn.query_layernorm"] as const
      : gguf === "attn_k_norm"
      ? [gguf, "self_attn.key_layernorm"] as const
      : [gguf, hf] as const
  ),
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv, unsupported },
  specialIdsFromConfig,
  // The converter names tencent/Hunyuan-4B-Instruct's tokenizer hunyuan-dense by its hash.
  preTokenizer: "hunyuan-dense",
};
