// This module is browser compatible.

/**
 * Gemma 3n's text model (`Gemma3nForCausalLM`, the language model of
 * `Gemma3nForConditionalGeneration`), after llama.cpp's `Gemma3NModel`
 * (conversion/gemma.py): Gemma 3's keys and block (norms not shifted:
 * Gemma 3n's RMSNorm multiplies by `w`), with per-layer embeddings
 * (`per_layer_token_embd`, padded with zero rows to `vocab_size`), AltUp
 * (its projections stacked into one 3-D tensor each), Laurel, the
 * activation sparsity scales (the standard normal's quantiles of
 * `activation_sparsity_pattern`) and the sliding-window pattern.
 *
 * llama.cpp de3ff81 reads no key for several of Gemma 3n's sizes
 * (`src/models/gemma3n.cpp`, `llama-hparams.h`); a config that differs from
 * what it assumes is refused (`unsupported`).
 *
 * @module
 */

import { type DType, tensorByteLength } from "../../dtype.ts";
import type { TensorInfo } from "../../tensor.ts";
import type { Family, MadeTensor } from "../family.ts";
import { zeroBytes } from "../transforms.ts";
import type { KvWriter } from "../kv.ts";
import { writeGemma3Keys } from "./gemma3.ts";
import { GEMMA2_BLOCK } from "./gemma2.ts";
import { activation, type ConfigFields, GELU } from "../config_fields.ts";

/** Gemma 3n's block: Gemma 2's, then AltUp, Laurel and the per-layer input. */
const GEMMA3N_BLOCK: readonly (readonly [string, string])[] = [
  ...GEMMA2_BLOCK,
  ["altup_correct_scale", "altup.correct_output_scale"],
  ["altup_correct_coef", "altup.correction_coefs"],
  ["altup_router", "altup.modality_router"],
  ["altup_predict_coef", "altup.prediction_coefs"],
  ["altup_router_norm", "altup.router_norm"],
  ["laurel_l", "laurel.linear_left"],
  ["laurel_r", "laurel.linear_right"],
  ["laurel_post_norm", "laurel.post_laurel_norm"],
  ["inp_gate", "per_layer_input_gate"],
  ["proj", "per_layer_projection"],
  ["post_norm", "post_per_layer_input_norm"],
];

/** Whole-model tensors besides the common ones. */
const GEMMA3N_GLOBALS: readonly (readonly [string, string])[] = [
  ["per_layer_token_embd", "model.embed_tokens_per_layer"],
  ["per_layer_model_proj", "model.per_layer_model_projection"],
  ["per_layer_proj_norm", "model.per_layer_projection_norm"],
];

/** The converter's `set_gguf_parameters`: Gemma 3's keys, then Gemma 3n's. */
function writeGemma3nKv(w: KvWriter): void {
  writeGemma3Keys(w);
  w.u32("altup.active_idx", w.need("altup_active_idx"));
  w.u32("altup.num_inputs", w.need("altup_num_inputs"));
  w.u32("embedding_length_per_layer_input", w.need("hidden_size_per_layer_input"));
  w.u32("attention.shared_kv_layers", w.need("num_kv_shared_layers"));
  w.setArray("activation_sparsity_scale", "FLOAT32", sparsityPattern(w).map(torchNormalIcdf));
  const types = w.hparams["layer_types"];
  if (!Array.isArray(types)) throw new RangeError("config.json has no layer_types");
  w.setArray(
    "attention.sliding_window_pattern",
    "BOOL",
    types.map((t) => t === "sliding_attention"),
  );
}

function sparsityPattern(w: KvWriter): number[] {
  const pattern = w.hparams["activation_sparsity_pattern"];
  if (!Array.isArray(pattern) || !pattern.every((p) => typeof p === "number" && p >= 0 && p <= 1)) {
    throw new RangeError("config.json has no activation_sparsity_pattern (numbers in [0, 1])");
  }
  return pattern as number[];
}

/** llama.cpp de3ff81's fixed values for what it reads no key for. */
const LLAMA_CPP_ASSUMES = {
  altup_num_inputs: 4,
  altup_active_idx: 0,
  laurel_rank: 64,
  hidden_size_per_layer_input: 256,
} as const;
/** llama.cpp keeps KV for the first 20 layers; later ones reuse them (`n_layer_kv_from_start`). */
const KV_LAYERS = 20;
/** llama.cpp sparsifies the first 10 layers' activations at the 0.95 quantile, no others. */
const SPARSE_LAYERS = 10;

