// This module is browser compatible.

/**
 * GLM-4-0414 (`Glm4ForCausalLM`: GLM-4-9B/32B-0414, GLM-Z1), after llama.cpp's
 * `Glm4Model` (conversion/glm.py), GGUF architecture `glm4`.
 *
 * Q/K/V biases; four norms per layer: before and after attention
 * (`input_layernorm`, `post_self_attn_layernorm` → `post_attention_norm`),
 * before and after the MLP (`post_attention_layernorm` → `ffn_norm`,
 * `post_mlp_layernorm` → `post_ffw_norm`); the MLP's gate and up in one
 * `gate_up_proj`, kept fused as `ffn_up` (llama.cpp splits it). RoPE on the
 * first `partial_rotary_factor` (0.5) of each head by adjacent pairs
 * (transformers' GLM rotary), as llama.cpp's NORM does: nothing is
 * permuted. Every tensor is renamed only.
 *
 * realizar has no GLM model: APR output keeps the checkpoint's tensors under
 * their Hugging Face names.
 *
 * @module
 */

import { type AprLayout, type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";

/** A head's size: `head_dim`, else hidden/heads. */
function headDim(w: KvWriter): number {
  return w.num("head_dim") ?? Math.floor(w.need("hidden_size") / w.need("num_attention_heads"));
}

/**
 * The rotary share of a head: `partial_rotary_factor`, else `byDefault` (0.5,
 * GLM's classes' default and the converter's; Solar Open's is 1).
 */
function rotaryFactor(w: KvWriter, byDefault: number): number {
  const factor = w.rope["partial_rotary_factor"];
  return typeof factor === "number" ? factor : byDefault;
}

/** The rotated dims of a head, truncated as the converter and transformers do. */
export function glmRopeDims(w: KvWriter, byDefault = 0.5): number {
  return Math.trunc(headDim(w) * rotaryFactor(w, byDefault));
}

/**
 * What of a GLM config llama.cpp would run otherwise than transformers (the
 * vision models' M-RoPE, an odd number of rotated dims), or `undefined`.
 */
export function glmUnsupported(w: KvWriter, byDefault = 0.5): string | undefined {
  if (w.rope["mrope_section"] !== undefined) {
    return "its config.json has rope mrope_section (GLM-4V's multimodal RoPE), which aprkit " +
      "does not convert to GGUF";
  }
  const rotated = glmRopeDims(w, byDefault);
  if (rotated % 2 !== 0) {
    return `its config.json has head_dim ${headDim(w)} × partial_rotary_factor ` +
      `${rotaryFactor(w, byDefault)}: ${rotated} rotated dims, an odd number (RoPE rotates pairs)`;
  }
  return undefined;
}

/** `Glm4Model.set_gguf_parameters`. */
function writeGlm4Kv(w: KvWriter): void {
  writeTextModelKv(w);
  w.u32("rope.dimension_count", glmRopeDims(w));
}

/**
 * `Glm4Model.set_vocab`: `<|endoftext|>` as EOS, UNK and BOS, `<|user|>` as
 * EOT.
 */
const GLM4_SPECIAL_TOKENS: readonly (readonly [string, string])[] = [
  ["eos", "<|endoftext|>"],
  ["eot", "<|user|>"],
  ["unk", "<|endoftext|>"],
  ["bos", "<|endoftext|>"],
];

/**
 * GLM's block without GLM-4-0414's post-norms: Q/K/V (with biases), the
 * MLP's gate and up fused in `gate_up_proj` (kept fused as `ffn_up`), two
 * RMSNorms.
 */
export const GLM_BLOCK: readonly (readonly [string, string])[] = [
  ...LLAMA_BLOCK.filter(([g]) => !["ffn_gate", "ffn_up", "attn_q_norm", "attn_k_norm"].includes(g)),
  ["ffn_up", "mlp.gate_up_proj"],
];

/** realizar knows no fused gate_up_proj: the halves under its names, as Phi-3's. */
export const GLM_APR: AprLayout = {
  split: [["mlp.gate_up_proj", ["mlp.gate_proj", "mlp.up_proj"]]],
};

/** GLM-4-9B-0414, GLM-4-32B-0414, GLM-Z1. */
export const GLM4: Family = {
  name: "glm4",
  apr: GLM_APR,
  source: "llama.cpp conversion/glm.py Glm4Model; transformers Glm4ForCausalLM",
  configFields: { assumed: [activation("hidden_act", SILU)] },
  hfArchitectures: ["Glm4ForCausalLM"],
  hfModelTypes: ["glm4"],
  ggufArchitecture: "glm4",
  ggufRopeType: "norm",
  blockNames: [
    ...GLM_BLOCK,
    ["post_attention_norm", "post_self_attn_layernorm"],
    ["post_ffw_norm", "post_mlp_layernorm"],
  ],
  permutesQk: false,
  hfRopeInterleaved: true,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv: writeGlm4Kv, unsupported: glmUnsupported },
  preTokenizer: "glm4",
  specialTokensByName: GLM4_SPECIAL_TOKENS,
};
