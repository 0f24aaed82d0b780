// This module is browser compatible.

/**
 * Granite 3.x (`GraniteForCausalLM`), after llama.cpp's `GraniteModel`
 * (conversion/granite.py, a `LlamaModel`): Q/K permuted, `head_dim`
 * ignored, and the four multipliers written as `attention.scale`,
 * `embedding_scale`, `residual_scale` and `logit_scale`.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { LLAMA_SENTENCEPIECE, writeLlamaKv } from "./llama.ts";
import { activation, SILU } from "../config_fields.ts";

/**
 * `GraniteModel.set_gguf_parameters` (also Granite MoE's): llama's keys
 * without `head_dim`, then the four multipliers.
 *
 * @param w The writer, over the model's `config.json`.
 */
export function writeGraniteKv(w: KvWriter): void {
  // The converter pops head_dim before the common keys.
  const { head_dim: _ignored, ...rest } = w.hparams;
  w.writeOver(rest, writeLlamaKv);
  // Python's truthiness: a zero multiplier is not written.
  const truthy = (v: unknown) => typeof v === "number" && v !== 0 ? v : undefined;
  w.f32("attention.scale", truthy(w.hparams["attention_multiplier"]));
  w.f32("embedding_scale", truthy(w.hparams["embedding_multiplier"]));
  w.f32("residual_scale", truthy(w.hparams["residual_multiplier"]));
  w.f32("logit_scale", truthy(w.hparams["logits_scaling"]));
}

/** The config fields of the four multipliers (written by {@linkcode writeGraniteKv}). */
export const GRANITE_MULTIPLIERS: readonly string[] = [
  "attention_multiplier",
  "embedding_multiplier",
  "logits_scaling",
  "residual_multiplier",
];

/** IBM Granite 3.x dense models. */
export const GRANITE: Family = {
  name: "granite",
  source: "llama.cpp conversion/granite.py GraniteModel; transformers GraniteForCausalLM",
  configFields: {
    written: GRANITE_MULTIPLIERS,
    assumed: [activation("hidden_act", SILU)],
  },
  hfArchitectures: ["GraniteForCausalLM"],
  hfModelTypes: ["granite"],
  ggufArchitecture: "granite",
  ggufRopeType: "norm",
  blockNames: LLAMA_BLOCK,
  permutesQk: true,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv: writeGraniteKv, llamaKeys: true },
  sentencePiece: LLAMA_SENTENCEPIECE,
};
