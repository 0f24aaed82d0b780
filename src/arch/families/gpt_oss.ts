// This module is browser compatible.

/**
 * gpt-oss (`GptOssForCausalLM`), after llama.cpp's `GptOssModel`
 * (conversion/gpt_oss.py): attention with biases and per-head sinks
 * (`self_attn.sinks` → `attn_sinks.weight`), a biased router
 * (`mlp.router` → `ffn_gate_inp`), and experts stored already stacked —
 * `mlp.experts.gate_up_proj` `[experts, hidden, 2 × ff]` with gate and up
 * columns interleaved, `down_proj` `[experts, ff, hidden]`, their `_bias`es —
 * which the converter transposes and splits (`[..., ::2]` gate, `[..., 1::2]`
 * up). The Hub's checkpoints hold the experts as MXFP4 instead
 * (`*_blocks` + `*_scales`, rows already `[2 × ff, hidden]`): those the
 * converter repacks to ggml's MXFP4 blocks, unchanged in value, and writes
 * before every other tensor (`generate_extra_tensors`). Keys: the common
 * ones, then `sliding_window` and `expert_feed_forward_length`.
 *
 * realizar has no gpt-oss model: APR output keeps the checkpoint's tensors
 * under their Hugging Face names (MXFP4 experts dequantized).
 *
 * @module
 */

import { DTYPES, tensorByteLength } from "../../dtype.ts";
import type { TensorInfo } from "../../tensor.ts";
import { type Family, LLAMA_BLOCK, type MadeTensor } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { writeTextModelKv } from "../text_model.ts";
import { columnsAsRows, repackMxfp4 } from "../transforms.ts";
import { swaPattern } from "../config_fields.ts";

/**
 * `GptOssModel.set_gguf_parameters` (which fails without either key, and
 * llama.cpp needs the window to load the file).
 */
function writeGptOssKv(w: KvWriter): void {
  writeTextModelKv(w);
  w.u32("attention.sliding_window", w.need("sliding_window"));
  w.u32("expert_feed_forward_length", w.need("intermediate_size"));
}

const EXPERTS =
  /^model\.layers\.(\d+)\.mlp\.experts\.(gate_up_proj|down_proj)(_bias|_blocks|_scales)?$/;
const SINKS = /^model\.layers\.(\d+)\.self_attn\.sinks$/;

/** The expert and sink tensors, made as `GptOssModel.modify_tensors` and `repack_mxfp4` make them. */
function gptOssMade(tensors: readonly TensorInfo[]): MadeTensor[] {
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const made: MadeTensor[] = [];
  for (const info of tensors) {
    const sinks = SINKS.exec(info.name);
    if (sinks !== null) {
      made.push(copied(info, `blk.${sinks[1]}.attn_sinks.weight`));
      continue;
    }
    const m = EXPERTS.exec(info.name);
    if (m === null) continue;
    const [layer, piece, suffix] = [m[1]!, m[2]!, m[3]];
    const blk = `blk.${layer}`;
    const parts = piece === "gate_up_proj"
      ? [["ffn_gate_exps", 0, 2], ["ffn_up_exps", 1, 2]] as const
      : [["ffn_down_exps", 0, 1]] as const;
    if (suffix === "_blocks") continue; // made with its scales
    if (suffix === "_scales") {
      const blocks = byName.get(`${info.name.slice(0, -"_scales".length)}_blocks`);
      if (blocks === undefined) {
        throw new RangeError(
          `Cannot convert "${info.name}" to GGUF: its _blocks tensor is missing`,
        );
      }
      for (const [gguf, start, step] of parts) {
        made.push(mxfp4(blocks, info, `${blk}.${gguf}.weight`, start, step));
      }
    } else if (suffix === "_bias") {
      const [experts, cols] = floatShape(info, 2);
      for (const [gguf, start, step] of parts) {
        made.push(columns(info, `${blk}.${gguf}.bias`, [experts, cols / step], {
          matrices: experts,
          rows: 1,
          cols,
          start,
          step,
        }));
      }
    } else {
      const [experts, rows, cols] = floatShape(info, 3);
      for (const [gguf, start, step] of parts) {
        made.push(columns(info, `${blk}.${gguf}.weight`, [experts, cols / step, rows], {
          matrices: experts,
          rows,
          cols,
          start,
          step,
        }));
      }
    }
  }
  return made;
}

