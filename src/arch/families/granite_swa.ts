// This module is browser compatible.

/**
 * Granite with interleaved sliding-window attention (`GraniteSWAForCausalLM`),
 * after llama.cpp's `GraniteSWAModel` (conversion/granite.py): Granite's
 * keys and tensors, a learnable per-head attention sink on every layer
 * (`self_attn.sinks`, which the converter names `sinks.weight` before
 * mapping it to `attn_sinks.weight`), `attention.sliding_window` and the
 * per-layer `sliding_window_pattern` from `layer_types` (else 3 sliding
 * layers of every 4, the first full).
 *
 * transformers rotates each layer with its own base (`layer_rope_theta`,
 * 0 for no RoPE); the converter writes one base and reads the per-layer
 * choice only from `no_rope_layers`, which transformers does not have, so a
 * config whose `layer_rope_theta` is not the global base on every layer is
 * refused for GGUF.
 *
 * @module
 */

import { type ExpertLayout, type Family, LLAMA_BLOCK } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { GRANITE, GRANITE_MULTIPLIERS, writeGraniteKv } from "./granite.ts";
import { writeSharedExpertWidth } from "./granitemoe.ts";
import { stackedExpertsBack } from "../split_back.ts";

/** Its experts, transformers 5's stacked ones (`gate_up_proj` kept fused in GGUF). */
const GRANITEMOE_SWA_EXPERTS: ExpertLayout = {
  prefix: "block_sparse_moe.experts",
  stacks: [],
  stacked: [["gate_up_proj", ["ffn_gate_up_exps"]], ["down_proj", ["ffn_down_exps"]]],
};

/** `GraniteSWAModel.set_gguf_parameters`. */
function writeGraniteSwaKv(w: KvWriter): void {
  writeGraniteKv(w);
  w.u32("attention.sliding_window", w.num("sliding_window") ?? 128);
  const types = w.hparams["layer_types"];
  const layers = w.need("num_hidden_layers");
  const pattern = Array.isArray(types) && types.length > 0
    ? types.map((t) => t === "sliding_attention")
    : Array.from({ length: layers }, (_, i) => i % 4 !== 0);
  w.setArray("attention.sliding_window_pattern", "BOOL", pattern);
}

/** A per-layer RoPE base the converter cannot write. */
function graniteSwaUnsupported(w: KvWriter): string | undefined {
  const thetas = w.hparams["layer_rope_theta"];
  const base = w.fullRope["rope_theta"];
  if (Array.isArray(thetas) && thetas.some((t) => t !== base)) {
    return `its config.json has layer_rope_theta ${JSON.stringify(thetas)}; the converter ` +
      `writes one rope.freq_base (${JSON.stringify(base)}) for every layer and llama.cpp would ` +
      `rotate them all with it`;
  }
  return undefined;
}

/** Name the sinks as the converter does before mapping (`…sinks` → `…sinks.weight`). */
function sinksName(name: string): string {
  return name.endsWith(".sinks") ? `${name}.weight` : name;
}

/** The inverse of {@linkcode sinksName}, for a GGUF read back. */
function sinksNameBack(name: string): string {
  return name.endsWith(".sinks.weight") ? name.slice(0, -".weight".length) : name;
}

/** Granite with sliding-window attention and sinks. */
export const GRANITE_SWA: Family = {
  ...GRANITE,
  name: "granite_swa",
  source: "llama.cpp conversion/granite.py GraniteSWAModel; transformers GraniteSWAForCausalLM",
  configFields: {
    ...GRANITE.configFields,
    written: [...GRANITE_MULTIPLIERS, "sliding_window", "layer_types"],
    checked: ["layer_rope_theta"],
  },
  hfArchitectures: ["GraniteSWAForCausalLM"],
  hfModelTypes: ["granite_swa"],
  ggufArchitecture: "granite_swa",
  blockNames: [...GRANITE.blockNames, ["attn_sinks", "self_attn.sinks"]],
  tiedByDefault: true,
  gguf: {
    ...GRANITE.gguf!,
    writeKv: writeGraniteSwaKv,
    unsupported: graniteSwaUnsupported,
    hfName: sinksName,
    hfNameBack: sinksNameBack,
  },
};

/** `GraniteMoeSWAModel.set_gguf_parameters`: a shared expert's width where there is one. */
function writeGraniteMoeSwaKv(w: KvWriter): void {
  writeGraniteSwaKv(w);
  writeSharedExpertWidth(w);
}

/**
 * Granite MoE with sliding-window attention (`GraniteMoeSWAForCausalLM`),
 * after llama.cpp's `GraniteMoeSWAModel`: Granite SWA's attention, the
 * experts kept fused as the converter keeps them (`experts.gate_up_proj` →
 * `ffn_gate_up_exps`, `experts.down_proj` → `ffn_down_exps`), the router
 * (`router` → `ffn_gate_inp`), and a shared expert whose `input_linear`
 * stays fused as `ffn_up_shexp` (llama.cpp runs it as one SwiGLU tensor).
 */
export const GRANITEMOE_SWA: Family = {
  ...GRANITE_SWA,
  name: "granitemoe_swa",
  source: "llama.cpp conversion/granite.py GraniteMoeSWAModel; transformers " +
    "GraniteMoeSWAForCausalLM",
  configFields: {
    ...GRANITE_SWA.configFields,
    written: [...GRANITE_SWA.configFields.written ?? [], "shared_intermediate_size"],
  },
  hfArchitectures: ["GraniteMoeSWAForCausalLM"],
  hfModelTypes: ["granitemoe_swa"],
  blockNames: [
    ...LLAMA_BLOCK.filter(([gguf]) => !gguf.startsWith("ffn_") || gguf === "ffn_norm"),
    ["attn_sinks", "self_attn.sinks"],
    ["ffn_gate_inp", "block_sparse_moe.router"],
    ["ffn_up_shexp", "shared_mlp.input_linear"],
    ["ffn_down_shexp", "shared_mlp.output_linear"],
  ],
  experts: GRANITEMOE_SWA_EXPERTS,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    ...GRANITE_SWA.gguf!,
    writeKv: writeGraniteMoeSwaKv,
    joinedBack: (tensors) => stackedExpertsBack(GRANITEMOE_SWA_EXPERTS, tensors),
  },
};
