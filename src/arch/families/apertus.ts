// This module is browser compatible.

/**
 * Apertus (`ApertusForCausalLM`), after llama.cpp's `ApertusModel`
 * (conversion/llama.py): a `LlamaModel` without the Q/K permutation (NEOX
 * RoPE), llama's keys and `rope_freqs` for Llama 3's RoPE (as published),
 * per-head Q/K RMSNorms, norms named `attention_layernorm` and
 * `feedforward_layernorm`, and a feed-forward of up, xIELU, down (no gate).
 * xIELU's per-layer scalars (`mlp.act_fn.alpha_p`, `alpha_n`, `beta`, `eps`)
 * are written as the arrays `xielu.*`, not as tensors, each added as its last
 * layer's value comes (`modify_tensors`), so after `general.architecture`;
 * a GGUF read back gets them again as tensors.
 *
 * @module
 */

import { type Family, type KeyTensor, LLAMA_BLOCK, type TensorKeys } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { activation } from "../config_fields.ts";
import { LLAMA_GGUF, writeLlamaKv } from "./llama.ts";

/** xIELU's scalars, in the checkpoint's order. */
const XIELU_KINDS = ["alpha_n", "alpha_p", "beta", "eps"] as const;

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
  for (const kind of XIELU_KINDS) {
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

/**
 * The scalars again from the keys, per layer in the checkpoint's order and
 * shapes (transformers' `XIELUActivation`: `alpha_p`, `alpha_n` of one value,
 * `beta`, `eps` 0-D); a key may be one number for every layer, as llama.cpp
 * reads it (`get_key_or_arr`).
 */
function xieluTensors(kv: (key: string) => unknown): KeyTensor[] {
  const layers = kv("apertus.block_count");
  if (typeof layers !== "number" || !Number.isSafeInteger(layers) || layers < 0) {
    throw new RangeError("Cannot read the xIELU scalars back: the GGUF has no apertus.block_count");
  }
  const arrays = new Map(XIELU_KINDS.map((kind) => {
    const v = kv(`xielu.${kind}`);
    const values = typeof v === "number" ? Array<number>(layers).fill(v) : v;
    if (
      !Array.isArray(values) || values.length !== layers ||
      !values.every((x) => typeof x === "number")
    ) {
      throw new RangeError(
        `Cannot read the xIELU scalars back: the GGUF's xielu.${kind} is not ${layers} numbers`,
      );
    }
    return [kind, values as number[]];
  }));
  return Array.from({ length: layers }, (_, layer) =>
    XIELU_KINDS.map((kind) => ({
      name: `model.layers.${layer}.mlp.act_fn.${kind}`,
      shape: kind.startsWith("alpha") ? [1] : [],
      values: [arrays.get(kind)![layer]!],
    }))).flat();
}

/** The xIELU scalars, read into keys and back. */
const XIELU_KEYS: TensorKeys = {
  reads: (name) => XIELU.test(name),
  write: writeXieluKeys,
  back: xieluTensors,
};

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
};
