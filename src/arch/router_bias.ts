// This module is browser compatible.

/**
 * The router's selection bias (DeepSeek-V3's `noaux_tc` bias), a parameter
 * without a `.weight`/`.bias` suffix, as a name the block table can map: the
 * converter reads `…e_score_correction_bias` as `…e_score_correction.bias`
 * and AFMoE's `…expert_bias` as `…expert_bias.bias` (→ `exp_probs_b.bias`,
 * FFN_EXP_PROBS_B); a GGUF read back names them back. A family maps the
 * read name with a block name and the pair as its `hfName`/`hfNameBack`.
 *
 * @module
 */

/** The two ways between a parameter's name and the name it is read as. */
function renamer(param: string, read: string) {
  return {
    read: (name: string) => name.endsWith(`.${param}`) ? name.slice(0, -param.length) + read : name,
    back: (name: string) => name.endsWith(`.${read}`) ? name.slice(0, -read.length) + param : name,
  };
}

const SCORE_BIAS = renamer("e_score_correction_bias", "e_score_correction.bias");
const EXPERT_BIAS = renamer("expert_bias", "expert_bias.bias");

/** `…e_score_correction_bias` as `…e_score_correction.bias`; another name as it is. */
export const scoreBiasReadName: (name: string) => string = SCORE_BIAS.read;

/** The inverse of {@linkcode scoreBiasReadName}. */
export const scoreBiasHfName: (name: string) => string = SCORE_BIAS.back;

/** AFMoE's `…expert_bias` as `…expert_bias.bias`; another name as it is. */
export const expertBiasReadName: (name: string) => string = EXPERT_BIAS.read;

/** The inverse of {@linkcode expertBiasReadName}. */
export const expertBiasHfName: (name: string) => string = EXPERT_BIAS.back;

/** DeepSeek-V3's router bias, `mlp.gate.e_score_correction_bias`, read by name as `exp_probs_b.bias` (dots.llm1's). */
export const GATE_SCORE_BIAS: readonly [string, string] = [
  "exp_probs_b",
  "mlp.gate.e_score_correction",
];
