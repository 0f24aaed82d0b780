// This module is browser compatible.

/**
 * Qwen3.5's text models (`Qwen3_5ForCausalLM`, dense; `Qwen3_5MoeForCausalLM`),
 * after llama.cpp's `Qwen3_5TextModel` and `Qwen3_5MoeTextModel`
 * (conversion/qwen.py), GGUF architectures `qwen35` and `qwen35moe`.
 *
 * Qwen3-Next's layers (`qwen3next.ts`: gated DeltaNet and gated full
 * attention, `ssm_a = −exp(A_log)`, norms +1) with the linear attention's
 * projections stored apart: `in_proj_qkv` (`attn_qkv`), `in_proj_z`
 * (`attn_gate`), `in_proj_b` (`ssm_beta`), `in_proj_a` (`ssm_alpha`). Where
 * there are more value heads than key heads, the converter
 * (`_LinearAttentionVReorderBase`) reorders the value heads from grouped by
 * key head (`[k0v0, k0v1, k1v0, k1v1]`) to tiled (`[k0v0, k1v0, k0v1,
 * k1v1]`), as llama.cpp's broadcast expects: the v rows of `in_proj_qkv` and
 * the v channels of `conv1d`, the rows of `in_proj_z`, `in_proj_b`,
 * `in_proj_a`, the entries of `A_log` and `dt_bias`, the columns of
 * `out_proj`. RoPE is interleaved M-RoPE (`rope.dimension_sections`,
 * [11, 11, 10, 0] when the config gives none); text has one position on
 * every axis, so it rotates as NEOX does.
 *
 * @module
 */

import { tensorByteLength } from "../../dtype.ts";
import type { TensorInfo } from "../../tensor.ts";
import type { Family, MadeTensor } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { rangesInOrder, reorderSegments } from "../transforms.ts";
import { QWEN_MOE_EXPERTS } from "./qwen2moe.ts";
import {
  convKernel,
  countedMtpConfig,
  dropsMtp,
  dtBiasName,
  LINEAR,
  LINEAR_ATTENTION_FIELDS,
  LINEAR_ATTENTION_READ_BACK,
  type LinearAttention,
  linearAttention,
  linearAttentionRefusal,
  madeFrom,
  mtpLayers,
  mtpSourceName,
  QWEN_NEXT_BLOCK,
  QWEN_SHARED_EXPERT_BLOCK,
  qwenNextShift,
  ssmA,
  writeQwen3NextKv,
} from "./qwen3next.ts";

/** `Qwen3_5TextModel.set_gguf_parameters`: Qwen3-Next's keys, then M-RoPE's default sections. */
export function writeQwen35Kv(w: KvWriter): void {
  writeQwen3NextKv(w);
  if (!Array.isArray(w.rope["mrope_section"])) {
    w.setArray("rope.dimension_sections", "INT32", DEFAULT_SECTIONS);
  }
}

/** transformers' and the converter's M-RoPE sections when the config names none. */
const DEFAULT_SECTIONS = [11, 11, 10, 0];

/**
 * Qwen3-Next's refusals, and M-RoPE sections wider than the rotated dims,
 * on which llama.cpp aborts (`GGML_ASSERT(sect_dims <= ne0)`).
 */
export function qwen35Unsupported(w: KvWriter): string | undefined {
  const linear = linearAttentionRefusal(w);
  if (linear !== undefined) return linear;
  const given = w.rope["mrope_section"];
  const sections = Array.isArray(given) ? given : DEFAULT_SECTIONS;
  const sum = sections.reduce((n: number, s) => n + (typeof s === "number" ? s : 0), 0);
  const head = w.num("head_dim") ?? w.need("hidden_size") / w.need("num_attention_heads");
  const factor = w.rope["partial_rotary_factor"] ?? 0.25;
  const rotated = Math.trunc(head * (typeof factor === "number" ? factor : 0.25));
  if (sum > rotated) {
    return `its config.json has mrope_section ${JSON.stringify(sections)}` +
      `${Array.isArray(given) ? "" : " (the default; absent)"}, ${sum} sections for ${rotated} ` +
      `rotated dims; llama.cpp's ${w.arch} aborts on more sections than rotated dims`;
  }
  return undefined;
}

/**
 * The value heads' blocks in llama.cpp's tiled order: block `k·r + v` (key
 * head k's v-th value head) is written at `v·keyHeads + k`.
 */
function tiled(a: LinearAttention): number[] {
  const r = a.valueHeads / a.keyHeads;
  return Array.from(
    { length: a.valueHeads },
    (_, i) => (i % a.keyHeads) * r + Math.floor(i / a.keyHeads),
  );
}

/** Rows `[first + b·block, first + (b + 1)·block)` for each block b of `order`, as byte ranges. */
function rowBlocks(
  order: readonly number[],
  block: number,
  rowBytes: number,
  first = 0,
): [number, number][] {
  return order.map((b) => [(first + b * block) * rowBytes, (first + (b + 1) * block) * rowBytes]);
}

/** A tensor whose rows (from `first` on) are regrouped by value head; earlier rows kept. */
function reorderedRows(
  info: TensorInfo,
  name: string,
  order: readonly number[],
  block: number,
  first = 0,
): MadeTensor {
  const rowBytes = tensorByteLength(info.dtype, info.shape.slice(1));
  const rows = info.shape[0] ?? 0;
  if (rows !== first + order.length * block) {
    throw new RangeError(
      `Cannot convert "${info.name}" [${info.shape}] to GGUF: expected ${
        first + order.length * block
      } ` +
        `rows (${order.length} value heads of ${block})`,
    );
  }
  const kept: [number, number][] = first > 0 ? [[0, first * rowBytes]] : [];
  return madeFrom(
    info,
    name,
    info.shape,
    (open) => rangesInOrder(open, [...kept, ...rowBlocks(order, block, rowBytes, first)]),
  );
}

