// This module is browser compatible.

/**
 * Mamba (`MambaForCausalLM`), Falcon-Mamba (`FalconMambaForCausalLM`) and
 * Mamba-2 (`Mamba2ForCausalLM`): state-space models without attention, after
 * llama.cpp's `MambaModel` and `Mamba2Model` (conversion/mamba.py). Their
 * blocks live under `backbone.layers`; the SSM keys (conv kernel, inner and
 * state sizes, time-step rank, Mamba-2's group count) replace the attention
 * ones (`feed_forward_length` and `attention.head_count` written as 0, the
 * context as 2²⁰); `A_log` becomes `ssm_a` = −exp(A_log) and the
 * convolution is squeezed (`ssm.ts`). Falcon-Mamba is Mamba's GGUF with
 * `ssm.dt_b_c_rms` true (weightless RMS norms on the time step, B and C).
 *
 * llama.cpp's graphs load no in/out projection bias and require the
 * convolution's; Mamba runs only an inner width of twice the hidden size, and
 * Mamba-2 clamps no time step: a config otherwise is refused for GGUF.
 *
 * @module
 */

import { activation, type ConfigFields, SILU } from "../config_fields.ts";
import type { Family } from "../family.ts";
import type { KvWriter } from "../kv.ts";
import { oneColumn, squeezed, type SsmTensor, ssmTensors } from "../ssm.ts";
import { impliedKeys } from "../implied_keys.ts";

const BLOCKS = "backbone.layers";

/** Python's `x or default`: a missing, null or zero value is the default. */
export function or(value: unknown, fallback: number): number {
  return typeof value === "number" && value !== 0 ? value : fallback;
}

/** What transformers only uses to initialise or to pick one of its equal scan paths. */
const MAMBA_IRRELEVANT: Readonly<Record<string, string>> = {
  time_step_floor: "initialisation only (the trained dt_proj bias holds it)",
  time_step_init_scheme: "initialisation only",
  time_step_max: "initialisation only",
  time_step_min: "initialisation only",
  time_step_scale: "initialisation only",
  rescale_prenorm_residual: "initialisation only",
  residual_in_fp32: "the residual's type in half-precision runs; llama.cpp adds it in F32",
  use_mambapy: "which of transformers' scan implementations runs (the same values)",
  use_associative_scan: "which of transformers' scan implementations runs (the same values)",
};

/** The projections' biases and the convolution's, which llama.cpp's graphs fix. */
const MAMBA_ASSUMED = [
  activation("hidden_act", SILU),
  { field: "use_bias", hfDefault: false, llamaCpp: false },
  { field: "use_conv_bias", hfDefault: true, llamaCpp: true },
];

const MAMBA_FIELDS: ConfigFields = {
  written: ["state_size", "conv_kernel", "time_step_rank", "layer_norm_epsilon"],
  checked: ["expand"],
  assumed: MAMBA_ASSUMED,
  irrelevant: MAMBA_IRRELEVANT,
};

/**
 * The keys both converter classes write first: an arbitrary context, no
 * feed-forward or attention heads ("unused, but seemingly required when
 * loading"), the blocks and the convolution's kernel.
 */
function writeSsmHead(w: KvWriter, dModel: number): void {
  w.u32("context_length", 2 ** 20);
  w.u32("embedding_length", dModel);
  w.u32("feed_forward_length", 0);
  w.u32("attention.head_count", 0);
  w.u32("block_count", w.need("n_layers", "num_hidden_layers", "n_layer", "num_layers"));
  w.u32("ssm.conv_kernel", or(w.find("conv_kernel", "d_conv"), 4));
}

/** `MambaModel.set_gguf_parameters`. */
function writeMambaKv(w: KvWriter): void {
  const dModel = w.need("hidden_size", "d_model");
  writeSsmHead(w, dModel);
  w.u32("ssm.inner_size", or(w.find("intermediate_size", "d_inner"), 2 * dModel));
  w.u32("ssm.state_size", or(w.find("state_size", "d_state"), 16));
  w.u32("ssm.time_step_rank", or(w.find("time_step_rank", "dt_rank"), Math.ceil(dModel / 16)));
  w.f32("attention.layer_norm_rms_epsilon", or(w.find("layer_norm_epsilon", "rms_norm_eps"), 1e-5));
  w.set("ssm.dt_b_c_rms", "BOOL", w.hparams["model_type"] === "falcon_mamba");
  w.fileType();
}

function mambaUnsupported(w: KvWriter): string | undefined {
  const dModel = w.num("hidden_size", "d_model") ?? 0;
  const inner = or(w.find("intermediate_size", "d_inner"), 2 * dModel);
  if (inner !== 2 * dModel) {
    return `its config.json has an inner width of ${inner} for a hidden size of ${dModel} ` +
      `(expand ${w.hparams["expand"]}); llama.cpp's mamba runs only an expansion factor of 2`;
  }
  return undefined;
}

