// This module is browser compatible.

/**
 * Llama 4's language model (`Llama4ForConditionalGeneration`'s, and
 * `Llama4ForCausalLM`), after llama.cpp's `Llama4Model` (conversion/llama.py,
 * a `LlamaModel` that does not permute Q/K: transformers rotates Llama 4's
 * adjacent pairs, as llama.cpp's NORM RoPE does). Dense layers
 * (`feed_forward.{gate,up,down}_proj`, `intermediate_size_mlp` wide) alternate
 * with MoE layers every `interleave_moe_layer_step`: a router, a shared
 * expert and the experts, which the checkpoint stores stacked and transposed
 * (`experts.gate_up_proj` `[experts, hidden, 2 × ff]`, `experts.down_proj`
 * `[experts, ff, hidden]`); the converter splits and transposes them into
 * `ffn_{gate,up,down}_exps`.
 *
 * llama.cpp's `llama4` reads no key for the rest of Llama 4's attention and
 * assumes the published models' (src/models/llama4.cpp): NoPE every fourth
 * layer, chunked attention of 8192 on the others, attention temperature
 * tuning (floor 8192, scale 0.1) on the NoPE layers, the QK L2 norm unless
 * the model has 128 experts. A config that differs would run wrong there, so
 * its GGUF is refused, naming the field.
 *
 * @module
 */

import { type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { llama3RopeFreqs } from "../rope_factors.ts";
import { writeLlamaKv } from "./llama.ts";
import { activation, SILU } from "../config_fields.ts";

/** `Llama4Model.set_gguf_parameters` (its `intermediate_size` is the dense one). */
function writeLlama4Kv(w: KvWriter): void {
  writeLlamaKv(w);
  w.u32("feed_forward_length", w.need("intermediate_size_mlp"));
  w.u32("interleave_moe_layer_step", w.need("interleave_moe_layer_step"));
  w.u32("expert_feed_forward_length", w.need("intermediate_size"));
  if (allFullAttention(w)) w.u32("attention.sliding_window", 0);
}

function allFullAttention(w: KvWriter): boolean {
  const types = w.hparams["layer_types"];
  return Array.isArray(types) && types.every((t) => t === "full_attention");
}

/**
 * What of a config llama.cpp's `llama4` would run otherwise than transformers,
 * field by field, or `undefined`.
 */
function llamaCppMismatch(w: KvWriter): string | undefined {
  const layers = w.need("num_hidden_layers");
  const experts = w.need("num_local_experts");
  if (experts <= 0) return `num_local_experts is ${experts}`;
  const step = w.need("interleave_moe_layer_step");
  const list = (values: readonly unknown[]) => `[${values.join(", ")}]`;
  const moe = w.hparams["moe_layers"];
  const wantMoe = range(layers).filter((i) => step > 0 && (i + 1) % step === 0);
  if (Array.isArray(moe) && list(moe) !== list(wantMoe)) {
    return `moe_layers ${list(moe)} are not every ${step}th layer (${list(wantMoe)})`;
  }
  // llama.cpp: RoPE unless (layer + 1) % 4 == 0, or % layers when all attention is full.
  const full = allFullAttention(w);
  const ropeStep = full ? layers : 4;
  const interval = w.num("no_rope_layer_interval") ?? 4;
  const noRope = w.hparams["no_rope_layers"];
  const uses = Array.isArray(noRope)
    ? noRope.map((v) => v !== 0)
    : range(layers).map((i) => (i + 1) % interval !== 0);
  const want = range(layers).map((i) => (i + 1) % ropeStep !== 0);
  if (uses.join() !== want.join()) {
    return `no_rope_layers ${list(uses.map(Number))} are not llama.cpp's ${list(want.map(Number))}`;
  }
  if (!full) {
    const chunk = w.num("attention_chunk_size") ?? 8192;
    if (chunk !== 8192) return `attention_chunk_size is ${chunk}, not llama.cpp's 8192`;
    const types = w.hparams["layer_types"];
    if (Array.isArray(types) && types.some((t, i) => (t === "chunked_attention") !== want[i])) {
      return `layer_types ${list(types)} chunk other layers than llama.cpp's (those with RoPE)`;
    }
    if (w.hparams["attn_temperature_tuning"] === false) {
      return "attn_temperature_tuning is false (llama.cpp tunes it on the NoPE layers)";
    }
    const floor = w.num("floor_scale") ?? 8192;
    const scale = w.num("attn_scale") ?? 0.1;
    if (floor !== 8192 || scale !== 0.1) {
      return `floor_scale ${floor} and attn_scale ${scale} are not llama.cpp's 8192 and 0.1`;
    }
  }
  const qkNorm = w.hparams["use_qk_norm"] !== false;
  if (qkNorm !== (experts !== 128)) {
    return `use_qk_norm is ${qkNorm} with ${experts} experts (llama.cpp: true unless 128)`;
  }
  return undefined;
}

/** {@linkcode llamaCppMismatch} as the refusal's reason. */
function unsupported(w: KvWriter): string | undefined {
  const mismatch = llamaCppMismatch(w);
  return mismatch === undefined
    ? undefined
    : `its config.json says ${mismatch}; llama.cpp's llama4 reads no key for that and would ` +
      `run it otherwise than transformers (APR and SafeTensors output keep it)`;
}

function range(n: number): number[] {
  return Array.from({ length: Math.max(0, Math.trunc(n)) }, (_, i) => i);
}

/** Llama 4 Scout, Maverick. */
export const LLAMA4: Family = {
  name: "llama4",
  source: "llama.cpp conversion/llama.py Llama4Model; transformers Llama4ForCausalLM",
  configFields: {
    written: ["intermediate_size_mlp", "interleave_moe_layer_step"],
    checked: [
      "moe_layers",
      "no_rope_layers",
      "no_rope_layer_interval",
      "attention_chunk_size",
      "layer_types",
      "attn_temperature_tuning",
      "floor_scale",
      "attn_scale",
      "use_qk_norm",
    ],
    assumed: [activation("hidden_act", SILU)],
  },
  hfArchitectures: ["Llama4ForCausalLM"],
  hfModelTypes: ["llama4_text", "llama4"],
  ggufArchitecture: "llama4",
  ggufRopeType: "norm",
  blockNames: [
    ...LLAMA_BLOCK.filter(([, hf]) => !hf.startsWith("mlp.")),
    ["ffn_gate", "feed_forward.gate_proj"],
    ["ffn_up", "feed_forward.up_proj"],
    ["ffn_down", "feed_forward.down_proj"],
    ["ffn_gate_inp", "feed_forward.router"],
    ["ffn_gate_shexp", "feed_forward.shared_expert.gate_proj"],
    ["ffn_up_shexp", "feed_forward.shared_expert.up_proj"],
    ["ffn_down_shexp", "feed_forward.shared_expert.down_proj"],
  ],
  experts: {
    prefix: "feed_forward.experts",
    stacks: [],
    stacked: [
      ["gate_up_proj", ["ffn_gate_exps", "ffn_up_exps"]],
      ["down_proj", ["ffn_down_exps"]],
    ],
    transposedStack: () => true,
  },
  permutesQk: false,
  hfRopeInterleaved: true,
  hfWidthKeys: {
    intermediate_size: "intermediate_size_mlp",
    moe_intermediate_size: "intermediate_size",
  },
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: { writeKv: writeLlama4Kv, llamaKeys: true, generate: llama3RopeFreqs, unsupported },
  // The converter names meta-llama/Llama-4-Scout-17B-16E-Instruct's tokenizer llama4 by its hash.
  preTokenizer: "llama4",
};