/** `_LinearAttentionVReorderBase.modify_tensors` with Qwen3-Next's transforms. */
export function qwen35Made(tensors: readonly TensorInfo[], w: KvWriter): MadeTensor[] {
  const a = linearAttention(w.hparams);
  const reorder = a.valueHeads !== a.keyHeads;
  const order = tiled(a);
  const made: MadeTensor[] = [];
  for (const info of tensors) {
    const m = LINEAR.exec(info.name);
    if (m === null) continue;
    const blk = `blk.${m[1]}`;
    const piece = m[2];
    if (piece === "A_log") made.push(ssmA(info, blk, reorder ? order : undefined));
    else if (piece === "conv1d.weight") {
      made.push(
        convKernel(
          info,
          blk,
          reorder
            ? { first: 2 * a.keyHeads * a.keyDim, blocks: order, block: a.valueDim }
            : undefined,
        ),
      );
    } else if (!reorder) continue;
    else if (piece === "in_proj_qkv.weight") {
      made.push(
        reorderedRows(info, `${blk}.attn_qkv.weight`, order, a.valueDim, 2 * a.keyHeads * a.keyDim),
      );
    } else if (piece === "in_proj_z.weight") {
      made.push(reorderedRows(info, `${blk}.attn_gate.weight`, order, a.valueDim));
    } else if (piece === "in_proj_b.weight") {
      made.push(reorderedRows(info, `${blk}.ssm_beta.weight`, order, 1));
    } else if (piece === "in_proj_a.weight") {
      made.push(reorderedRows(info, `${blk}.ssm_alpha.weight`, order, 1));
    } else if (piece === "dt_bias") {
      made.push(reorderedRows(info, `${blk}.ssm_dt.bias`, order, 1));
    } else if (piece === "out_proj.weight") {
      const cols = info.shape[1] ?? 0;
      if (info.shape.length !== 2 || cols !== a.valueHeads * a.valueDim) {
        throw new RangeError(
          `Cannot convert "${info.name}" [${info.shape}] to GGUF: expected ` +
            `${a.valueHeads * a.valueDim} columns (${a.valueHeads} value heads)`,
        );
      }
      const rowBytes = tensorByteLength(info.dtype, [cols]);
      made.push(
        madeFrom(
          info,
          `${blk}.ssm_out.weight`,
          info.shape,
          (open) => reorderSegments(open(), rowBytes, order),
        ),
      );
    }
  }
  return made;
}

/** Qwen3.5's linear attention projections, renamed (where no value head is reordered). */
export const QWEN35_BLOCK: readonly (readonly [string, string])[] = [
  ...QWEN_NEXT_BLOCK,
  ["attn_qkv", "linear_attn.in_proj_qkv"],
  ["attn_gate", "linear_attn.in_proj_z"],
  ["ssm_beta", "linear_attn.in_proj_b"],
  ["ssm_alpha", "linear_attn.in_proj_a"],
];

const GGUF = {
  writeKv: writeQwen35Kv,
  unsupported: qwen35Unsupported,
  made: qwen35Made,
  shift: qwenNextShift,
  hfName: dtBiasName,
  sourceName: mtpSourceName,
  drops: dropsMtp,
  countedConfig: countedMtpConfig,
  extraBlocks: mtpLayers,
  mtpBlocksRequired: true,
};

/** Qwen3.5 dense (0.8B–27B). */
export const QWEN35: Family = {
  name: "qwen35",
  // Gated DeltaNet layers between the attending ones.
  hybrid: true,
  source: "llama.cpp conversion/qwen.py Qwen3_5TextModel; transformers Qwen3_5ForCausalLM",
  configFields: LINEAR_ATTENTION_FIELDS,
  hfArchitectures: ["Qwen3_5ForCausalLM"],
  hfModelTypes: ["qwen3_5_text", "qwen3_5"],
  ggufArchitecture: "qwen35",
  ggufRopeType: "imrope",
  blockNames: QWEN35_BLOCK,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: GGUF,
  ggufReadBackRefusal: LINEAR_ATTENTION_READ_BACK,
};

/** Qwen3.5 MoE (35B-A3B, 122B-A10B, 397B-A17B). */
export const QWEN35MOE: Family = {
  name: "qwen35moe",
  // Gated DeltaNet layers between the attending ones.
  hybrid: true,
  source: "llama.cpp conversion/qwen.py Qwen3_5MoeTextModel; transformers Qwen3_5MoeForCausalLM",
  configFields: LINEAR_ATTENTION_FIELDS,
  hfArchitectures: ["Qwen3_5MoeForCausalLM"],
  hfModelTypes: ["qwen3_5_moe_text", "qwen3_5_moe"],
  ggufArchitecture: "qwen35moe",
  ggufRopeType: "imrope",
  blockNames: [...QWEN35_BLOCK, ...QWEN_SHARED_EXPERT_BLOCK],
  experts: QWEN_MOE_EXPERTS,
  permutesQk: false,
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: GGUF,
  ggufReadBackRefusal: LINEAR_ATTENTION_READ_BACK,
};
