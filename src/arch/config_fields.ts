// This module is browser compatible.

/**
 * Every field of a family's transformers config class, accounted for: each
 * is written to GGUF (a key, or the shapes of the tensors llama.cpp loads),
 * checked against the value llama.cpp's graph hard-codes (a config that sets
 * it otherwise is refused for GGUF output), warned about (llama.cpp computes
 * otherwise only past a context length), or irrelevant to inference. A
 * family declares its own fields in its `configFields`; the groups every
 * family shares live here, so a new family only adds what is its own, and
 * tests/arch/config_fields_test.ts fails on a field of its transformers
 * class (tests/testdata/arch/config_fields.json) that no rule names.
 *
 * @module
 */

import type { KvWriter } from "./kv.ts";

/**
 * A field llama.cpp reads no key for and computes with one value: a config
 * that sets another is refused, naming the field, its value and llama.cpp's.
 */
export interface Assumption {
  /** The `config.json` field. */
  readonly field: string;
  /** The config class's default, what transformers computes with when `config.json` leaves the field out. */
  readonly hfDefault: unknown;
  /**
   * The defaults of the family's other config classes that differ, by their
   * `model_type` (Gemma 4 unified's text config: `use_bidirectional_attention`
   * "vision"); absent: all default to `hfDefault`.
   */
  readonly hfDefaultByType?: Readonly<Record<string, unknown>>;
  /**
   * The value llama.cpp computes as (a JSON value, or one derived from the
   * config: Gemma 2's attention scale from the head size).
   */
  readonly llamaCpp: unknown;
  /** Values transformers treats as `llamaCpp` (`"swish"` for `"silu"`); absent: only it. */
  readonly alike?: readonly unknown[];
}

/** Fields whose difference from transformers llama.cpp shows only past a context length: one warning. */
export interface Caveat {
  /** The fields it reads. */
  readonly fields: readonly string[];
  /**
   * The warning for a config, or `undefined` when llama.cpp computes it as
   * transformers does.
   */
  warn(w: KvWriter): string | undefined;
}

/** How a family accounts for the fields of its transformers config class. */
export interface ConfigFields {
  /** Read into GGUF keys or tensor shapes, as llama.cpp's converter reads them (beyond {@linkcode WRITTEN_BY_TEXT_MODEL}). */
  readonly written?: readonly string[];
  /** Compared with the value llama.cpp hard-codes; a config otherwise is refused. */
  readonly assumed?: readonly Assumption[];
  /** Checked by the family's own `gguf.unsupported`, which names them in its refusal. */
  readonly checked?: readonly string[];
  /** Written or not, llama.cpp computes them otherwise past a context length: warned. */
  readonly caveats?: readonly Caveat[];
  /** Fields that do not change inference, with why (beyond {@linkcode IRRELEVANT}). */
  readonly irrelevant?: Readonly<Record<string, string>>;
  /**
   * Whether llama.cpp's graph reads YaRN's `beta_fast`/`beta_slow` keys
   * (mistral3, grok); every other architecture computes with 32 and 1.
   */
  readonly readsYarnBetas?: boolean;
  /**
   * RoPE types beyond the common ones that the family's own keys carry
   * (HunYuan's `dynamic` with `alpha`, written as a scaled base); its
   * `gguf.unsupported` checks them.
   */
  readonly ropeTypes?: readonly string[];
}

const TOKEN_IDS = "the vocabulary's special tokens, written from the tokenizer files";
const TRAINING = "training only (dropout, losses, initialisation)";
const OUTPUT_OPTIONS = "what a transformers forward call returns, not what it computes";

