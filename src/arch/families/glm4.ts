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
 * GLM-4.1V's text model (`Glm4vForConditionalGeneration`, the converter's
 * same class) is this block with multimodal RoPE: `rope.dimension_sections`
 * from `mrope_section`, which llama.cpp rotates as NEOX (halves apart), so
 * the converter permutes each head's rotated Q/K rows into that order.
 *
 * realizar has no GLM model: APR output keeps the checkpoint's tensors under
 * their Hugging Face names.
 *
 * @module
 */

import { DTYPES, tensorByteLength } from "../../dtype.ts";
import type { ModelMetadata, TensorInfo } from "../../tensor.ts";
import { type AprLayout, type Family, LLAMA_BLOCK, type MadeTensor } from "../family.ts";
import { type KvWriter, record } from "../kv.ts";
import { reorderSegments } from "../transforms.ts";
import { madeFrom } from "./qwen3next.ts";
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
 * What of a GLM config llama.cpp would run otherwise than transformers (an
 * odd number of rotated dims), or `undefined`.
 */
export function glmUnsupported(w: KvWriter, byDefault = 0.5): string | undefined {
  const rotated = glmRopeDims(w, byDefault);
  if (rotated % 2 !== 0) {
    return `its config.json has head_dim ${headDim(w)} × partial_rotary_factor ` +
      `${rotaryFactor(w, byDefault)}: ${rotated} rotated dims, an odd number (RoPE rotates pairs)`;
  }
  return undefined;
}

/**
 * A head's Q/K rows in the order `Glm4Model.normal_to_neox` writes them for
 * M-RoPE (llama.cpp rotates M-RoPE as NEOX, halves apart; transformers'
 * GLM-4V adjacent pairs): the rotated rows' even ones, then their odd ones,
 * then the rows not rotated.
 */
function neoxRows(head: number, rotated: number): number[] {
  return [
    ...Array.from({ length: rotated / 2 }, (_, i) => 2 * i),
    ...Array.from({ length: rotated / 2 }, (_, i) => 2 * i + 1),
    ...Array.from({ length: head - rotated }, (_, i) => rotated + i),
  ];
}

const QK = /^model\.layers\.(\d+)\.self_attn\.([qk])_proj\.(weight|bias)$/;

/**
 * GLM-4.1V's Q/K weights and biases with each head's rows in NEOX order, as
 * `Glm4Model.modify_tensors` permutes them where the config has
 * `mrope_section`; nothing otherwise.
 */
function glm4Made(tensors: readonly TensorInfo[], w: KvWriter): MadeTensor[] {
  if (w.rope["mrope_section"] === undefined) return [];
  const head = headDim(w);
  const order = neoxRows(head, glmRopeDims(w));
  const made: MadeTensor[] = [];
  for (const info of tensors) {
    const m = QK.exec(info.name);
    if (m === null) continue;
    const rows = info.shape[0] ?? 0;
    if (DTYPES[info.dtype].layout !== "elements" || rows % head !== 0) {
      throw new RangeError(
        `Cannot convert "${info.name}" ${info.dtype} [${info.shape}] to GGUF: its rows are ` +
          `permuted per head of ${head} for M-RoPE, which needs whole heads of a float type`,
      );
    }
    const headBytes = tensorByteLength(info.dtype, [head, ...info.shape.slice(1)]);
    made.push(madeFrom(
      info,
      `blk.${m[1]}.attn_${m[2]}.${m[3]}`,
      info.shape,
      (open) => reorderSegments(open(), headBytes, order, `"${info.name}"`),
    ));
  }
  return made;
}

/**
 * Why a GLM-4 GGUF is not read back: the M-RoPE one (GLM-4.1V's text model)
 * holds its Q/K rows permuted, which aprkit does not undo.
 */
function glm4ReadBackRefusal(
  _names: ReadonlySet<string>,
  metadata?: ModelMetadata,
): string | undefined {
  const kv = record(metadata?.gguf_metadata);
  return kv?.["glm4.rope.dimension_sections"] === undefined
    ? undefined
    : "aprkit does not read a GLM-4.1V text GGUF (glm4 with rope.dimension_sections) back into " +
      "Hugging Face's layout (its Q/K rows are permuted for M-RoPE); --keep-names keeps its GGUF " +
      "tensors";
}

/**
 * `glmUnsupported`, and GLM-4.1V's multimodal RoPE without a rotary share:
 * transformers' `Glm4vTextConfig` has no 0.5 default (unlike `Glm4Config`
 * and GLM-4.5V's), so it rotates the whole head, the converter half of it.
 */
function glm4Unsupported(w: KvWriter): string | undefined {
  if (
    w.rope["mrope_section"] !== undefined && typeof w.rope["partial_rotary_factor"] !== "number"
  ) {
    return "its config.json has rope mrope_section (GLM-4V's multimodal RoPE) and no " +
      "partial_rotary_factor: transformers' GLM-4V rotates the whole head then, llama.cpp's " +
      "converter half of it";
  }
  return glmUnsupported(w);
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
  // GLM-4.1V's text model and its composite (Glm4vForConditionalGeneration).
  hfModelTypes: ["glm4", "glm4v_text", "glm4v"],
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
  gguf: { writeKv: writeGlm4Kv, unsupported: glm4Unsupported, made: glm4Made },
  ggufReadBackRefusalOf: glm4ReadBackRefusal,
  preTokenizer: "glm4",
  specialTokensByName: GLM4_SPECIAL_TOKENS,
};
