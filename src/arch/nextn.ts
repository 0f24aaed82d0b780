// This module is browser compatible.

/**
 * Multi-token-prediction layers as llama.cpp's converter appends them after
 * the trunk (GLM-4.5's layout, which DeepSeek-V3.2, GLM-5, Qwen3.5, K-EXAONE
 * and Hy3 share): their own tensors' names and their count. A module of no
 * family, so that families importing one another can all read it.
 *
 * @module
 */

/** The multi-token-prediction layers' own tensors (GLM-4.7-Flash's, DeepSeek-V3.2's and GLM-5's too). */
export const NEXTN_BLOCK: readonly (readonly [string, string])[] = [
  ["nextn.eh_proj", "eh_proj"],
  ["nextn.embed_tokens", "embed_tokens"],
  ["nextn.enorm", "enorm"],
  ["nextn.hnorm", "hnorm"],
  ["nextn.shared_head_head", "shared_head.head"],
  ["nextn.shared_head_norm", "shared_head.norm"],
];

/** The multi-token-prediction layers the converter appends (`num_nextn_predict_layers`). */
export function nextnLayers(hparams: Readonly<Record<string, unknown>>): number {
  const n = hparams["num_nextn_predict_layers"];
  return typeof n === "number" ? n : 0;
}