/** Fields of every config class that do not change what a model computes. */
export const IRRELEVANT: Readonly<Record<string, string>> = {
  transformers_version: "provenance",
  architectures: "names the family (the registry reads it), nothing it computes",
  model_type: "names the family (the registry reads it), nothing it computes",
  dtype: "the checkpoint's storage type; the tensors carry their own",
  torch_dtype: "the checkpoint's storage type; the tensors carry their own",
  id2label: "classification heads only",
  label2id: "classification heads only",
  problem_type: "classification heads only",
  is_encoder_decoder: "false for every causal LM aprkit converts",
  chunk_size_feed_forward: "chunked feed-forward computes the same values (memory only)",
  return_dict: OUTPUT_OPTIONS,
  output_hidden_states: OUTPUT_OPTIONS,
  output_attentions: OUTPUT_OPTIONS,
  output_router_logits: OUTPUT_OPTIONS,
  use_cache: "a generation option; the KV cache computes the same values",
  initializer_range: TRAINING,
  attention_dropout: TRAINING,
  embd_pdrop: TRAINING,
  resid_pdrop: TRAINING,
  residual_dropout: TRAINING,
  embedding_dropout: TRAINING,
  hidden_dropout: TRAINING,
  router_aux_loss_coef: TRAINING,
  router_jitter_noise: TRAINING,
  pretraining_tp: "transformers 5 ignores it (tensor-parallel slices of the same product)",
  quantization_config: "how the checkpoint's tensors are stored, which their types and " +
    "companion tensors tell (MXFP4, NVFP4 blocks are read as such)",
  pad_token_id: TOKEN_IDS,
  bos_token_id: TOKEN_IDS,
  eos_token_id: TOKEN_IDS,
};

/**
 * Fields `TextModel.set_gguf_parameters` writes (`text_model.ts`) or that
 * shape the tensors llama.cpp loads as the file has them: every family's
 * `writeKv` starts from it or writes the same keys itself.
 */
export const WRITTEN_BY_TEXT_MODEL: readonly string[] = [
  "vocab_size",
  "hidden_size",
  "intermediate_size",
  "num_hidden_layers",
  "num_attention_heads",
  "num_key_value_heads",
  "head_dim",
  "max_position_embeddings",
  "rms_norm_eps",
  "layer_norm_eps",
  "norm_epsilon",
  // Checked besides by ropeRefusal and ropeCaveats below.
  "rope_parameters",
  "rope_scaling",
  "rope_theta",
  "partial_rotary_factor",
  "rope_local_base_freq",
  // Whether the file has output.weight (llama.cpp falls back to the embedding).
  "tie_word_embeddings",
  // Bias tensors: llama.cpp adds each one the file has.
  "attention_bias",
  "mlp_bias",
  // Experts: expert_count, expert_used_count, expert_group_count, expert_group_used_count.
  "num_local_experts",
  "num_experts",
  "n_routed_experts",
  "num_experts_per_tok",
  "n_group",
  "topk_group",
];

/** The composite fields of an image-text model around its text config (the converter moves `text_config` up). */
export const IRRELEVANT_MULTIMODAL: Readonly<Record<string, string>> = Object.fromEntries(
  [
    "text_config",
    "vision_config",
    "audio_config",
    "image_token_id",
    "image_token_index",
    "video_token_id",
    "audio_token_id",
    "boi_token_id",
    "boi_token_index",
    "eoi_token_id",
    "eoi_token_index",
    "boa_token_id",
    "eoa_token_id",
    "vision_start_token_id",
    "vision_end_token_id",
    "mm_tokens_per_image",
    "vision_soft_tokens_per_image",
    "audio_soft_tokens_per_image",
    "multimodal_projector_bias",
    "projector_hidden_act",
    "spatial_merge_size",
    "vision_feature_layer",
    // SmolVLM's and Idefics3's pixel shuffle (clip.vision.projector.scale_factor).
    "scale_factor",
    // LFM2-VL's projector (downsample_factor: clip.vision.projector.scale_factor).
    "downsample_factor",
    "projector_bias",
    "projector_hidden_size",
    "projector_use_layernorm",
    // GLM-4V's image and video delimiters.
    "image_start_token_id",
    "image_end_token_id",
    "video_start_token_id",
    "video_end_token_id",
  ].map((f) => [f, "the vision/audio towers' (--mmproj), not the text model's"]),
);

