// This module is browser compatible.

/**
 * The router's selection bias (`e_score_correction_bias`, DeepSeek-V3's
 * `noaux_tc` bias) as a name the block table can map: it has no
 * `.weight`/`.bias` suffix, so it is read as `…e_score_correction.bias`
 * (→ `exp_probs_b.bias`, the converter's FFN_EXP_PROBS_B) and named back on
 * the way from GGUF. A family whose bias sits under another module than
 * `mlp.gate` (ERNIE 4.5's `mlp.moe_statics`, MiniMax-M2's
 * `block_sparse_moe`) maps it with a block name and these two.
 *
 * @module
 */

const SCORE_BIAS = "e_score_correction_bias";
const SCORE_BIAS_READ = "e_score_correction.bias";

/** `…e_score_correction_bias` as `…e_score_correction.bias`; another name as it is. */
export function scoreBiasReadName(name: string): string {
  return name.endsWith(`.${SCORE_BIAS}`)
    ? name.slice(0, -SCORE_BIAS.length) + SCORE_BIAS_READ
    : name;
}

/** The inverse of {@linkcode scoreBiasReadName}. */
export function scoreBiasHfName(name: string): string {
  return name.endsWith(`.${SCORE_BIAS_READ}`)
    ? name.slice(0, -SCORE_BIAS_READ.length) + SCORE_BIAS
    : name;
}

/** DeepSeek-V3's router bias, `mlp.gate.e_score_correction_bias`, read by name as `exp_probs_b.bias` (dots.llm1's). */
export const GATE_SCORE_BIAS: readonly [string, string] = [
  "exp_probs_b",
  "mlp.gate.e_score_correction",
];
