// This module is browser compatible.

/**
 * Jamba (`JambaForCausalLM`), after llama.cpp's `JambaModel`
 * (conversion/jamba.py): Mamba layers (`model.layers.N.mamba.*`, made as
 * Mamba's: `ssm.ts`, with weighted RMS norms on the time step, B and C) and
 * attention layers without positions, every `attn_layer_period` from
 * `attn_layer_offset`, written as `attention.head_count_kv` per layer (0 for
 * a Mamba layer); experts on every `expert_layer_period` from
 * `expert_layer_offset`, stacked, the others a dense SwiGLU MLP.
 *
 * @module
 */

import { activation, SILU } from "../config_fields.ts";
import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { ssmTensors } from "../ssm.ts";
import { mambaTensors, or, READ_BACK_REFUSAL } from "./mamba.ts";

const MAMBA_TENSORS = mambaTensors("mamba");

/** `JambaModel.set_gguf_parameters`. */
function writeKv(w: KvWriter): void {
  const dModel = w.need("hidden_size", "mamba_d_model");
  const layers = w.need("num_hidden_layers");
  w.u32("block_count", layers);
  w.u32("context_length", w.need("max_position_embeddings", "n_ctx"));
  w.u32("embedding_length", dModel);
  w.u32("feed_forward_length", w.need("intermediate_size"));
  w.u32("attention.head_count", w.need("num_attention_heads"));
  // Read just before the list, so messages name them as its source (KvWriter.sourceOf).
  const kv = w.need("num_key_value_heads");
  const offset = w.need("attn_layer_offset");
  const period = w.need("attn_layer_period");
  const perLayer = Array.from(
    { length: layers },
    (_, i) => i >= offset && (i - offset) % period === 0 ? kv : 0,
  );
  w.setArray("attention.head_count_kv", "INT32", perLayer);
  w.u32("ssm.conv_kernel", or(w.find("mamba_d_conv"), 4));
  w.u32("ssm.inner_size", w.need("mamba_expand") * dModel);
  w.u32("ssm.state_size", or(w.find("mamba_d_state"), 16));
  w.u32("ssm.time_step_rank", or(w.find("mamba_dt_rank"), Math.ceil(dModel / 16)));
  w.f32("attention.layer_norm_rms_epsilon", or(w.find("layer_norm_epsilon", "rms_norm_eps"), 1e-6));
  w.u32("expert_count", w.need("num_local_experts", "num_experts"));
  w.u32("expert_used_count", w.need("num_experts_per_tok", "num_experts_per_token"));
  w.fileType();
}

/** Jamba. */
export const JAMBA: Family = {
  name: "jamba",
  source: "llama.cpp conversion/jamba.py JambaModel; transformers JambaForCausalLM",
  configFields: {
    written: [
      "attn_layer_offset",
      "attn_layer_period",
      "expert_layer_offset",
      "expert_layer_period",
      "mamba_d_conv",
      "mamba_d_state",
      "mamba_dt_rank",
      "mamba_expand",
    ],
    assumed: [
      activation("hidden_act", SILU),
      // llama.cpp's jamba requires the convolution's bias and loads no projection's.
      { field: "mamba_proj_bias", hfDefault: false, llamaCpp: false },
      { field: "mamba_conv_bias", hfDefault: true, llamaCpp: true },
    ],
    irrelevant: {
      use_mamba_kernels: "which of transformers' scan implementations runs (the same values)",
      use_mambapy: "which of transformers' scan implementations runs (the same values)",
      use_associative_scan: "which of transformers' scan implementations runs (the same values)",
    },
  },
  hfArchitectures: ["JambaForCausalLM"],
  hfModelTypes: ["jamba"],
  ggufArchitecture: "jamba",
  ggufRopeType: "none",
  blockNames: [
    ["attn_q", "self_attn.q_proj"],
    ["attn_k", "self_attn.k_proj"],
    ["attn_v", "self_attn.v_proj"],
    ["attn_output", "self_attn.o_proj"],
    ["attn_norm", "input_layernorm"],
    ["ffn_norm", "pre_ff_layernorm"],
    ["ffn_gate", "feed_forward.gate_proj"],
    ["ffn_up", "feed_forward.up_proj"],
    ["ffn_down", "feed_forward.down_proj"],
    ["ffn_gate_inp", "feed_forward.router"],
    ["ssm_in", "mamba.in_proj"],
    ["ssm_conv1d", "mamba.conv1d"],
    ["ssm_x", "mamba.x_proj"],
    ["ssm_dt", "mamba.dt_proj"],
    ["ssm_out", "mamba.out_proj"],
    ["ssm_dt_norm", "mamba.dt_layernorm"],
    ["ssm_b_norm", "mamba.b_layernorm"],
    ["ssm_c_norm", "mamba.c_layernorm"],
  ],
  globalNames: [["output_norm", "model.final_layernorm"]],
  experts: {
    prefix: "feed_forward.experts",
    stacks: [
      { hf: "down_proj", gguf: "ffn_down_exps" },
      { hf: "gate_proj", gguf: "ffn_gate_exps" },
      { hf: "up_proj", gguf: "ffn_up_exps" },
    ],
  },
  hybrid: true,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  ggufReadBackRefusal: READ_BACK_REFUSAL.replace("a Mamba GGUF", "a Jamba GGUF"),
  gguf: {
    writeKv,
    made: (tensors, w) => ssmTensors(tensors, w, "model.layers", MAMBA_TENSORS),
    // transformers: experts where layer % expert_layer_period == expert_layer_offset.
    moeLayers: (h) => {
      const [layers, period, offset] = [
        h["num_hidden_layers"],
        h["expert_layer_period"] ?? 2,
        h["expert_layer_offset"] ?? 1,
      ];
      if (![layers, period, offset].every((n) => Number.isSafeInteger(n))) return undefined;
      if ((period as number) <= 0) return undefined;
      return {
        moe: Array.from({ length: layers as number }, (_, i) => i % (period as number) === offset),
        from: `expert_layer_period ${period}, expert_layer_offset ${offset}`,
      };
    },
  },
};