/** The activation names transformers' `ACT2FN` computes as SiLU. */
export const SILU = ["silu", "swish"] as const;
/**
 * The activation names llama.cpp's GELU (ggml's tanh approximation) stands
 * for; `gelu` (erf) differs from it by under 2·10⁻⁴ per activation, and
 * Gemma's config maps it to the tanh form itself.
 */
export const GELU = ["gelu_pytorch_tanh", "gelu_new", "gelu_fast", "gelu"] as const;

/** An activation field whose value llama.cpp's graph fixes. */
export function activation(
  field: string,
  names: readonly string[],
  hfDefault: unknown = names[0],
): Assumption {
  return { field, hfDefault, llamaCpp: names[0], alike: names };
}

/**
 * The layer types of llama.cpp's `load_swa_pattern(ml, n)` without a pattern
 * key: layer `i` slides unless `i % n == n − 1` (Gemma 2 and gpt-oss: every
 * other layer from the first).
 *
 * @param n The period.
 */
export function swaPattern(n: number): (w: KvWriter) => string[] {
  return (w) =>
    Array.from(
      { length: w.num("num_hidden_layers") ?? 0 },
      (_, i) => i % n < n - 1 ? "sliding_attention" : "full_attention",
    );
}

/**
 * Every field a family's rules name.
 *
 * @param fields The family's rules.
 * @returns Field → how it is accounted for.
 */
export function classifiedFields(fields: ConfigFields): Map<string, string> {
  const out = new Map<string, string>();
  for (const [f, why] of Object.entries(IRRELEVANT)) out.set(f, `irrelevant: ${why}`);
  for (const [f, why] of Object.entries(IRRELEVANT_MULTIMODAL)) out.set(f, `irrelevant: ${why}`);
  for (const f of WRITTEN_BY_TEXT_MODEL) out.set(f, "written");
  for (const f of fields.written ?? []) out.set(f, "written");
  for (const [f, why] of Object.entries(fields.irrelevant ?? {})) out.set(f, `irrelevant: ${why}`);
  for (const f of fields.checked ?? []) out.set(f, "checked by the family");
  for (const c of fields.caveats ?? []) for (const f of c.fields) out.set(f, "warned");
  for (const a of fields.assumed ?? []) out.set(a.field, "checked against llama.cpp");
  return out;
}

/** The value a field has for transformers: the config's, else its config class's default. */
function given(w: KvWriter, a: Assumption): unknown {
  if (Object.hasOwn(w.hparams, a.field)) return w.hparams[a.field];
  const type = w.hparams["model_type"];
  return typeof type === "string" && a.hfDefaultByType !== undefined &&
      Object.hasOwn(a.hfDefaultByType, type)
    ? a.hfDefaultByType[type]
    : a.hfDefault;
}