function unsupported(w: KvWriter): string | undefined {
  for (const [key, value] of Object.entries(LLAMA_CPP_ASSUMES)) {
    if (w.hparams[key] !== value) {
      return `Gemma 3n's ${key} is ${JSON.stringify(w.hparams[key])}; llama.cpp reads no key ` +
        `for it and assumes ${value}`;
    }
  }
  // What is missing is reported by writeKv (the converter's own needs).
  const layers = w.num("num_hidden_layers");
  const shared = w.num("num_kv_shared_layers");
  if (layers === undefined || shared === undefined) return undefined;
  const expected = layers > KV_LAYERS ? layers - KV_LAYERS : 0;
  if (shared !== expected) {
    return `Gemma 3n's num_kv_shared_layers is ${shared}; llama.cpp shares the KV of layers from ` +
      `${KV_LAYERS} on, which for ${layers} layers is ${expected}`;
  }
  const pattern = w.hparams["activation_sparsity_pattern"];
  if (!Array.isArray(pattern)) return undefined;
  if (pattern.some((p, i) => p !== (i < SPARSE_LAYERS ? 0.95 : 0))) {
    return `Gemma 3n's activation_sparsity_pattern is [${pattern}]; llama.cpp assumes 0.95 for ` +
      `the first ${SPARSE_LAYERS} layers and 0 after`;
  }
  return undefined;
}

/**
 * `torch.distributions.Normal(0, 1).icdf(torch.tensor(p, dtype=torch.float32))`
 * as the converter computes it, in float32: `erfinv(2p − 1) · √2`. The
 * inverse error function is computed in double and rounded to float32, then
 * multiplied by float32 √2 and rounded again, as torch does.
 *
 * @param p The probability (float32).
 * @returns The quantile, a float32 value (±Infinity at 0 and 1).
 */
export function torchNormalIcdf(p: number): number {
  const y = Math.fround(Math.fround(2 * Math.fround(p)) - 1);
  return Math.fround(Math.fround(erfinv(y)) * Math.fround(Math.SQRT2));
}

/** The inverse error function, to double precision: Newton's method from a rough start. */
function erfinv(y: number): number {
  if (y <= -1) return y === -1 ? -Infinity : NaN;
  if (y >= 1) return y === 1 ? Infinity : NaN;
  if (y < 0) return -erfinv(-y);
  if (y === 0) return 0;
  // Start (Giles' single-precision approximation's central form is enough for Newton).
  const w = -Math.log((1 - y) * (1 + y));
  let x = w < 5
    ? y * (1.50140941 + (w - 2.5) * (0.246640727 + (w - 2.5) * -0.00417768164))
    : y * (2.83297682 + (Math.sqrt(w) - 3) * 1.00167406);
  for (let i = 0; i < 60; i++) {
    // erf(x) − y, as (1 − y) − erfc(x) where erf(x) is near 1.
    const f = x < 2 ? erf(x) - y : (1 - y) - erfc(x);
    const step = f / (2 / Math.sqrt(Math.PI) * Math.exp(-x * x));
    x -= step;
    if (Math.abs(step) <= Math.abs(x) * 1e-16) break;
  }
  return x;
}

/** erf(x) for 0 ≤ x < 2: its Taylor series (terms below 1e−17 of the sum stop it). */
function erf(x: number): number {
  let term = x;
  let sum = x;
  for (let n = 1; n < 200; n++) {
    term *= -x * x / n;
    const add = term / (2 * n + 1);
    sum += add;
    if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
  }
  return 2 / Math.sqrt(Math.PI) * sum;
}

