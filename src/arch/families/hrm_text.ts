// This module is browser compatible.

/**
 * HRM-Text (`HrmTextForCausalLM`, DFM-Mimir), after llama.cpp's
 * `HrmTextModel` (conversion/hrm_text.py), GGUF architecture `hrm_text`.
 *
 * Two stacks of `num_layers_per_stack` layers, L and H, run as a recurrence:
 * `H_cycles` times, L `L_cycles` times then H once, each stack's output
 * added to the other's input; the embedding ×`embedding_scale`, the L
 * state starting from `z_L_init`. The file holds the stacks once: L's layer
 * N is block N, H's is block `layers_per_stack + N` (2 × `layers_per_stack`
 * blocks), while `block_count` counts the cycles' cache slots
 * (`layers_per_stack × H_cycles × (L_cycles + 1)`, the `num_hidden_layers`
 * transformers writes). Each layer's fused `attn.gqkv_proj` splits four
 * ways (sigmoid output gate, then Q, K, V: multi-head attention) and
 * `mlp.gate_up_proj` two; the RMSNorms have no weights.
 *
 * @module
 */

import { tensorByteLength } from "../../dtype.ts";
import type { ModelMetadata, TensorInfo } from "../../tensor.ts";
import { type Family, type JoinedTensor, LLAMA_BLOCK, type MadeTensor } from "../family.ts";
import { type KvWriter, record } from "../kv.ts";
import { rowsJoinedBack } from "../split_back.ts";
import { writeTextModelKv } from "../text_model.ts";
import { activation, type Caveat, SILU } from "../config_fields.ts";
import { rangesInOrder } from "../transforms.ts";
import { madeFrom } from "./qwen3next.ts";

/** The layers in each stack: transformers' `num_layers_per_stack`, or a training config's `num_hidden_layers`. */
function layersPerStack(w: KvWriter): number {
  return w.num("num_layers_per_stack") ?? w.need("num_hidden_layers");
}

/** `HrmTextModel.set_gguf_parameters`. */
function writeHrmKv(w: KvWriter): void {
  writeTextModelKv(w);
  // transformers' config counts the cycles' cache slots in num_hidden_layers; a training
  // config (no num_layers_per_stack) counts the stack, which transformers multiplies out.
  if (w.num("num_layers_per_stack") === undefined) {
    w.u32("block_count", layersPerStack(w) * w.need("H_cycles") * (w.need("L_cycles") + 1));
  }
  w.u32(
    "rope.dimension_count",
    w.num("head_dim") ?? w.need("hidden_size") / w.need("num_attention_heads"),
  );
  w.f32("embedding_scale", w.need("embedding_scale"));
  w.u32("hrm.layers_per_stack", layersPerStack(w));
  w.u32("hrm.h_cycles", w.need("H_cycles"));
  w.u32("hrm.l_cycles", w.need("L_cycles"));
  // transformers' default is true; the converter writes `hparams.get("prefix_lm", False)`
  // of the config transformers has filled in.
  w.set("hrm.prefix_lm", "BOOL", w.hparams["prefix_lm"] !== false);
}

/** Biases: the converter maps none of the fused projections' and llama.cpp loads none. */
function unsupported(w: KvWriter): string | undefined {
  for (const key of ["attention_bias", "mlp_bias"]) {
    if (w.hparams[key] === true) {
      return `its config.json has ${key} true; llama.cpp's hrm_text loads no bias (and the ` +
        `converter maps none)`;
    }
  }
  return undefined;
}

/**
 * PrefixLM: transformers lets the tokens a caller marks with `token_type_ids`
 * 1 (an instruction) attend to each other both ways; llama.cpp reads
 * `hrm.prefix_lm` and attends causally all the same. Without token types
 * (plain text) the two compute alike.
 */
const PREFIX_LM: Caveat = {
  fields: ["prefix_lm"],
  warn(w) {
    // transformers' default is true.
    if (w.hparams["prefix_lm"] === false) return undefined;
    return "config.json sets prefix_lm (the default): transformers attends bidirectionally " +
      "within the tokens marked as instruction (token_type_ids 1); llama.cpp's hrm_text " +
      "attends causally to every token, so it computes as transformers does only on text " +
      "given without token types";
  },
};

/** `model.{L,H}_module.layers.N.<rest>`. */
const STACKED = /^model\.([LH])_module\.layers\.(\d+)\.(.+)$/;

/** `info`'s rows cut into `names.length` equal parts, one tensor each. */
function rowParts(info: TensorInfo, names: readonly string[]): MadeTensor[] {
  const [rows, cols] = [info.shape[0] ?? 0, info.shape[1] ?? 0];
  if (info.shape.length !== 2 || rows % names.length !== 0) {
    throw new RangeError(
      `Cannot convert "${info.name}" [${info.shape}] to GGUF: expected rows in ${names.length} ` +
        `equal parts`,
    );
  }
  const part = rows / names.length;
  const bytes = tensorByteLength(info.dtype, [part, cols]);
  return names.map((name, i) =>
    madeFrom(
      info,
      name,
      [part, cols],
      (open) => rangesInOrder(open, [[i * bytes, (i + 1) * bytes]]),
    )
  );
}

