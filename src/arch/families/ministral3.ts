// This module is browser compatible.

/**
 * Ministral 3 (`Ministral3ForCausalLM`, `model_type` `ministral3`), after
 * llama.cpp's `Mistral3Model.Ministral3Model` (conversion/mistral3.py): the
 * Mistral 3 language model's `LlamaModel` keys and tensors under GGUF
 * architecture `mistral3`, plus what its YaRN adds: `mscale_all_dim` as
 * `rope.scaling.yarn_log_multiplier` and `llama_4_scaling_beta` as
 * `attention.temperature_scale` (queries scaled by
 * `1 + β·ln(1 + ⌊pos / original context⌋)`, which llama.cpp's `mistral3`
 * graph applies with the original context as its floor scale).
 *
 * llama.cpp computes YaRN's attention factor as `mscale(1) /
 * mscale(mscale_all_dim)`, reading no `mscale` (src/llama-context.cpp), and
 * ignores `attention_factor` under YaRN: a config for which transformers'
 * factor differs is refused for GGUF, as is one without YaRN (the converter
 * asserts it; transformers needs `llama_4_scaling_beta`).
 *
 * A GGUF holds no class of its own (`general.architecture` `mistral3`): read
 * back, it is Mistral 3's language model, as OLMo 3's is OLMo 2's.
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeLlamaKv } from "./llama.ts";
import { MISTRAL3 } from "./mistral3.ts";

/** YaRN's `get_mscale` (transformers and llama.cpp alike). */
function mscale(factor: number, m: number): number {
  return factor <= 1 ? 1 : 0.1 * m * Math.log(factor) + 1;
}

/** `Ministral3Model.set_gguf_parameters`. */
function writeKv(w: KvWriter): void {
  writeLlamaKv(w);
  w.f32("rope.scaling.yarn_log_multiplier", w.fullRope["mscale_all_dim"]);
  w.f32("attention.temperature_scale", w.fullRope["llama_4_scaling_beta"]);
}

function unsupported(w: KvWriter): string | undefined {
  const rope = w.fullRope;
  const type = rope["rope_type"] ?? rope["type"];
  if (type !== "yarn" || typeof rope["llama_4_scaling_beta"] !== "number") {
    return `its config.json has rope_parameters without YaRN and llama_4_scaling_beta ` +
      `(rope_type ${JSON.stringify(type)}): Ministral 3's attention needs both, and llama.cpp's ` +
      `converter writes mistral3 only with them`;
  }
  const factor = typeof rope["factor"] === "number" ? rope["factor"] : 1;
  const m = rope["mscale"];
  const all = rope["mscale_all_dim"];
  if (rope["attention_factor"] != null) {
    return `its config.json has YaRN attention_factor ${rope["attention_factor"]}; llama.cpp's ` +
      `mistral3 reads no key for it and computes the factor from mscale_all_dim`;
  }
  // transformers: mscale(m)/mscale(all) when both are set, else mscale(1);
  // llama.cpp: mscale(1)/mscale(all) when all is set (non-zero), else mscale(1).
  const hf = m && all
    ? mscale(factor, m as number) / mscale(factor, all as number)
    : mscale(factor, 1);
  const cpp = all ? mscale(factor, 1) / mscale(factor, all as number) : mscale(factor, 1);
  if (Math.abs(hf - cpp) > 1e-6) {
    return `its config.json has YaRN mscale ${JSON.stringify(m ?? null)} with mscale_all_dim ` +
      `${JSON.stringify(all ?? null)}; llama.cpp's mistral3 reads no key for mscale and computes ` +
      `as with 1`;
  }
  return undefined;
}

/** Ministral 3. */
export const MINISTRAL3: Family = {
  ...MISTRAL3,
  name: "ministral3",
  source: "llama.cpp conversion/mistral3.py Ministral3Model; transformers Ministral3ForCausalLM",
  configFields: MISTRAL3.configFields,
  hfArchitectures: ["Ministral3ForCausalLM"],
  hfModelTypes: ["ministral3"],
  gguf: { ...MISTRAL3.gguf!, writeKv, unsupported },
};
