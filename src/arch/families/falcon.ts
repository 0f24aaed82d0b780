// This module is browser compatible.

/**
 * Falcon (`FalconForCausalLM`), after llama.cpp's `FalconModel`
 * (conversion/falcon.py): `transformer.h.N` blocks where attention and a
 * GELU MLP (4 × hidden) run in parallel after one LayerNorm, or two
 * (`ln_attn`, `ln_mlp`: Falcon-40B/180B's `new_decoder_architecture`), no
 * biases, NEOX RoPE. Its fused `query_key_value` holds, per KV group, the
 * group's query heads then one key and one value head; the converter
 * regroups it as all q, all k, all v (`tensor_data_layout` "jploski").
 *
 * @module
 */

import type { Family, LayerTensors } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { activation, GELU } from "../config_fields.ts";
import { unwrittenRopeRefusal } from "../fixed_rope.ts";

/** The context the converter writes ("not in config.json"). */
const FALCON_CONTEXT = 2048;

/** The KV heads transformers computes with: Falcon-7B's `multi_query` means one. */
function kvHeads(w: KvWriter): number {
  const heads = w.need("num_attention_heads", "n_head");
  if (w.hparams["new_decoder_architecture"] === true) {
    return w.num("num_kv_heads", "n_head_kv") ?? heads;
  }
  return w.hparams["multi_query"] === false ? heads : 1;
}

/**
 * How many LayerNorms transformers' `FalconDecoderLayer` builds before the
 * parallel attention and MLP: two (`ln_attn`, `ln_mlp`) where
 * `num_ln_in_parallel_attn` is 2 (its default with
 * `new_decoder_architecture`), else one (`input_layernorm`).
 */
function lnCount(h: Readonly<Record<string, unknown>>): unknown {
  const given = h["num_ln_in_parallel_attn"];
  return given ?? (h["new_decoder_architecture"] === true ? 2 : 1);
}

/**
 * The layers with a second LayerNorm (`ln_attn`, GGUF `attn_norm_2`), which
 * llama.cpp's falcon uses whenever the file has one: exactly those
 * `num_ln_in_parallel_attn` gives two (1 beside Falcon-40B's `ln_attn`
 * was written with exit 0).
 */
function secondNorms(h: Readonly<Record<string, unknown>>): LayerTensors | undefined {
  const layers = h["num_hidden_layers"] ?? h["n_layer"];
  if (typeof layers !== "number" || !Number.isSafeInteger(layers) || layers <= 0) return undefined;
  const two = h["parallel_attn"] !== false && lnCount(h) === 2;
  const given = h["num_ln_in_parallel_attn"];
  return {
    kind: "ATTN_NORM_2",
    instead: "ATTN_NORM",
    has: Array.from({ length: layers }, () => two),
    from: given == null
      ? `new_decoder_architecture ${JSON.stringify(h["new_decoder_architecture"] ?? false)} ` +
        `(no num_ln_in_parallel_attn)`
      : `num_ln_in_parallel_attn ${JSON.stringify(given)}`,
    tensor: "a second LayerNorm (ln_attn)",
    with: "a layer of two (ln_attn, ln_mlp)",
    without: "a layer of one (input_layernorm)",
  };
}

/** `FalconModel.set_gguf_parameters`. */
function writeFalconKv(w: KvWriter): void {
  const hidden = w.need("hidden_size");
  w.u32("context_length", FALCON_CONTEXT);
  w.set("tensor_data_layout", "STRING", "jploski");
  w.u32("embedding_length", hidden);
  w.cite("hidden_size");
  w.u32("feed_forward_length", 4 * hidden);
  w.u32("block_count", w.need("num_hidden_layers", "n_layer"));
  w.u32("attention.head_count", w.need("num_attention_heads", "n_head"));
  w.u32("attention.head_count_kv", kvHeads(w));
  w.f32("attention.layer_norm_epsilon", w.need("layer_norm_epsilon"));
  w.fileType();
}

/**
 * What llama.cpp's falcon cannot run as written: ALiBi, biases, sequential
 * attention and MLP, another MLP width than 4 × hidden, a RoPE base or
 * scaling (no key for any of them).
 */
