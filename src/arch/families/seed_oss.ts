// This module is browser compatible.

/**
 * Seed-OSS (`SeedOssForCausalLM`), after llama.cpp's `SeedOssModel`
 * (conversion/olmo.py, a plain `TextModel`): the common keys (a head size of
 * its own as `attention.key_length`), llama block names with Q/K/V biases,
 * NEOX RoPE; gguf-py names the norm before the feed-forward,
 * `post_attention_layernorm`, `post_attention_norm` for `seed_oss`. llama.cpp
 * loads no output-projection or MLP bias, and passes no RoPE frequency
 * factors: a config with them is refused for GGUF.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";

function unsupported(w: KvWriter): string | undefined {
  const why = (what: string) =>
    `its config.json says ${what}; llama.cpp's seed_oss reads no such tensor or key and would ` +
    `not run it as transformers does (APR and SafeTensors output keep it)`;
  for (const key of ["attention_out_bias", "mlp_bias"]) {
    if (w.hparams[key] === true) return why(`${key} true`);
  }
  const ropeType = w.fullRope["rope_type"];
  if (ropeType === "llama3" || ropeType === "longrope") {
    return why(`rope_type ${ropeType} (frequency factors)`);
  }
  return undefined;
}

/** Seed-OSS. */
export const SEED_OSS: Family = {
  name: "seed_oss",
  source: "llama.cpp conversion/olmo.py SeedOssModel; transformers SeedOssForCausalLM",
  configFields: {
    checked: ["attention_out_bias", "mlp_bias"],
    assumed: [activation("hidden_act", SILU)],
  },
  hfArchitectures: ["SeedOssForCausalLM"],
  hfModelTypes: ["seed_oss"],
  ggufArchitecture: "seed_oss",
  ggufRopeType: "neox",
  blockNames: LLAMA_BLOCK.map(([gguf, hf]) =>
    gguf === "ffn_norm" ? ["post_attention_norm", hf] as const : [gguf, hf] as const
  ),
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: true,
  gguf: { writeKv: writeTextModelKv, unsupported },
};
