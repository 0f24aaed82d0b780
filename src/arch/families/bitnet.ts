// This module is browser compatible.

/**
 * BitNet b1.58 (`BitNetForCausalLM`), after llama.cpp's `BitnetModel`
 * (conversion/bitnet.py): the text model's keys and linear RoPE scaling ×1,
 * NEOX RoPE (no Q/K permutation), the llama block with `attn_sub_norm`
 * (before `o_proj`) and `ffn_sub_norm` (before `down_proj`), and every
 * projection rounded to ternary × mean(|w|) (`ternary.ts`). transformers'
 * names for the sub-norms (`self_attn.attn_sub_norm`, `mlp.ffn_sub_norm`)
 * are read, which the converter's tensor map lacks (it knows 1bitLLM's).
 *
 * llama.cpp's `bitnet` graph (src/models/bitnet.cpp) applies SiLU to the
 * gate (transformers' default, and the published 2B-4T's, is `relu2`: such
 * configs are refused for GGUF), computes the logits with the token embedding
 * (an untied `lm_head` is refused), loads no bias and no RoPE factors.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK, type MadeTensor } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { activation, SILU } from "../config_fields.ts";
import { writeTextModelKv } from "../text_model.ts";
import { ternaryWeights } from "../ternary.ts";
import type { TensorInfo } from "../../tensor.ts";

/** `BitnetModel.set_gguf_parameters`: the text model's keys, then linear RoPE scaling ×1. */
function writeKv(w: KvWriter): void {
  writeTextModelKv(w);
  w.set("rope.scaling.type", "STRING", "linear");
  w.f32("rope.scaling.factor", 1);
}

function unsupported(w: KvWriter): string | undefined {
  const why = (what: string, llamaCpp: string) =>
    `its config.json says ${what}; llama.cpp's bitnet ${llamaCpp} and would not run it as ` +
    `transformers does (APR and SafeTensors output keep it)`;
  if (w.hparams["tie_word_embeddings"] !== true) {
    return why(
      `tie_word_embeddings ${w.hparams["tie_word_embeddings"] ?? "false (by default)"}`,
      "computes the logits with the token embedding (it loads no output.weight)",
    );
  }
  if (w.hparams["attention_bias"] === true) {
    return why("attention_bias true", "loads no attention bias");
  }
  const ropeType = w.fullRope["rope_type"] ?? w.fullRope["type"] ?? "default";
  if (ropeType !== "default") {
    return why(`rope_type ${ropeType}`, "rotates without scaling (its converter writes ×1)");
  }
  return undefined;
}

/** The llama block with BitNet's sub-norms: GGUF base name → Hugging Face piece. */
const BITNET_BLOCK: readonly (readonly [string, string])[] = [
  ...LLAMA_BLOCK.filter(([gguf]) => !gguf.endsWith("_q_norm") && !gguf.endsWith("_k_norm")),
  ["attn_sub_norm", "self_attn.attn_sub_norm"],
  ["ffn_sub_norm", "mlp.ffn_sub_norm"],
];

/** The projections the converter rounds to ternary (`weight_quant`): piece → GGUF base name. */
const TERNARY: ReadonlyMap<string, string> = new Map(
  BITNET_BLOCK.filter(([gguf]) => /^(attn_(q|k|v|output)|ffn_(gate|up|down))$/.test(gguf))
    .map(([gguf, hf]) => [hf, gguf]),
);

const BLOCK_WEIGHT = /^model\.layers\.(\d+)\.(.+)\.weight$/;

/** Every projection, rounded to ternary × its mean absolute value. */
function made(tensors: readonly TensorInfo[]): MadeTensor[] {
  const out: MadeTensor[] = [];
  for (const info of tensors) {
    const m = BLOCK_WEIGHT.exec(info.name);
    const gguf = m === null ? undefined : TERNARY.get(m[2]!);
    if (gguf === undefined) continue;
    if (info.dtype !== "F32" && info.dtype !== "BF16") {
      throw new RangeError(
        `Cannot convert "${info.name}" to GGUF: it is ${info.dtype}; aprkit rounds BitNet's ` +
          `projections to ternary from F32 and BF16 values only`,
      );
    }
    const dtype = info.dtype;
    out.push({
      info: { ...info, name: `blk.${m![1]}.${gguf}.weight` },
      needs: [info.name],
      open: ([source]) => ternaryWeights(source!, dtype),
    });
  }
  return out;
}

/** BitNet b1.58. */
export const BITNET: Family = {
  name: "bitnet",
  source: "llama.cpp conversion/bitnet.py BitnetModel; transformers BitNetForCausalLM",
  configFields: {
    // transformers' default is relu2; llama.cpp's bitnet graph is SwiGLU.
    assumed: [activation("hidden_act", SILU, "relu2")],
    checked: ["tie_word_embeddings", "attention_bias"],
  },
  hfArchitectures: ["BitNetForCausalLM"],
  hfModelTypes: ["bitnet"],
  ggufArchitecture: "bitnet",
  ggufRopeType: "neox",
  blockNames: BITNET_BLOCK,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv, unsupported, made },
};
