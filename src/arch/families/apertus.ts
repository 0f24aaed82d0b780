// This module is browser compatible.

/**
 * Apertus (`ApertusForCausalLM`), after llama.cpp's `ApertusModel`
 * (conversion/llama.py): a `LlamaModel` without the Q/K permutation (NEOX
 * RoPE), llama's keys and `rope_freqs` for Llama 3's RoPE (as published),
 * per-head Q/K RMSNorms, norms named `attention_layernorm` and
 * `feedforward_layernorm`, and a feed-forward of up, xIELU, down (no gate).
 * xIELU's per-layer scalars (`mlp.act_fn.alpha_p`, `alpha_n`, `beta`, `eps`)
 * are written as the arrays `xielu.*`, not as tensors, each added as its last
 * layer's value comes (`modify_tensors`), so after `general.architecture`.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK, type TensorKeys } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { activation } from "../config_fields.ts";
import { LLAMA_GGUF, writeLlamaKv } from "./llama.ts";

/** xIELU's scalars, `model.layers.N.mlp.act_fn.<kind>`. */
const XIELU = /^model\.layers\.(\d+)\.mlp\.act_fn\.(alpha_n|alpha_p|beta|eps)$/;

/** `ApertusModel.modify_tensors`: each kind's array once every layer's value has come. */
function writeXieluKeys(
  w: KvWriter,
  values: readonly (readonly [string, readonly number[]])[],
): void {
  const layers = w.need("num_hidden_layers");
  const kinds = new Map<string, Map<number, number>>();
  for (const [name, v] of values) {
    const m = XIELU.exec(name);
    if (m === null) continue;
    if (v.length !== 1) {
      throw new RangeError(`Cannot write xielu.${m[2]}: "${name}" has ${v.length} values, not 1`);
    }
    const byLayer = kinds.get(m[2]!) ?? new Map<number, number>();
    kinds.set(m[2]!, byLayer);
    byLayer.set(Number(m[1]), v[0]!);
    if (byLayer.size !== layers) continue;
    const ordered = [...byLayer].sort(([a], [b]) => a - b).map(([, x]) => x);
    w.put(`xielu.${m[2]}`, { type: "ARRAY", array_types: ["FLOAT32"], value: ordered });
  }
  for (const kind of ["alpha_n", "alpha_p", "beta", "eps"]) {
    const byLayer = kinds.get(kind);
    const layer = Array.from({ length: layers }, (_, i) => i).find((i) => !byLayer?.has(i));
    if (layer !== undefined) {
      throw new RangeError(
        `Cannot write xielu.${kind}: the model has no "model.layers.${layer}.mlp.act_fn.${kind}", ` +
          `which llama.cpp's apertus needs for every layer`,
      );
    }
  }
}

/** The xIELU scalars, read into keys. */
const XIELU_KEYS: TensorKeys = { reads: (name) => XIELU.test(name), write: writeXieluKeys };

/** Apertus (the Swiss AI models). */
export const APERTUS: Family = {
  name: "apertus",
  source: "llama.cpp conversion/llama.py ApertusModel; transformers ApertusForCausalLM",
  configFields: {
    // Any other hidden_act has no xIELU scalars; llama.cpp's apertus always applies xIELU.
    assumed: [activation("hidden_act", ["xielu"])],
  },
  hfArchitectures: ["ApertusForCausalLM"],
  hfModelTypes: ["apertus"],
  ggufArchitecture: "apertus",
  ggufRopeType: "neox",
  blockNames: LLAMA_BLOCK.map(([gguf, hf]) =>
    gguf === "attn_norm"
      ? ["attn_norm", "attention_layernorm"] as const
      : gguf === "ffn_norm"
      ? ["ffn_norm", "feedforward_layernorm"] as const
      : [gguf, hf] as const
  ).filter(([gguf]) => gguf !== "ffn_gate"),
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { ...LLAMA_GGUF, writeKv: writeLlamaKv, tensorKeys: XIELU_KEYS, nvfp4Scales: false },
  ggufReadBackRefusal:
    "aprkit does not read an Apertus GGUF back into Hugging Face's layout (its xIELU scalars are the keys xielu.*, not the checkpoint's mlp.act_fn tensors); --keep-names keeps its GGUF tensors",
};
