// This module is browser compatible.

/**
 * nomic-bert sentence embedders as transformers has them (`NomicBertModel`:
 * nomic-embed-text's architecture): BERT's post-norm encoder with RoPE
 * instead of position embeddings and a SwiGLU feed-forward. APR output
 * keeps Hugging Face's tensors and records the sentence-transformers
 * pooling; GGUF output is refused (see {@linkcode CONVERTER_READS_REMOTE_CODE}).
 *
 * @module
 */

import type { ConfigFields } from "../config_fields.ts";
import type { Family } from "../family.ts";
import { BERT_FIELDS } from "./bert.ts";

/**
 * Why aprkit writes no nomic-bert GGUF: llama.cpp's converter
 * (`NomicBertModel.__init__`, conversion/bert.py) reads the fields of
 * nomic-ai's remote-code config (`n_positions`, `max_trained_positions`,
 * `activation_function`, `qkv_proj_bias`, `prenorm`, `rotary_emb_*`) and
 * transformers' `NomicBertConfig` has none of them (it saves the tensors
 * under the remote code's names, though), so the converter converts no
 * model transformers saves (measured: `KeyError: 'n_positions'`,
 * tests/testdata/embeddings/llama.cpp/nomic-embed-converter.json) and there is no
 * file of it to be equal to. A folder with the remote-code config (the
 * published nomic-embed-text), which the converter does convert, is refused
 * too: aprkit does not read that config's fields yet.
 */
export const CONVERTER_READS_REMOTE_CODE =
  "llama.cpp's converter reads nomic-ai's remote-code config (n_positions, " +
  "max_trained_positions, prenorm, rotary_emb_*), which transformers' NomicBertConfig has " +
  "not, so it converts no NomicBertModel transformers saves, and aprkit writes no nomic-bert " +
  "GGUF (nor from that remote-code config); convert to APR or SafeTensors instead";

/**
 * NomicBertConfig's fields beyond BERT's: the head size and the RoPE base
 * (`rope_parameters`, common) would be written; a SwiGLU feed-forward.
 */
const NOMIC_BERT_FIELDS: ConfigFields = {
  ...BERT_FIELDS,
  written: [...BERT_FIELDS.written ?? [], "head_dim"],
  assumed: [
    { field: "hidden_act", hfDefault: "silu", llamaCpp: "silu" },
    ...(BERT_FIELDS.assumed ?? []).filter((a) => a.field !== "hidden_act"),
  ],
};

/** nomic-bert. */
export const NOMIC_BERT: Family = {
  configFields: NOMIC_BERT_FIELDS,
  name: "nomic-bert",
  source: "llama.cpp conversion/bert.py NomicBertModel; transformers NomicBertModel",
  hfArchitectures: ["NomicBertModel"],
  hfModelTypes: ["nomic_bert"],
  ggufArchitecture: "nomic-bert",
  // llama_model_rope_type() lists NOMIC_BERT as NEOX.
  ggufRopeType: "neox",
  // transformers saves NomicBertModel under nomic-ai's remote-code names, which the converter reads.
  hfBlockPrefix: "encoder.layers",
  blockNames: [
    ["attn_qkv", "attn.Wqkv"],
    ["attn_output", "attn.out_proj"],
    ["attn_output_norm", "norm1"],
    ["ffn_up", "mlp.fc11"],
    ["ffn_gate", "mlp.fc12"],
    ["ffn_down", "mlp.fc2"],
    ["layer_output_norm", "norm2"],
  ],
  globalNames: [
    ["token_embd", "embeddings.word_embeddings"],
    ["token_types", "embeddings.token_type_embeddings"],
    ["token_embd_norm", "emb_ln"],
  ],
  permutesQk: false,
  tiedByDefault: true,
  ggufRenamesOnly: false,
  ggufNamesKept: true,
  ggufRefusal: CONVERTER_READS_REMOTE_CODE,
};