/** erfc(x) for x ≥ 2: its continued fraction, by Lentz's method. */
function erfc(x: number): number {
  // erfc(x) = e^(−x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …))))
  const tiny = 1e-300;
  let f = x;
  let c = x;
  let d = 0;
  for (let n = 1; n < 500; n++) {
    const a = n / 2;
    d = x + a * d;
    d = d === 0 ? tiny : d;
    c = x + a / c;
    c = c === 0 ? tiny : c;
    d = 1 / d;
    const delta = c * d;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return Math.exp(-x * x) / Math.sqrt(Math.PI) / f;
}

/** Gemma 3n: what llama.cpp hard-codes is checked by `unsupported`. */
const GEMMA3N_FIELDS: ConfigFields = {
  written: [
    "final_logit_softcapping",
    "sliding_window",
    "layer_types",
    "vocab_size_per_layer_input",
  ],
  checked: [
    "altup_num_inputs",
    "altup_active_idx",
    "laurel_rank",
    "hidden_size_per_layer_input",
    "num_kv_shared_layers",
    "activation_sparsity_pattern",
  ],
  assumed: [
    activation("hidden_activation", GELU, "gelu_pytorch_tanh"),
    // src/models/gemma3n.cpp always multiplies by altup_correct_scale.
    { field: "altup_correct_scale", hfDefault: true, llamaCpp: true },
  ],
  irrelevant: { altup_coef_clip: "transformers clips the AltUp coefficients in training only" },
};

const Q_PROJ = /^model\.layers\.(\d+)\.self_attn\.q_proj\.weight$/;
const FLOATS: ReadonlySet<DType> = new Set(["F32", "F16", "BF16"]);

/**
 * transformers 5 saves no K/V projections or K norm for the layers that reuse
 * an earlier layer's KV (`num_kv_shared_layers`: from layer 20 of E2B/E4B on),
 * while the published checkpoints hold them and llama.cpp's gemma3n loads all
 * three for every layer (a file without them is one it refuses to load). It
 * reads them only where it computes KV (`hparams.has_kv(il)`), so the missing
 * ones are written as zeros, shaped as the published ones, in the layer's
 * Q type; a layer that computes its own KV and lacks them is left to fail.
 */
function sharedKvMade(tensors: readonly TensorInfo[], w: KvWriter): MadeTensor[] {
  const layers = w.num("num_hidden_layers");
  const shared = w.num("num_kv_shared_layers") ?? 0;
  const kvHeads = w.num("num_key_value_heads");
  const headDim = w.num("head_dim");
  const hidden = w.num("hidden_size");
  if (
    layers === undefined || shared <= 0 || kvHeads === undefined || headDim === undefined ||
    hidden === undefined
  ) return [];
  const names = new Set(tensors.map((t) => t.name));
  const made: MadeTensor[] = [];
  for (const t of tensors) {
    const layer = Number(Q_PROJ.exec(t.name)?.[1] ?? -1);
    if (layer < layers - shared) continue;
    const dtype = FLOATS.has(t.dtype) ? t.dtype : "F32";
    const pieces = [
      ["k_proj", "attn_k", [kvHeads * headDim, hidden]],
      ["v_proj", "attn_v", [kvHeads * headDim, hidden]],
      ["k_norm", "attn_k_norm", [headDim]],
    ] as const;
    for (const [piece, gguf, shape] of pieces) {
      if (names.has(`model.layers.${layer}.self_attn.${piece}.weight`)) continue;
      const byteLength = tensorByteLength(dtype, shape);
      made.push({
        info: { name: `blk.${layer}.${gguf}.weight`, dtype, shape: [...shape], byteLength },
        needs: [],
        first: true,
        open: () => zeroBytes(byteLength),
      });
    }
  }
  return made;
}

/** Gemma 3n, text only (the language model of `Gemma3nForConditionalGeneration`). */
export const GEMMA3N: Family = {
  name: "gemma3n",
  source: "llama.cpp conversion/gemma.py Gemma3NModel; transformers Gemma3nForCausalLM",
  configFields: GEMMA3N_FIELDS,
  hfArchitectures: ["Gemma3nForCausalLM"],
  hfModelTypes: ["gemma3n_text", "gemma3n"],
  ggufArchitecture: "gemma3n",
  blockNames: GEMMA3N_BLOCK,
  globalNames: GEMMA3N_GLOBALS,
  permutesQk: false,
  ggufRopeType: "neox",
  tiedByDefault: true,
  ggufRenamesOnly: false,
  gguf: {
    writeKv: writeGemma3nKv,
    unsupported,
    made: sharedKvMade,
    // Gemma3NModel.filter_tensors: a parameter ending `_scale` is named as a `.weight`.
    hfName: (name) => name.endsWith("_scale") ? `${name}.weight` : name,
    // The AltUp projections, `model.altup_projections.{0,1,2}.weight`, as one [3, n, n] tensor each.
    stacks: [
      { hf: "model.altup_projections", gguf: "altup_proj" },
      { hf: "model.altup_unembed_projections", gguf: "altup_unembd_proj" },
    ],
    // Both embeddings padded with zero rows to vocab_size (the vision and audio tokens' ids).
    paddedRows: (ggufName, hparams) =>
      ggufName === "token_embd.weight" || ggufName === "per_layer_token_embd.weight"
        ? (typeof hparams["vocab_size"] === "number" ? hparams["vocab_size"] : undefined)
        : undefined,
  },
  sentencePiece: { addSpacePrefix: false },
};