/**
 * Mamba's made tensors (`MambaModel.modify_tensors`) under a mixer module
 * (`mixer`; Jamba's `mamba`).
 *
 * @param mixer The module below the block holding the SSM.
 */
export function mambaTensors(mixer: string): readonly SsmTensor[] {
  return [
    { piece: `${mixer}.A_log`, gguf: "ssm_a", shape: (s) => s, negExp: true },
    { piece: `${mixer}.D`, gguf: "ssm_d", shape: (s) => s },
    { piece: `${mixer}.conv1d.weight`, gguf: "ssm_conv1d.weight", shape: squeezed },
  ];
}

const MAMBA_SSM = mambaTensors("mixer");

/** The GGUF names of a Mamba block; `A_log`, `D` and the convolution's weight are made (`ssm.ts`). */
const MAMBA_BLOCK: readonly (readonly [string, string])[] = [
  ["attn_norm", "norm"],
  ["ssm_in", "mixer.in_proj"],
  ["ssm_conv1d", "mixer.conv1d"],
  ["ssm_x", "mixer.x_proj"],
  ["ssm_dt", "mixer.dt_proj"],
  ["ssm_out", "mixer.out_proj"],
];

export const READ_BACK_REFUSAL =
  "aprkit does not read a Mamba GGUF back into Hugging Face's layout " +
  "(it holds A_log as ssm_a = −exp(A_log), which log(−a) gives back only to within rounding); " +
  "--keep-names keeps its GGUF tensors";

/** Mamba (and Falcon-Mamba, the same GGUF architecture). */
export const MAMBA: Family = {
  name: "mamba",
  source: "llama.cpp conversion/mamba.py MambaModel; transformers MambaForCausalLM",
  configFields: MAMBA_FIELDS,
  hfArchitectures: ["MambaForCausalLM", "MambaLMHeadModel"],
  hfModelTypes: ["mamba"],
  ggufArchitecture: "mamba",
  ggufRopeType: "none",
  blockNames: MAMBA_BLOCK,
  hfBlockPrefix: BLOCKS,
  globalNames: [["token_embd", "backbone.embeddings"], ["output_norm", "backbone.norm_f"]],
  permutesQk: false,
  tiedByDefault: true,
  ggufRenamesOnly: false,
  ggufReadBackRefusal: READ_BACK_REFUSAL,
  gguf: {
    writeKv: writeMambaKv,
    // transformers' inner width, whatever intermediate_size (which the converter writes) says.
    impliedKeys: (h) => impliedKeys(h, [["ssm.inner_size", "expand", "hidden_size"]]),
    unsupported: mambaUnsupported,
    made: (tensors, w) => ssmTensors(tensors, w, BLOCKS, MAMBA_SSM),
  },
};

/** Falcon-Mamba: Mamba with weightless RMS norms on the time step, B and C. */
export const FALCON_MAMBA: Family = {
  ...MAMBA,
  name: "falcon_mamba",
  source: "llama.cpp conversion/mamba.py MambaModel; transformers FalconMambaForCausalLM",
  configFields: {
    ...MAMBA_FIELDS,
    irrelevant: {
      ...MAMBA_IRRELEVANT,
      // Published falcon-mamba-7b: 1e-6 here, layer_norm_epsilon 1e-5.
      mixer_rms_eps: "llama.cpp normalises the time step, B and C with layer_norm_epsilon " +
        "instead (no key for it); 1e-5 for 1e-6 moved the fixture's log-probs by 0.0002",
    },
  },
  hfArchitectures: ["FalconMambaForCausalLM"],
  hfModelTypes: ["falcon_mamba"],
};

/**
 * Whether a Mamba-2 time-step clamp (`time_step_limit`) clamps nothing:
 * transformers applies it, llama.cpp never clamps. transformers 5 writes its
 * default (0, ∞) as `[0.0, {"__float__": "Infinity"}]`.
 */
export function unclamped(limit: unknown): boolean {
  if (limit === undefined || limit === null) return true;
  if (!Array.isArray(limit) || limit.length !== 2) return false;
  const [low, high] = limit;
  const infinite = (v: unknown) =>
    v === "Infinity" || v === Infinity ||
    (v !== null && typeof v === "object" &&
      (v as Record<string, unknown>)["__float__"] === "Infinity");
  return low === 0 && infinite(high);
}

/** `Mamba2Model.__init__`'s sizes. */
function mamba2Sizes(w: KvWriter): { dModel: number; inner: number; groups: number } {
  const dModel = w.need("hidden_size", "d_model", "dim");
  const expand = or(w.find("mamba_expand", "expand"), 2);
  const inner = or(w.find("mamba_d_ssm", "intermediate_size", "d_inner"), expand * dModel);
  return { dModel, inner, groups: or(w.find("n_groups"), 1) };
}

