// This module is browser compatible.

/**
 * Granite 3.0 MoE (`GraniteMoeForCausalLM`) and its shared-expert variant
 * (`GraniteMoeSharedForCausalLM`), after llama.cpp's `GraniteMoeModel`
 * (conversion/granite.py, a `GraniteModel`): Granite's attention and
 * multipliers, experts stored JetMoE's way — one
 * `block_sparse_moe.input_linear` per layer, `[experts, 2 × ff, hidden]`,
 * gate rows then up rows, which the converter splits into `ffn_gate_exps`
 * and `ffn_up_exps`, one `output_linear` (`ffn_down_exps`) — and a router
 * (`block_sparse_moe.router.layer` → `ffn_gate_inp`); the shared expert's
 * `shared_mlp.input_linear` split the same way into `ffn_gate_shexp` and
 * `ffn_up_shexp`.
 *
 * @module
 */

import { tensorByteLength } from "../../dtype.ts";
import type { TensorInfo } from "../../tensor.ts";
import {
  type ExpertLayout,
  type Family,
  type JoinedTensor,
  LLAMA_BLOCK,
  type MadeTensor,
} from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { rowsJoinedBack, stackedExpertsBack } from "../split_back.ts";
import { keepRanges } from "../transforms.ts";
import { GRANITE, writeGraniteKv } from "./granite.ts";

/**
 * JetMoE's expert layout, Granite MoE's and Granite 4.0-H's: one
 * `block_sparse_moe.input_linear` (gate rows, then up rows) and one
 * `output_linear` per layer.
 */
export const GRANITEMOE_EXPERTS: ExpertLayout = {
  prefix: "block_sparse_moe",
  stacks: [],
  stacked: [
    ["input_linear", ["ffn_gate_exps", "ffn_up_exps"]],
    ["output_linear", ["ffn_down_exps"]],
  ],
};

/**
 * A GGUF read back: the experts' `input_linear` joined from the gate and up
 * stacks expert by expert, `output_linear` from `ffn_down_exps`, and a
 * shared expert's (`GraniteMoeShared`, whose GGUF llama.cpp files as
 * granitemoe too) from its gate and up rows.
 */
function granitemoeJoinedBack(tensors: readonly TensorInfo[]): JoinedTensor[] {
  return [
    ...stackedExpertsBack(GRANITEMOE_EXPERTS, tensors),
    ...rowsJoinedBack([["shared_mlp.input_linear", ["ffn_gate_shexp", "ffn_up_shexp"]]], tensors),
  ];
}

/** Granite 3.0 1B-A400M, 3B-A800M. */
export const GRANITEMOE: Family = {
  ...GRANITE,
  name: "granitemoe",
  source: "llama.cpp conversion/granite.py GraniteMoeModel; transformers GraniteMoeForCausalLM",
  // Its experts' fields (num_local_experts, num_experts_per_tok) are the common ones.
  configFields: GRANITE.configFields,
  hfArchitectures: ["GraniteMoeForCausalLM"],
  hfModelTypes: ["granitemoe"],
  ggufArchitecture: "granitemoe",
  blockNames: [
    ...LLAMA_BLOCK.filter(([gguf]) => !gguf.startsWith("ffn_") || gguf === "ffn_norm"),
    ["ffn_gate_inp", "block_sparse_moe.router.layer"],
    // A shared expert's (GraniteMoeShared's, whose GGUF reads back as this family's).
    ["ffn_down_shexp", "shared_mlp.output_linear"],
  ],
  experts: GRANITEMOE_EXPERTS,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeGraniteKv,
    llamaKeys: true,
    // A shared expert's halves, for an APR of a GraniteMoeShared GGUF written as GGUF again.
    made: sharedHalves,
    joinedBack: granitemoeJoinedBack,
  },
};

/** `GraniteMoeModel.set_gguf_parameters` with a shared expert. */
function writeGraniteMoeSharedKv(w: KvWriter): void {
  writeGraniteKv(w);
  writeSharedExpertWidth(w);
}

/**
 * `expert_shared_feed_forward_length` from `shared_intermediate_size`, as
 * Granite's MoE converters write it (also Granite MoE SWA's).
 *
 * @param w The writer, over the model's `config.json`.
 */
export function writeSharedExpertWidth(w: KvWriter): void {
  const shared = w.find("shared_intermediate_size");
  // Python's truthiness: no key for a missing or zero width.
  if (typeof shared === "number" && shared !== 0) {
    w.u32("expert_shared_feed_forward_length", shared);
  }
}

const SHARED_INPUT = /^model\.layers\.(\d+)\.shared_mlp\.input_linear\.weight$/;

/** The shared expert's `input_linear` as its gate rows and its up rows. */
function sharedHalves(tensors: readonly TensorInfo[]): MadeTensor[] {
  return tensors.flatMap((info) => {
    const m = SHARED_INPUT.exec(info.name);
    if (m === null) return [];
    const [rows = 0, cols = 0] = info.shape;
    if (info.shape.length !== 2 || rows % 2 !== 0) {
      throw new RangeError(
        `Cannot split "${info.name}": [${info.shape}] is not a gate and an up matrix`,
      );
    }
    const shape = [rows / 2, cols];
    const half = tensorByteLength(info.dtype, shape);
    return (["ffn_gate_shexp", "ffn_up_shexp"] as const).map((gguf, k): MadeTensor => ({
      info: { name: `blk.${m[1]}.${gguf}.weight`, dtype: info.dtype, shape, byteLength: half },
      needs: [info.name],
      open: ([source]) => keepRanges(source!.open(), [[k * half, (k + 1) * half]]),
    }));
  });
}

/** Granite MoE with a shared expert. */
export const GRANITEMOE_SHARED: Family = {
  ...GRANITEMOE,
  name: "granitemoeshared",
  source: "llama.cpp conversion/granite.py GraniteMoeModel; transformers " +
    "GraniteMoeSharedForCausalLM",
  configFields: {
    ...GRANITE.configFields,
    written: [
      ...GRANITE.configFields.written ?? [],
      "shared_intermediate_size",
    ],
  },
  hfArchitectures: ["GraniteMoeSharedForCausalLM"],
  hfModelTypes: ["granitemoeshared"],
  gguf: {
    writeKv: writeGraniteMoeSharedKv,
    llamaKeys: true,
    made: sharedHalves,
    joinedBack: granitemoeJoinedBack,
  },
};