function falconUnsupported(w: KvWriter): string | undefined {
  const why = (what: string, assumed: string) =>
    `its config.json has ${what}; llama.cpp's falcon reads no key for it and computes as ` +
    `with ${assumed}`;
  if (w.hparams["alibi"] === true) return why("alibi true", "RoPE");
  if (w.hparams["bias"] === true) return why("bias true", "no biases");
  if (w.hparams["parallel_attn"] === false) {
    return why("parallel_attn false", "attention and MLP in parallel");
  }
  // transformers' FalconDecoderLayer knows one or two; with the new
  // architecture and another count it feeds its MLP nothing.
  const norms = lnCount(w.hparams);
  if (norms !== 1 && norms !== 2) {
    return `its config.json has num_ln_in_parallel_attn ${JSON.stringify(norms)}; ` +
      `transformers' Falcon builds one LayerNorm (1) or two (2), and llama.cpp's falcon ` +
      `one, or two where the file has ln_attn`;
  }
  const hidden = w.need("hidden_size");
  const ff = w.num("ffn_hidden_size") ?? 4 * hidden;
  if (ff !== 4 * hidden) return why(`ffn_hidden_size ${ff}`, `4 × hidden_size = ${4 * hidden}`);
  return unwrittenRopeRefusal(w);
}

/**
 * `query_key_value`: per KV group, the group's query heads then one key and
 * one value head (`[groups, heads / groups + 2, head_dim]`), as GGUF's all
 * q, all k, all v. The groups are read from the shape.
 */
function qkvByGroup(name: string, shape: readonly number[], heads: number): number[] | undefined {
  if (!/^transformer\.h\.\d+\.self_attention\.query_key_value\.weight$/.test(name)) {
    return undefined;
  }
  const [rows = 0, hidden = 0] = shape;
  const headDim = heads > 0 ? hidden / heads : 0;
  const kv = headDim > 0 ? (rows / headDim - heads) / 2 : 0;
  if (!Number.isInteger(kv) || kv <= 0 || heads % kv !== 0) {
    throw new RangeError(
      `Cannot regroup "${name}": [${shape}] is not ${heads} query heads and as many KV groups ` +
        `as divide them`,
    );
  }
  const r = heads / kv;
  const group = (g: number) => g * (r + 2);
  const groups = Array.from({ length: kv }, (_, g) => g);
  return [
    ...groups.flatMap((g) => Array.from({ length: r }, (_, j) => group(g) + j)),
    ...groups.map((g) => group(g) + r),
    ...groups.map((g) => group(g) + r + 1),
  ];
}

/**
 * Falcon-7B's single LayerNorm is `input_layernorm`; `ln_mlp` only goes with
 * an `ln_attn` (`attn_norm_2`), which a GGUF read back shows.
 */
function oneNormBack(name: string, ggufNames?: ReadonlySet<string>): string {
  const m = /^transformer\.h\.(\d+)\.ln_mlp\.(weight|bias)$/.exec(name);
  if (m === null || ggufNames === undefined || ggufNames.has(`blk.${m[1]}.attn_norm_2.weight`)) {
    return name;
  }
  return `transformer.h.${m[1]}.input_layernorm.${m[2]}`;
}

/** Falcon 7B/40B/180B. */
export const FALCON: Family = {
  name: "falcon",
  source: "llama.cpp conversion/falcon.py FalconModel; transformers FalconForCausalLM",
  configFields: {
    written: [
      "num_kv_heads",
      "multi_query",
      "new_decoder_architecture",
      "layer_norm_epsilon",
    ],
    // Against the tensors: ln_attn in exactly the layers it gives two LayerNorms.
    checked: ["alibi", "bias", "parallel_attn", "ffn_hidden_size", "num_ln_in_parallel_attn"],
    assumed: [activation("activation", GELU, "gelu")],
  },
  hfArchitectures: ["FalconForCausalLM"],
  hfModelTypes: ["falcon"],
  ggufArchitecture: "falcon",
  ggufRopeType: "neox",
  hfBlockPrefix: "transformer.h",
  // gguf-py's names: Falcon-40B's ln_mlp is attn_norm and its ln_attn attn_norm_2
  // (src/models/falcon.cpp feeds attention from attn_norm_2 when there is one).
  // Read back, attn_norm is ln_mlp (first here) only beside an attn_norm_2: hfNameBack.
  blockNames: [
    ["attn_norm", "ln_mlp"],
    ["attn_norm", "input_layernorm"],
    ["attn_norm_2", "ln_attn"],
    ["attn_qkv", "self_attention.query_key_value"],
    ["attn_output", "self_attention.dense"],
    ["ffn_up", "mlp.dense_h_to_4h"],
    ["ffn_down", "mlp.dense_4h_to_h"],
  ],
  globalNames: [
    ["token_embd", "transformer.word_embeddings"],
    ["output_norm", "transformer.ln_f"],
  ],
  permutesQk: false,
  tiedByDefault: true,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeFalconKv,
    unsupported: falconUnsupported,
    rowBlocks: qkvByGroup,
    hfNameBack: oneNormBack,
    layerTensors: secondNorms,
  },
};
