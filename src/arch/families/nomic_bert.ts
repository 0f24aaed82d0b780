// This module is browser compatible.

/**
 * nomic-bert sentence embedders as transformers has them (`NomicBertModel`:
 * nomic-embed-text's architecture): BERT's post-norm encoder with RoPE
 * instead of position embeddings and a SwiGLU feed-forward. APR output
 * keeps Hugging Face's tensors and records the sentence-transformers
 * pooling. GGUF output, after llama.cpp's `NomicBertModel`, is written from
 * the published form only, nomic-ai's remote-code config (`n_embd`,
 * `n_layer`, `rotary_emb_base`…, which the converter reads); transformers'
 * own config is refused (see {@linkcode CONVERTER_READS_REMOTE_CODE}), and so
 * is nomic-embed-text-v2-moe (see {@linkcode EXPERTS_BIAS_DROPPED}).
 *
 * @module
 */

import type { ConfigFields } from "../config_fields.ts";
import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { BERT_FIELDS, writeBertKv } from "./bert.ts";

/**
 * Why aprkit writes no GGUF of a `NomicBertModel` transformers saves:
 * llama.cpp's converter (`NomicBertModel.__init__`, conversion/bert.py)
 * reads the fields of nomic-ai's remote-code config (`n_positions`,
 * `max_trained_positions`, `activation_function`, `qkv_proj_bias`,
 * `prenorm`, `rotary_emb_*`) and transformers' `NomicBertConfig` has none
 * of them (it saves the tensors under the remote code's names, though), so
 * the converter converts no model transformers saves (measured: `KeyError:
 * 'n_positions'`, tests/testdata/embeddings/llama.cpp/nomic-embed-converter.json)
 * and there is no file of it to be equal to. The published form (nomic-ai's
 * config, the `nomic-embed-hub` fixture) is converted.
 */
export const CONVERTER_READS_REMOTE_CODE =
  "llama.cpp's converter reads nomic-ai's remote-code config (n_positions, " +
  "max_trained_positions, prenorm, rotary_emb_*), which transformers' NomicBertConfig has " +
  "not, so it converts no NomicBertModel transformers saves, and aprkit writes no nomic-bert " +
  "GGUF of it; convert to APR or SafeTensors instead";

/**
 * Why aprkit writes no GGUF of nomic-embed-text-v2-moe (`moe_every_n_layers`,
 * GGUF `nomic-bert-moe`): nomic-ai's MoE layer adds a learnt bias to the
 * weighted sum of its experts (`mlp.experts.bias`, `NomicExperts.forward`),
 * llama.cpp's nomic-bert-moe graph has no tensor for it (`build_moe_ffn`
 * with no down bias) and the converter drops it (`filter_tensors`). Measured
 * on `nomic-moe-embed` (its bias N(0, 0.2²) as the other weights): llama.cpp
 * embeds the converter's file at cosine 0.899 from sentence-transformers
 * (largest difference 0.23), the token ids all equal; with the bias zeroed,
 * at 0.9999997 (3.9·10⁻⁴), so the bias is all that differs.
 */
export const EXPERTS_BIAS_DROPPED =
  "moe_every_n_layers makes it nomic-embed-text-v2-moe, whose experts add a bias " +
  "(mlp.experts.bias) that llama.cpp's nomic-bert-moe has no tensor for and its converter " +
  "drops, so no GGUF of it embeds as the model does; convert to APR or SafeTensors instead";

/**
 * What the converter's `NomicBertModel.__init__` asserts of the remote-code
 * config (a model failing one is not converted), and the fields it ignores
 * that the remote code computes with and llama.cpp's nomic-bert graph
 * (LayerNorm, unscaled RoPE, sequential blocks) does not: each with the
 * value both compute the same at.
 */
const NOMIC_CHECKS: readonly (readonly [field: string, value: unknown, why: string])[] = [
  ["activation_function", "swiglu", "llama.cpp's nomic-bert feed-forward is SwiGLU"],
  ["causal", false, "the converter asserts it"],
  ["qkv_proj_bias", false, "the converter writes no biases"],
  ["mlp_fc1_bias", false, "the converter writes no biases"],
  ["mlp_fc2_bias", false, "the converter writes no biases"],
  ["prenorm", false, "llama.cpp's graph normalises after each block"],
  ["rotary_emb_fraction", 1, "llama.cpp rotates every head dimension"],
  ["rotary_emb_interleaved", false, "llama.cpp's RoPE is NeoX's, not interleaved"],
  ["rotary_emb_scale_base", null, "the converter asserts it"],
  // The remote code's dynamic NTK scaling; the converter writes no scaling key.
  ["rotary_scaling_factor", null, "the converter writes no RoPE scaling for it"],
  ["use_rms_norm", false, "llama.cpp's nomic-bert normalises with LayerNorm"],
  ["parallel_block", false, "llama.cpp's blocks are sequential"],
];

/**
 * The context the converter writes: nomic-embed-text v1/v1.5 (`n_positions`
 * 8192, trained for 2048) as 2048, v2-moe's (2048, 2048) as 512; it refuses
 * any other pair. `undefined` for such a pair.
 */
function trainedContext(h: Readonly<Record<string, unknown>>): number | undefined {
  const trained = h["max_trained_positions"] ?? 2048;
  if (h["n_positions"] === 8192 && trained === 2048) return 2048;
  if (h["n_positions"] === 2048 && trained === 2048) return 512;
  return undefined;
}

/** Why the converter would not convert this config, or llama.cpp would compute it otherwise. */
function unsupported(w: KvWriter): string | undefined {
  const h = w.hparams;
  if (!Object.hasOwn(h, "n_positions")) return CONVERTER_READS_REMOTE_CODE;
  if (h["moe_every_n_layers"]) return EXPERTS_BIAS_DROPPED;
  if (trainedContext(h) === undefined) {
    return `n_positions ${h["n_positions"]} with max_trained_positions ` +
      `${h["max_trained_positions"] ?? 2048} is neither nomic-embed-text v1/v1.5's (8192, 2048) ` +
      "nor v2's (2048, 2048), which llama.cpp's converter refuses";
  }
  for (const [field, value, why] of NOMIC_CHECKS) {
    // Absent: the remote-code config's default, the value checked (swiglu, false, 1, null).
    if (Object.hasOwn(h, field) && h[field] !== value) {
      return `${field} is ${JSON.stringify(h[field])}, not ${JSON.stringify(value)} (${why})`;
    }
  }
  return undefined;
}

/** `NomicBertModel.set_gguf_parameters`: BERT's keys, with `n_positions` cut to the trained context. */
function writeNomicBertKv(w: KvWriter): void {
  w.writeOver({ ...w.hparams, n_positions: trainedContext(w.hparams) }, writeBertKv);
}

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

/**
 * nomic-embed-text-v2-moe's layer tensors beyond v1's: its dense layers'
 * GELU MLP (`fc1`, `fc2`), its MoE layers' router, stacked experts and their
 * bias (kept in APR; its GGUF is refused).
 */
const MOE_PIECES =
  /^mlp\.(fc1|fc2)\.(weight|bias)$|^mlp\.router\.layer\.weight$|^mlp\.experts\.(mlp\.w1|mlp\.w2|bias)$/;

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
  // WordPiece (v1, v1.5); the converter writes v2-moe's Unigram as XLM-RoBERTa's t5 one (refused above).
  ggufVocabularies: ["bert"],
  hfKeptPiece: (piece, hparams) =>
    typeof hparams["moe_every_n_layers"] === "number" && MOE_PIECES.test(piece),
  gguf: { writeKv: writeNomicBertKv, unsupported },
};
