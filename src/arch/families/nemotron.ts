// This module is browser compatible.

/**
 * Nemotron-4 / Minitron (`NemotronForCausalLM`), after llama.cpp's
 * `NemotronModel` (conversion/nemotron.py): llama's block names with
 * LayerNorm1P norms (biases; transformers multiplies by `1 + w`, so every
 * norm weight gets `+1` on the way to GGUF, as the converter adds it), a
 * feed-forward of up, ReLU², down (no gate), NEOX RoPE on
 * `partial_rotary_factor` of each head, RoPE scaling written as `none` or
 * linear. Its SentencePiece vocabulary gets PAD 0 and UNK 1 whatever the
 * tokenizer files say.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { activation } from "../config_fields.ts";
import { writeTextModelKv } from "../text_model.ts";
import { gemmaNormShift } from "./gemma.ts";

/** `NemotronModel.set_gguf_parameters`. */
function writeNemotronKv(w: KvWriter): void {
  writeTextModelKv(w);
  w.u32("vocab_size", w.need("vocab_size"));
  w.f32("attention.layer_norm_epsilon", w.need("layer_norm_eps", "layer_norm_epsilon", "norm_eps"));
  const share = w.rope["partial_rotary_factor"];
  if (typeof share !== "number") {
    throw new RangeError("config.json has no partial_rotary_factor (Nemotron needs it)");
  }
  const hidden = w.need("hidden_size");
  const heads = w.need("num_attention_heads");
  w.u32("rope.dimension_count", Math.trunc(Math.trunc(share * hidden) / heads));
  const factor = w.fullRope["factor"];
  if (typeof factor === "number" && factor !== 0) {
    w.set("rope.scaling.type", "STRING", "linear");
    w.f32("rope.scaling.factor", factor);
  } else w.set("rope.scaling.type", "STRING", "none");
}

/**
 * What llama.cpp's nemotron would compute otherwise: a head size other than
 * hidden / heads (the converter's rotated share assumes it), a RoPE
 * scaling other than linear (the converter writes any factor as linear).
 */
function nemotronUnsupported(w: KvWriter): string | undefined {
  const hidden = w.need("hidden_size");
  const heads = w.need("num_attention_heads");
  const headDim = w.num("head_dim");
  if (headDim !== undefined && headDim !== hidden / heads) {
    return `its config.json has head_dim ${headDim}; the converter derives the rotated share ` +
      `from hidden_size / num_attention_heads = ${hidden / heads}, so llama.cpp would rotate ` +
      `another width than transformers`;
  }
  const type = w.fullRope["rope_type"];
  if (type !== undefined && type !== "default" && type !== "linear") {
    return `its config.json has rope_type ${JSON.stringify(type)}; the converter writes ` +
      `Nemotron's RoPE scaling as linear and llama.cpp would compute it so`;
  }
  return undefined;
}

/** Nemotron-4, Minitron. */
export const NEMOTRON: Family = {
  name: "nemotron",
  source: "llama.cpp conversion/nemotron.py NemotronModel; transformers NemotronForCausalLM",
  configFields: {
    // rope dimension from partial_rotary_factor; q/k/v/o and up/down biases load as optional tensors.
    written: ["norm_eps", "attention_bias", "mlp_bias"],
    checked: ["head_dim"],
    // transformers' ACT2FN "relu2": ReLU squared, llama.cpp's LLM_FFN_RELU_SQR.
    assumed: [activation("hidden_act", ["relu2"])],
  },
  hfArchitectures: ["NemotronForCausalLM"],
  hfModelTypes: ["nemotron"],
  ggufArchitecture: "nemotron",
  ggufRopeType: "neox",
  blockNames: LLAMA_BLOCK,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeNemotronKv,
    unsupported: nemotronUnsupported,
    shift: gemmaNormShift,
    llamaKeys: true,
  },
  sentencePiece: { forcedIds: { pad: 0, unk: 1 } },
};
