// This module is browser compatible.

/**
 * Qwen3-VL-MoE's language model (`Qwen3VLMoeForConditionalGeneration`),
 * after llama.cpp's `Qwen3VLMoeTextModel` (conversion/qwen3vl.py, a
 * `Qwen3MoeModel`): Qwen3-MoE's block (Q/K norms, experts stacked into
 * `ffn_{down,gate,up}_exps`, the router `ffn_gate_inp`, no shared expert)
 * under GGUF architecture `qwen3vlmoe`, with Qwen3-VL's multi-axis RoPE
 * sections and `n_deepstack_layers` (`qwen3vl.ts`). Its checkpoints keep the
 * experts packed and each expert's matrix transposed (`gate_up_proj`
 * `[experts, hidden, 2 × ff]`, `down_proj` `[experts, ff, hidden]`), which the
 * converter transposes back; transformers 5's own layout is Qwen3-MoE's
 * (`[experts, 2 × ff, hidden]`, `[experts, hidden, ff]`). The two are told
 * apart by shape, which fails only when `2 × ff` (or `ff`) equals the hidden
 * size.
 *
 * @module
 */

import type { ExpertLayout, Family } from "../family.ts";
import { EVERY_LAYER_MOE, QWEN_MOE_EXPERTS, writeQwenMoeKv } from "./qwen2moe.ts";
import { QWEN3MOE } from "./qwen3moe.ts";
import { writeDeepstackKv } from "./qwen3vl.ts";
import { activation, SILU } from "../config_fields.ts";

/** Whether a packed expert tensor has the Hub's `[in, out]` matrices. */
function transposedStack(
  piece: string,
  shape: readonly number[],
  hidden: number,
): boolean | undefined {
  const [, rows, cols] = shape;
  // gate_up_proj takes the hidden state in; down_proj gives it out.
  const hubIn = piece === "gate_up_proj" ? rows : cols;
  const ownIn = piece === "gate_up_proj" ? cols : rows;
  const hub = hubIn === hidden;
  const own = ownIn === hidden;
  return hub === own ? undefined : hub;
}

const EXPERTS: ExpertLayout = { ...QWEN_MOE_EXPERTS, transposedStack };

/** Qwen3-VL-30B-A3B, Qwen3-VL-235B-A22B. */
export const QWEN3VLMOE: Family = {
  ...QWEN3MOE,
  name: "qwen3vlmoe",
  source:
    "llama.cpp conversion/qwen3vl.py Qwen3VLMoeTextModel; transformers Qwen3VLMoeForConditionalGeneration",
  configFields: {
    written: ["moe_intermediate_size"],
    // transformers' Qwen3-VL-MoE always normalises, as llama.cpp does.
    assumed: [activation("hidden_act", SILU), ...EVERY_LAYER_MOE],
  },
  hfArchitectures: [],
  hfModelTypes: ["qwen3_vl_moe"],
  ggufArchitecture: "qwen3vlmoe",
  ggufRopeType: "imrope",
  experts: EXPERTS,
  gguf: {
    writeKv(w) {
      writeQwenMoeKv(w);
      writeDeepstackKv(w);
    },
  },
};