/** A float tensor of `n` dimensions whose last one splits in two. */
function floatShape(info: TensorInfo, n: 2 | 3): [number, number, number] {
  const last = info.shape[info.shape.length - 1] ?? 0;
  if (info.shape.length !== n || DTYPES[info.dtype].layout !== "elements" || last % 2 !== 0) {
    throw new RangeError(
      `Cannot convert "${info.name}" to GGUF: gpt-oss experts must be a ${n}-D float tensor ` +
        `with an even last dimension, not ${info.dtype} [${info.shape}]`,
    );
  }
  return [info.shape[0]!, info.shape[1]!, info.shape[2] ?? 0];
}

function copied(info: TensorInfo, name: string): MadeTensor {
  return {
    info: { ...info, name },
    needs: [info.name],
    open: ([source]) => source!.open(),
  };
}

function columns(
  info: TensorInfo,
  name: string,
  shape: number[],
  layout: { matrices: number; rows: number; cols: number; start: number; step: number },
): MadeTensor {
  const width = tensorByteLength(info.dtype, [1]);
  return {
    info: { name, dtype: info.dtype, shape, byteLength: tensorByteLength(info.dtype, shape) },
    needs: [info.name],
    open: ([source]) => columnsAsRows(source!.open(), { ...layout, width }),
  };
}

function mxfp4(
  blocks: TensorInfo,
  scales: TensorInfo,
  name: string,
  start: number,
  step: number,
): MadeTensor {
  const b = blocks.shape;
  const s = scales.shape;
  if (
    blocks.dtype !== "U8" || scales.dtype !== "U8" || b.length !== 4 || b[3] !== 16 ||
    s.length !== 3 || s[0] !== b[0] || s[1] !== b[1] || s[2] !== b[2] || b[1]! % step !== 0
  ) {
    throw new RangeError(
      `Cannot convert "${blocks.name}" ${blocks.dtype} [${b}] and "${scales.name}" ` +
        `${scales.dtype} [${s}] to GGUF: expected MXFP4 blocks U8 [experts, rows, groups, 16] ` +
        `and scales U8 [experts, rows, groups]`,
    );
  }
  const [experts, rows, groups] = [b[0]!, b[1]!, b[2]!];
  const shape = [experts, rows / step, groups * 32];
  return {
    info: { name, dtype: "MXFP4", shape, byteLength: tensorByteLength("MXFP4", shape) },
    needs: [blocks.name, scales.name],
    first: true,
    open: ([bl, sc]) =>
      repackMxfp4(bl!.open(), sc!.open(), { rows: experts * rows, groups, start, step }),
  };
}

/** gpt-oss-20b, gpt-oss-120b. */
export const GPT_OSS: Family = {
  name: "gpt-oss",
  source: "llama.cpp conversion/gpt_oss.py GptOssModel; transformers GptOssForCausalLM",
  configFields: {
    written: ["sliding_window"],
    assumed: [{ field: "layer_types", hfDefault: null, llamaCpp: swaPattern(2), alike: [null] }],
    irrelevant: {
      hidden_act: "transformers' gpt-oss experts ignore it: a clamped SwiGLU (α 1.702, limit 7), " +
        "as llama.cpp's",
    },
  },
  hfArchitectures: ["GptOssForCausalLM"],
  hfModelTypes: ["gpt_oss"],
  ggufArchitecture: "gpt-oss",
  // Llama's attention (its experts are made, not renamed); the second norm is
  // llama.cpp's post_attention_norm.
  blockNames: [
    ...LLAMA_BLOCK.filter(([gguf]) => /^attn_(q|k|v|output|norm)$/.test(gguf)),
    ["post_attention_norm", "post_attention_layernorm"],
    ["ffn_gate_inp", "mlp.router"],
  ],
  permutesQk: false,
  ggufRopeType: "neox",
  tiedByDefault: false,
  ggufRenamesOnly: false,
  gguf: { writeKv: writeGptOssKv, made: gptOssMade },
  ggufReadBackRefusal:
    "aprkit does not read a gpt-oss GGUF back into Hugging Face's layout (its experts are transposed, split and MXFP4); --keep-names keeps its GGUF tensors",
};
