// This module is browser compatible.

/**
 * Hunyuan MoE (`HunYuanMoEV1ForCausalLM`: Hunyuan-A13B), after llama.cpp's
 * `HunYuanMoEModel` (conversion/hunyuan.py), GGUF architecture
 * `hunyuan-moe`: Hunyuan dense's attention (per-head Q/K norms after RoPE,
 * NEOX RoPE, nothing permuted; its RoPE `dynamic` with `alpha` written as a
 * fixed base, `hunyuan_dense.ts`), and on every layer a softmax router
 * (`mlp.gate.wg`) over experts stacked into `ffn_*_exps`, its top-k weights
 * normalised (as llama.cpp's graph always does), beside a shared MLP
 * (`mlp.shared_mlp.*` → `*_shexp`). transformers builds the experts and the
 * shared MLP `intermediate_size` wide; the published configs add per-layer
 * lists the converter reads the keys from (`moe_intermediate_size`,
 * `moe_topk`, `num_shared_expert`), which aprkit reads as they are or, left
 * out, as transformers builds the model.
 *
 * The vocabulary: the converter reads the published tiktoken tokenizer
 * through its remote code and always writes BOS 127959 (`<|bos|>` of the
 * published vocabulary, whatever the tokenizer files say); aprkit reads the
 * same vocabulary from `tokenizer.json`, or, without one, from `hy.tiktoken`
 * as that code lays it out (its special tokens after the ranks), and writes
 * that BOS too.
 *
 * realizar has no HunYuan model: APR output keeps the checkpoint's tensors,
 * the router and shared MLP under the names realizar's MoE loader asks for
 * (`mlp.gate`, `mlp.shared_expert.*`).
 *
 * @module
 */

import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import { activation, SILU } from "../config_fields.ts";
import { QWEN_MOE_EXPERTS } from "./qwen2moe.ts";
import { SHARED_MLP_APR_NAMES, SHARED_MLP_BLOCK } from "./hy_v3.ts";
import {
  alphaRopeRefusal,
  attentionBiasRefusal,
  HUNYUAN_DENSE,
  writeAlphaRope,
} from "./hunyuan_dense.ts";

/** The published vocabulary's `<|bos|>`, which `HunYuanMoEModel.set_vocab` always writes. */
const BOS = 127959;

/**
 * Hunyuan-A13B's `tokenization_hy.py`: `hy.tiktoken`'s ranks, then these
 * special tokens (`<|bos|>` is 127959 in the published vocabulary), and
 * Qwen2's regex.
 */
const HY_TIKTOKEN = {
  file: "hy.tiktoken",
  specials: [
    "<|endoftext|>",
    "<|startoftext|>",
    "<|bos|>",
    "<|eos|>",
    "<|pad|>",
    ...Array.from({ length: 205 }, (_, i) => `<|extra_${i}|>`),
  ],
  regex: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+" +
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};

/** A per-layer list's value (all equal, as the converter asserts), or a plain number. */
function perLayer(w: KvWriter, key: string): number | undefined {
  const v = w.hparams[key];
  return Array.isArray(v) ? (typeof v[0] === "number" ? v[0] : undefined) : w.num(key);
}

/** `HunYuanMoEModel.set_gguf_parameters`. */
function writeKv(w: KvWriter): void {
  writeTextModelKv(w);
  const ff = w.need("intermediate_size");
  w.u32("expert_shared_feed_forward_length", ff);
  w.u32("expert_feed_forward_length", perLayer(w, "moe_intermediate_size") ?? ff);
  w.u32("expert_used_count", perLayer(w, "moe_topk") ?? 1);
  w.u32("expert_shared_count", perLayer(w, "num_shared_expert") ?? 1);
  writeAlphaRope(w, Math.trunc(w.need("hidden_size") / w.need("num_attention_heads")), 1000);
}

/** What of a config llama.cpp's `hunyuan-moe` would run otherwise than transformers, or `undefined`. */
function unsupported(w: KvWriter): string | undefined {
  return attentionBiasRefusal(w) ?? alphaRopeRefusal(w) ?? a13bRopeRefusal(w) ?? moeRefusal(w);
}

/** The converter asserts Hunyuan-A13B's own dynamic RoPE: it writes its base for 128-wide heads. */
function a13bRopeRefusal(w: KvWriter): string | undefined {
  const rope = w.fullRope;
  const dim = Math.trunc(w.need("hidden_size") / w.need("num_attention_heads"));
  if (rope["rope_type"] !== "dynamic" || (rope["alpha"] === 1000 && dim === 128)) return undefined;
  return `its config.json has a dynamic RoPE with alpha ${rope["alpha"]} and hidden_size / ` +
    `num_attention_heads ${dim}; llama.cpp's converter writes it only as Hunyuan-A13B's ` +
    "(alpha 1000, 128)";
}

/** Per-layer MoE settings llama.cpp's graph cannot follow. */
function moeRefusal(w: KvWriter): string | undefined {
  for (const key of ["num_experts", "moe_topk", "moe_intermediate_size", "num_shared_expert"]) {
    const v = w.hparams[key];
    if (Array.isArray(v) && v.some((x) => x !== v[0])) {
      return `its config.json has ${key} ${JSON.stringify(v)}: llama.cpp's hunyuan-moe reads ` +
        "one value for every layer";
    }
  }
  const width = perLayer(w, "moe_intermediate_size");
  const ff = w.need("intermediate_size");
  if (width !== undefined && width !== ff) {
    return `its config.json has moe_intermediate_size ${width} and intermediate_size ${ff}: ` +
      "transformers builds the experts intermediate_size wide";
  }
  return undefined;
}

/** Hunyuan-A13B. */
export const HUNYUAN_MOE: Family = {
  name: "hunyuan-moe",
  apr: {
    rename: [["mlp.gate.wg", "mlp.gate"], ...SHARED_MLP_APR_NAMES],
  },
  source: "llama.cpp conversion/hunyuan.py HunYuanMoEModel; transformers HunYuanMoEV1ForCausalLM",
  configFields: {
    assumed: [activation("hidden_act", SILU)],
    checked: ["attention_bias"],
    written: ["moe_topk", "moe_intermediate_size", "num_shared_expert"],
    irrelevant: {
      eod_token_id: "the vocabulary's end of document, which HunYuanMoEModel does not write",
      sep_token_id: "the vocabulary's special tokens, written from the tokenizer files",
    },
    ropeTypes: ["dynamic"],
  },
  hfArchitectures: ["HunYuanMoEV1ForCausalLM"],
  hfModelTypes: ["hunyuan_v1_moe"],
  ggufArchitecture: "hunyuan-moe",
  ggufRopeType: "neox",
  blockNames: [
    ...HUNYUAN_DENSE.blockNames.filter(([gguf]) => !gguf.startsWith("ffn_") || gguf === "ffn_norm"),
    ["ffn_gate_inp", "mlp.gate.wg"],
    ...SHARED_MLP_BLOCK,
  ],
  experts: QWEN_MOE_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: { writeKv, unsupported },
  specialIdsFromConfig: () => ({ bos: BOS }),
  preTokenizer: "hunyuan",
  tiktoken: HY_TIKTOKEN,
};
