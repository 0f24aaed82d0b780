// This module is browser compatible.

/**
 * Sampling defaults from `generation_config.json`, as gguf-py's `Metadata`
 * (the llama.cpp node-llama-cpp 3.22.1 bundles) reads them for the
 * `general.sampling.*` GGUF keys: `sequence`, `top_k`, `top_p`, `min_p`,
 * `xtc_probability`, `xtc_threshold`, `temperature` (→ `temp`),
 * `penalty_last_n`, `penalty_repeat` (else `repetition_penalty`),
 * `mirostat`, `mirostat_tau`, `mirostat_eta`. Kept in APR as the custom key
 * `sampling` (GGUF's suffixes → values), in the converter's order.
 *
 * Here, below the formats: the SafeTensors reader reads them into APR
 * metadata and the GGUF metadata writer types them, and no format imports
 * another.
 *
 * @module
 */

/** GGUF suffix, the generation_config keys read for it (first present wins), and its type. */
const SAMPLING_FIELDS:
  readonly (readonly [string, readonly string[], "string" | "int" | "float"])[] = [
    ["sequence", ["sequence"], "string"],
    ["top_k", ["top_k"], "int"],
    ["top_p", ["top_p"], "float"],
    ["min_p", ["min_p"], "float"],
    ["xtc_probability", ["xtc_probability"], "float"],
    ["xtc_threshold", ["xtc_threshold"], "float"],
    ["temp", ["temperature"], "float"],
    ["penalty_last_n", ["penalty_last_n"], "int"],
    ["penalty_repeat", ["penalty_repeat", "repetition_penalty"], "float"],
    ["mirostat", ["mirostat"], "int"],
    ["mirostat_tau", ["mirostat_tau"], "float"],
    ["mirostat_eta", ["mirostat_eta"], "float"],
  ];

/** Each sampling field's kind, by GGUF suffix. */
export const SAMPLING_TYPES: ReadonlyMap<string, "string" | "int" | "float"> = new Map(
  SAMPLING_FIELDS.map(([suffix, , type]) => [suffix, type]),
);

/**
 * The sampling defaults of a `generation_config.json`; values of the wrong
 * type (or out of INT32 range) are left out.
 *
 * @example Usage
 * ```ts
 * import { samplingFromGenerationConfig } from "./hf_sampling.ts";
 * const s = samplingFromGenerationConfig({ temperature: 0.6, top_k: 20, repetition_penalty: 1.05 });
 * console.assert(JSON.stringify(s) === '{"top_k":20,"temp":0.6,"penalty_repeat":1.05}');
 * ```
 *
 * @param generation The parsed `generation_config.json`.
 * @returns GGUF suffix → value, in the converter's order; empty when none.
 */
export function samplingFromGenerationConfig(
  generation: Record<string, unknown>,
): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (const [suffix, keys, type] of SAMPLING_FIELDS) {
    const key = keys.find((k) => generation[k] !== undefined && generation[k] !== null);
    if (key === undefined) continue;
    const v = generation[key];
    if (type === "string" ? typeof v === "string" : typeof v === "number" && Number.isFinite(v)) {
      if (type === "int" && !(Number.isInteger(v) && Math.abs(v as number) <= 0x7fffffff)) continue;
      out[suffix] = v as string | number;
    }
  }
  return out;
}