/** `HrmTextModel.modify_tensors`: every stack tensor placed in its block, `z_L_init`. */
function hrmMade(tensors: readonly TensorInfo[], w: KvWriter): MadeTensor[] {
  const perStack = layersPerStack(w);
  const made: MadeTensor[] = [];
  for (const info of tensors) {
    if (info.name === "model.z_L_init") {
      made.push(madeFrom(info, "hrm.z_l_init", info.shape, (open) => open()));
      continue;
    }
    const m = STACKED.exec(info.name);
    if (m === null) continue;
    const blk = `blk.${Number(m[2]) + (m[1] === "H" ? perStack : 0)}`;
    const rename = (to: string) => madeFrom(info, `${blk}.${to}`, info.shape, (open) => open());
    switch (m[3]) {
      case "attn.gqkv_proj.weight":
        made.push(
          ...rowParts(
            info,
            ["attn_gate", "attn_q", "attn_k", "attn_v"].map((n) => `${blk}.${n}.weight`),
          ),
        );
        break;
      case "mlp.gate_up_proj.weight":
        made.push(...rowParts(info, [`${blk}.ffn_gate.weight`, `${blk}.ffn_up.weight`]));
        break;
      case "attn.o_proj.weight":
        made.push(rename("attn_output.weight"));
        break;
      case "mlp.down_proj.weight":
        made.push(rename("ffn_down.weight"));
        break;
      default:
        throw new RangeError(
          `Cannot convert "${info.name}" to GGUF: llama.cpp's hrm_text has no such tensor`,
        );
    }
  }
  return made;
}

/** The stacks' pieces and the GGUF tensors `hrmMade` makes of them, for a GGUF read back. */
const HRM_PIECES: readonly (readonly [string, readonly string[]])[] = [
  ["attn.gqkv_proj", ["attn_gate", "attn_q", "attn_k", "attn_v"]],
  ["mlp.gate_up_proj", ["ffn_gate", "ffn_up"]],
  ["attn.o_proj", ["attn_output"]],
  ["mlp.down_proj", ["ffn_down"]],
];

/**
 * A GGUF read back: each block's tensors into its stack's layer again (the
 * L stack's blocks first, then the H stack's), the fused ones joined.
 */
function hrmJoinedBack(tensors: readonly TensorInfo[], metadata: ModelMetadata): JoinedTensor[] {
  const perStack = layersPerStackOf(metadata);
  if (perStack === undefined) return [];
  return rowsJoinedBack(HRM_PIECES, tensors, (layer, piece) => {
    const [stack, index] = layer < perStack ? ["L", layer] : ["H", layer - perStack];
    return `model.${stack}_module.layers.${index}.${piece}.weight`;
  });
}

/** A GGUF's `hrm.layers_per_stack`, or `undefined` when it has none. */
function layersPerStackOf(metadata: ModelMetadata | undefined): number | undefined {
  const key = record(record(metadata?.gguf_metadata)?.["hrm_text.hrm.layers_per_stack"]);
  return typeof key?.["value"] === "number" ? key["value"] : undefined;
}

/** `z_L_init`, which the converter writes as `hrm.z_l_init`, named back. */
function hfNameBack(name: string): string {
  return name === "hrm.z_l_init" ? "model.z_L_init" : name;
}

/** HRM-Text (DFM-Mimir). */
export const HRM_TEXT: Family = {
  name: "hrm_text",
  source: "llama.cpp conversion/hrm_text.py HrmTextModel; transformers HrmTextForCausalLM",
  configFields: {
    written: ["H_cycles", "L_cycles", "embedding_scale", "num_layers_per_stack"],
    checked: ["attention_bias", "mlp_bias"],
    caveats: [PREFIX_LM],
    irrelevant: {
      L_bp_cycles: "which cycles propagate gradients in training; inference runs them all",
    },
    assumed: [activation("hidden_act", SILU)],
  },
  hfArchitectures: ["HrmTextForCausalLM"],
  hfModelTypes: ["hrm_text"],
  ggufArchitecture: "hrm_text",
  ggufRopeType: "neox",
  globalNames: [["token_embd", "model.embed_tokens"], ["output", "lm_head"]],
  // No norm weights; the stacks' tensors are all placed by `made`.
  blockNames: LLAMA_BLOCK.filter(([g]) => !g.endsWith("_norm")),
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeHrmKv,
    unsupported,
    made: hrmMade,
    joinedBack: hrmJoinedBack,
    hfNameBack,
    // The stacks' size hrmMade reads, for a GGUF read back and written again.
    hfConfigBack: (key) => ({ num_layers_per_stack: key("hrm.layers_per_stack") }),
  },
  // Its blocks go back to the L and H stacks by this key.
  ggufReadBackRefusalOf: (_names, metadata) =>
    layersPerStackOf(metadata) === undefined
      ? "aprkit does not read an HRM-Text GGUF without hrm_text.hrm.layers_per_stack back " +
        "into Hugging Face's layout (its blocks' stacks are not known); --keep-names keeps " +
        "its GGUF tensors"
      : undefined,
};