/** A value for a one-line message: JSON, a long list cut short. */
function shown(value: unknown): string {
  const json = JSON.stringify(value) ?? "undefined";
  return json.length <= 100 ? json : `${json.slice(0, 97)}…`;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * What of a config llama.cpp would compute otherwise than transformers, for
 * any length of context: the first assumed field set otherwise, or a RoPE
 * scaling it cannot run.
 *
 * @param fields The family's rules.
 * @param w The writer over `config.json`.
 * @returns The refusal (one line), or `undefined`.
 */
export function configRefusal(fields: ConfigFields, w: KvWriter): string | undefined {
  for (const a of fields.assumed ?? []) {
    const value = given(w, a);
    const assumed = typeof a.llamaCpp === "function" ? a.llamaCpp(w) : a.llamaCpp;
    if (same(value, assumed) || (a.alike ?? []).some((v) => same(v, value))) continue;
    const absent = Object.hasOwn(w.hparams, a.field) ? "" : " (transformers' default; absent)";
    return `its config.json has ${a.field} ${shown(value)}${absent}; llama.cpp's ` +
      `${w.arch} reads no key for it and computes as with ${shown(assumed)}`;
  }
  return ropeRefusal(fields, w);
}

/**
 * The warnings for what llama.cpp computes otherwise only past a context
 * length (sliding windows it ignores, YaRN without truncation).
 *
 * @param fields The family's rules.
 * @param w The writer over `config.json`.
 * @returns The warnings, one line each.
 */
export function configWarnings(fields: ConfigFields, w: KvWriter): string[] {
  return [...fields.caveats ?? [], YARN_TRUNCATE].map((c) => c.warn(w))
    .filter((m): m is string => m !== undefined);
}

/**
 * RoPE types llama.cpp computes as transformers does (with their keys
 * written); `mrope` is Qwen2-VL's published spelling of `default` with
 * `mrope_section` (transformers reads it so).
 */
const ROPE_TYPES = new Set(["default", "linear", "yarn", "llama3", "longrope", "su", "mrope"]);
/** transformers' YaRN defaults, which llama.cpp hard-codes outside mistral3 and grok. */
const YARN_BETAS = { beta_fast: 32, beta_slow: 1 } as const;

/** Each RoPE parameter set of a config (per layer type where it has several). */
function ropeSets(w: KvWriter): Readonly<Record<string, unknown>>[] {
  const sets = [w.rope["full_attention"], w.rope["sliding_attention"]]
    .filter((r): r is Record<string, unknown> => r !== null && typeof r === "object");
  return sets.length > 0 ? sets : [w.rope];
}

function ropeRefusal(fields: ConfigFields, w: KvWriter): string | undefined {
  for (const rope of ropeSets(w)) {
    const type = rope["rope_type"] ?? rope["type"] ?? "default";
    if (!ROPE_TYPES.has(String(type)) && !(fields.ropeTypes ?? []).includes(String(type))) {
      return `its config.json has rope_scaling type ${JSON.stringify(type)}; llama.cpp has no ` +
        `such RoPE scaling (it knows ${[...ROPE_TYPES].join(", ")})`;
    }
    if (type !== "yarn" || fields.readsYarnBetas === true) continue;
    for (const [key, value] of Object.entries(YARN_BETAS)) {
      // transformers: `rope_parameters.get("beta_fast") or 32`.
      const set = rope[key];
      const effective = set === undefined || set === null || set === 0 ? value : set;
      if (effective !== value) {
        return `its config.json has YaRN ${key} ${JSON.stringify(set)}; llama.cpp's ${w.arch} ` +
          `reads no key for it and computes with beta_fast ${YARN_BETAS.beta_fast}, beta_slow ` +
          `${YARN_BETAS.beta_slow}`;
      }
    }
  }
  return undefined;
}

/**
 * YaRN with `truncate: false` (every published gpt-oss): transformers keeps
 * the correction range's fractional bounds, llama.cpp always rounds them
 * (`ggml_rope_yarn_corr_dims`), so a few rotary frequencies differ slightly
 * and the rotation angles drift apart with the distance between tokens.
 */
const YARN_TRUNCATE: Caveat = {
  fields: ["rope_parameters"],
  warn(w) {
    for (const rope of ropeSets(w)) {
      if ((rope["rope_type"] ?? rope["type"]) !== "yarn" || rope["truncate"] !== false) continue;
      const from = yarnDriftFrom(w, rope);
      return `config.json's YaRN has truncate false, which llama.cpp does not read (it always ` +
        `truncates): a few rotary frequencies differ from transformers', so llama.cpp's ` +
        `log-probs drift from transformers' as the distance between tokens grows` +
        (from === undefined ? "" : ` (0.1 radian of rotation apart from ${from} tokens on)`);
    }
    return undefined;
  },
};

/**
 * The token distance from which YaRN's truncated and untruncated rotary
 * angles differ by more than 0.1 radian (transformers' `_compute_yarn_parameters`,
 * both ways), or `undefined` when the config lacks what it needs.
 */
export function yarnDriftFrom(
  w: KvWriter,
  rope: Readonly<Record<string, unknown>>,
): number | undefined {
  const base = rope["rope_theta"];
  const factor = rope["factor"];
  const original = rope["original_max_position_embeddings"];
  const heads = w.num("num_attention_heads");
  const headDim = w.num("head_dim") ??
    (heads === undefined ? undefined : Math.trunc((w.num("hidden_size") ?? NaN) / heads));
  if (
    typeof base !== "number" || typeof factor !== "number" || typeof original !== "number" ||
    headDim === undefined || !Number.isFinite(headDim)
  ) return undefined;
  const partial = typeof rope["partial_rotary_factor"] === "number"
    ? rope["partial_rotary_factor"] as number
    : 1;
  const dim = Math.trunc(headDim * partial);
  const fast = (rope["beta_fast"] as number) || YARN_BETAS.beta_fast;
  const slow = (rope["beta_slow"] as number) || YARN_BETAS.beta_slow;
  const corr = (rot: number) =>
    (dim * Math.log(original / (rot * 2 * Math.PI))) / (2 * Math.log(base));
  const freqs = (truncate: boolean) => {
    let low = corr(fast);
    let high = corr(slow);
    if (truncate) [low, high] = [Math.floor(low), Math.ceil(high)];
    [low, high] = [Math.max(low, 0), Math.min(high, dim - 1)];
    if (low === high) high += 0.001;
    return Array.from({ length: dim / 2 }, (_, i) => {
      const extrapolation = 1 / base ** (2 * i / dim);
      const ramp = Math.min(Math.max((i - low) / (high - low), 0), 1);
      return (extrapolation / factor) * ramp + extrapolation * (1 - ramp);
    });
  };
  const a = freqs(true);
  const b = freqs(false);
  const drift = Math.max(...a.map((f, i) => Math.abs(f - b[i]!)));
  return drift > 0 ? Math.ceil(0.1 / drift) : undefined;
}

/**
 * A sliding window llama.cpp's graph for the architecture does not apply:
 * transformers lets each token of the windowed layers see the last `window`
 * tokens only, llama.cpp the whole context, so they compute alike until the
 * context exceeds the window.
 *
 * @param fields The fields that decide the window.
 * @param window The window transformers applies and on which layers, or
 * `undefined` when it applies none.
 * @returns The caveat.
 */
export function ignoredSlidingWindow(
  fields: readonly string[],
  window: (w: KvWriter) => { size: number; layers: string } | undefined,
): Caveat {
  return {
    fields,
    warn(w) {
      const found = window(w);
      if (found === undefined) return undefined;
      return `config.json sets a sliding window of ${found.size} tokens on ${found.layers}, ` +
        `which llama.cpp's ${w.arch} does not apply (it attends to the whole context): it ` +
        `computes otherwise than transformers from a context of ${found.size + 1} tokens on`;
    },
  };
}

/** `sliding_window` on every layer when set (Mistral, Mixtral, StarCoder2, Phi-3). */
export const EVERY_LAYER_WINDOW: Caveat = ignoredSlidingWindow(["sliding_window"], (w) => {
  const size = w.num("sliding_window");
  return size === undefined || size <= 0 ? undefined : { size, layers: "every layer" };
});

/**
 * Qwen2/Qwen3's window: `sliding_window` only with `use_sliding_window`, on
 * the layers `layer_types` names `sliding_attention` (by default those from
 * `max_window_layers` on; Qwen2-MoE: the even ones below it).
 *
 * @param derived The layer types transformers derives without `layer_types`.
 */
export function qwenWindow(
  derived: (layer: number, maxWindowLayers: number) => boolean,
): Caveat {
  return ignoredSlidingWindow(
    ["use_sliding_window", "sliding_window", "max_window_layers", "layer_types"],
    (w) => {
      const size = w.num("sliding_window");
      if (w.hparams["use_sliding_window"] !== true || size === undefined || size <= 0) {
        return undefined;
      }
      const n = w.num("num_hidden_layers") ?? 0;
      const types = w.hparams["layer_types"];
      const max = w.num("max_window_layers") ?? n;
      const windowed = Array.from({ length: n }, (_, i) => i).filter((i) =>
        Array.isArray(types) ? types[i] === "sliding_attention" : derived(i, max)
      );
      if (windowed.length === 0) return undefined;
      return {
        size,
        layers: windowed.length === n ? "every layer" : `layers ${windowed.join(", ")}`,
      };
    },
  );
}
