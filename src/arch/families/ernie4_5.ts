// This module is browser compatible.

/**
 * ERNIE 4.5 (`Ernie4_5ForCausalLM`, `Ernie4_5_ForCausalLM`: ERNIE-4.5-0.3B), after llama.cpp's
 * `Ernie4_5Model` (conversion/ernie.py), GGUF architecture `ernie4_5`:
 * llama block names and the common keys only. transformers rotates adjacent
 * pairs of Q/K (its `rotate_half` takes the even and odd dims), as llama.cpp's
 * NORM RoPE does, so nothing is permuted. Embeddings are tied by default.
 *
 * An `ernie.` prefix is read as `model.`, as the converter does. The
 * converter also splits PaddlePaddle's fused `qkv_proj` / `up_gate_proj`;
 * aprkit does not, and refuses them (no GGUF name).
 *
 * @module
 */

import { type Family, LLAMA_BLOCK, type SentencePieceFacts } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";

/**
 * What of an ERNIE 4.5 config llama.cpp would run otherwise than
 * transformers, or `undefined`.
 */
export function ernieUnsupported(w: KvWriter): string | undefined {
  // src/models/ernie4-5*.cpp pass no feed-forward or output-projection bias to the graph.
  if (w.hparams["use_bias"] === true) {
    return "its config.json has use_bias true: llama.cpp's ernie4_5 graph adds no " +
      "feed-forward or output-projection biases (false is transformers' default)";
  }
  return undefined;
}

/** `Ernie4_5Model.filter_tensors`: every `ernie.` is read as `model.`. */
export function ernieHfName(name: string): string {
  return name.replaceAll("ernie.", "model.");
}

/**
 * `Ernie4_5Model.set_vocab`: `add_space_prefix` is written whenever
 * `tokenizer_config.json` has `add_prefix_space`, `null` as false.
 */
export const ERNIE_SENTENCEPIECE: SentencePieceFacts = { addSpacePrefixWhenConfigured: true };

/** ERNIE 4.5 dense. */
export const ERNIE4_5: Family = {
  name: "ernie4_5",
  source: "llama.cpp conversion/ernie.py Ernie4_5Model; transformers Ernie4_5ForCausalLM",
  configFields: { checked: ["use_bias"], assumed: [activation("hidden_act", SILU)] },
  // transformers' class first: what a GGUF read back is named.
  hfArchitectures: ["Ernie4_5ForCausalLM", "Ernie4_5_ForCausalLM"],
  hfModelTypes: ["ernie4_5"],
  ggufArchitecture: "ernie4_5",
  ggufRopeType: "norm",
  blockNames: LLAMA_BLOCK,
  permutesQk: false,
  hfRopeInterleaved: true,
  tiedByDefault: true,
  ggufRenamesOnly: true,
  gguf: { writeKv: writeTextModelKv, unsupported: ernieUnsupported, hfName: ernieHfName },
  sentencePiece: ERNIE_SENTENCEPIECE,
};
