// This module is browser compatible.

/**
 * EuroBERT sentence embedders (`EuroBertModel`, transformers' own class),
 * after llama.cpp's `EuroBertModel` (conversion/bert.py, GGUF `eurobert`):
 * a Llama block (RMSNorm, NEOX RoPE, grouped KV heads, SwiGLU) with
 * bidirectional attention and a final norm, written with the common keys,
 * `attention.causal` false, `rope.scaling.type` none and the
 * sentence-transformers pooling. The base model's tensors carry no `model.`
 * prefix (the converter drops one where a head class has it).
 *
 * @module
 */

import { activation, type ConfigFields, SILU } from "../config_fields.ts";
import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { headlessHfName, writePoolingType } from "../pooling.ts";
import { writeTextModelKv } from "../text_model.ts";

/** `EuroBertModel.set_gguf_parameters`: the common keys, non-causal, unscaled RoPE, the pooling. */
function writeEuroBertKv(w: KvWriter): void {
  writeTextModelKv(w);
  w.set("attention.causal", "BOOL", false);
  w.set("rope.scaling.type", "STRING", "none");
  writePoolingType(w);
  // `set_vocab` writes add_bos_token false before the vocabulary, after the quantization version
  // (which `prepare_metadata` writes first); the tokenizer's own value (from its template) then
  // replaces it where it stands.
  w.set("general.quantization_version", "UINT32", 2);
  w.set("tokenizer.ggml.add_bos_token", "BOOL", false);
}

/**
 * What llama.cpp's eurobert graph cannot run as transformers does: the
 * converter writes `rope.scaling.type` none over whatever scaling the
 * config names.
 */
function unsupported(w: KvWriter): string | undefined {
  const type = w.fullRope["rope_type"];
  if (type !== undefined && type !== "default") {
    return `rope_type ${JSON.stringify(type)} (the converter writes rope.scaling.type "none" ` +
      `for eurobert; only unscaled RoPE is supported)`;
  }
  return undefined;
}

/**
 * EuroBertConfig's fields beyond the common ones: SiLU, no biases
 * (llama.cpp's graph adds none), and the classifier's and masked-LM's
 * fields, which a headless embedder does not use.
 */
const EUROBERT_FIELDS: ConfigFields = {
  checked: ["rope_parameters"],
  assumed: [
    activation("hidden_act", SILU),
    { field: "attention_bias", hfDefault: false, llamaCpp: false },
    { field: "mlp_bias", hfDefault: false, llamaCpp: false },
  ],
  irrelevant: {
    classifier_pooling: "the classification head's pooling (the embedder's is modules.json's)",
    mask_token_id: "the vocabulary's special tokens, written from the tokenizer files",
  },
};

/** EuroBERT. */
export const EUROBERT: Family = {
  configFields: EUROBERT_FIELDS,
  name: "eurobert",
  source: "llama.cpp conversion/bert.py EuroBertModel; transformers EuroBertModel",
  hfArchitectures: ["EuroBertModel"],
  hfModelTypes: ["eurobert"],
  ggufArchitecture: "eurobert",
  // llama_model_rope_type() lists EUROBERT as NEOX; transformers rotates halves (rotate_half).
  ggufRopeType: "neox",
  blockNames: LLAMA_BLOCK,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv: writeEuroBertKv, unsupported, hfName: headlessHfName },
};