/** `Mamba2Model.set_gguf_parameters`. */
function writeMamba2Kv(w: KvWriter): void {
  writeSsmHead(w, mamba2Sizes(w).dModel);
  // Read again after the keys before: the inner width's key names the fields it came from.
  const { inner, groups } = mamba2Sizes(w);
  w.u32("ssm.inner_size", inner);
  w.u32("ssm.state_size", or(w.find("state_size", "d_state"), 128));
  const headDim = or(w.find("mamba_d_head", "head_dim"), 64);
  w.u32("ssm.time_step_rank", Math.trunc(inner / headDim));
  w.u32("ssm.group_count", groups);
  w.f32("attention.layer_norm_rms_epsilon", or(w.find("layer_norm_epsilon", "rms_norm_eps"), 1e-5));
  w.fileType();
}

/**
 * Why a Mamba-2 time-step clamp llama.cpp does not apply is refused, or
 * `undefined` when it clamps nothing.
 *
 * @param w The writer over `config.json`.
 * @param limit The clamp (`time_step_limit`, or an older config's name for it).
 */
export function clampRefusal(
  w: KvWriter,
  limit: unknown = w.hparams["time_step_limit"],
): string | undefined {
  if (unclamped(limit)) return undefined;
  return `its config.json has time_step_limit ${JSON.stringify(limit)}; llama.cpp's ${w.arch} ` +
    `reads no key for it and computes as with [0, Infinity] (no clamp)`;
}

function mamba2Unsupported(w: KvWriter): string | undefined {
  return clampRefusal(w);
}

/**
 * Mamba-2's reshaped tensors (`Mamba2Model.modify_tensors`) under a mixer
 * module (`mixer`; the hybrids' `mamba`), its gated norm grouped by the
 * family's own reading of the inner width and group count.
 *
 * @param mixer The module below the block holding the SSM.
 * @param sizes The inner width and group count, from the config.
 */
export function mamba2Tensors(
  mixer: string,
  sizes: (w: KvWriter) => { inner: number; groups: number },
): readonly SsmTensor[] {
  return [
    { piece: `${mixer}.A_log`, gguf: "ssm_a", shape: oneColumn, negExp: true },
    { piece: `${mixer}.D`, gguf: "ssm_d", shape: oneColumn },
    { piece: `${mixer}.conv1d.weight`, gguf: "ssm_conv1d.weight", shape: squeezed },
    {
      piece: `${mixer}.norm.weight`,
      gguf: "ssm_norm.weight",
      shape: (_, w) => {
        const { inner, groups } = sizes(w);
        return [groups, inner / groups];
      },
    },
  ];
}

const MAMBA2_SSM = mamba2Tensors("mixer", mamba2Sizes);

/** The converter's `filter_tensors`: Mamba-2's time-step bias is read as `dt_proj`'s. */
export const DT_BIAS_NAMES = {
  hfName: (name: string): string => name.replace(/\.dt_bias$/, ".dt_proj.bias"),
  hfNameBack: (name: string): string => name.replace(/\.dt_proj\.bias$/, ".dt_bias"),
} as const;

/** Mamba-2. */
export const MAMBA2: Family = {
  ...MAMBA,
  name: "mamba2",
  source: "llama.cpp conversion/mamba.py Mamba2Model; transformers Mamba2ForCausalLM",
  configFields: {
    written: [
      "state_size",
      "conv_kernel",
      "expand",
      "head_dim",
      "n_groups",
      "num_heads",
      "layer_norm_epsilon",
    ],
    checked: ["time_step_limit"],
    assumed: MAMBA_ASSUMED,
    irrelevant: {
      ...MAMBA_IRRELEVANT,
      chunk_size: "the chunked scan computes the same values as one pass",
      time_step_rank: "not read by Mamba-2's mixer (one time step per head, from in_proj)",
    },
  },
  hfArchitectures: ["Mamba2ForCausalLM"],
  hfModelTypes: ["mamba2"],
  ggufArchitecture: "mamba2",
  tiedByDefault: false,
  blockNames: [
    ...MAMBA_BLOCK.filter(([gguf]) => gguf !== "ssm_x"),
    ["ssm_norm", "mixer.norm"],
  ],
  gguf: {
    writeKv: writeMamba2Kv,
    // transformers' inner width and heads (the converter divides the inner width by head_dim).
    impliedKeys: (h) =>
      impliedKeys(h, [
        ["ssm.inner_size", "expand", "hidden_size"],
        ["ssm.inner_size", "head_dim", "num_heads"],
        ["ssm.time_step_rank", "num_heads"],
      ]),
    unsupported: mamba2Unsupported,
    made: (tensors, w) => ssmTensors(tensors, w, BLOCKS, MAMBA2_SSM),
    ...DT_BIAS_NAMES,
  },
};
