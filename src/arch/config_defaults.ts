// This module is browser compatible.

/**
 * `config.json` as llama.cpp's converter sees it. The converter reads it
 * through `AutoConfig.from_pretrained(...).to_dict()`, so a sizing field the
 * file leaves out reaches it as transformers fills it in — Llama's `head_dim`
 * as `hidden_size / num_attention_heads`, Qwen3's as 128, DeepSeek's as
 * `qk_rope_head_dim`; `num_key_value_heads` as the head count or the class's
 * constant; the context length, the norm epsilons, `rope_parameters` — and it
 * writes `attention.key_length`, `head_count_kv`, `context_length`,
 * `layer_norm_rms_epsilon`, `rope.freq_base`… from those values. aprkit reads
 * `config.json` itself, so it fills the same fields in the same way, from the
 * rules transformers 5.18's classes were recorded with (`_config_defaults.ts`,
 * `when_absent` in tests/testdata/arch/config_fields.json). A default that
 * contradicts the tensors (Qwen3's 128 for 16-wide heads: transformers cannot
 * load such a checkpoint) is then refused by the shape check.
 *
 * @module
 */

import { ABSENT_ALIASES, type AbsentRule, WHEN_ABSENT } from "./_config_defaults.ts";

/**
 * Model types whose `config.json` the converter reads as it is: transformers
 * 5.18's MiMoV2FlashConfig dict makes it fail on every published config, so
 * it is converted as under transformers 4.57, which does not know the type
 * (tests/testdata/families/make_llamacpp.py, `CONFIG_AS_SAVED`).
 */
const READ_AS_SAVED: ReadonlySet<string> = new Set(["mimo_v2_flash"]);

/** The config.json keys that give RoPE parameters (any of them: `rope_parameters` is not filled in). */
const ROPE_KEYS = [
  "rope_parameters",
  "rope_scaling",
  "rope_theta",
  "rotary_emb_base",
  "rope_local_base_freq",
  "global_rope_theta",
  "rope_global_theta",
  "rope_theta_global",
  "local_rope_theta",
  "rope_local_theta",
  "rope_theta_local",
  "swa_rope_theta",
];

/**
 * `hparams` with the sizing fields its transformers class fills in where
 * `config.json` has none (a derived one also where it is null, as the class's
 * `__post_init__` fills it); `hparams` itself when nothing is filled in.
 *
 * @param hparams The config, a multimodal model's `text_config` merged in.
 * @returns The config as the converter sees it.
 */
export function withConfigDefaults(
  hparams: Readonly<Record<string, unknown>>,
): Readonly<Record<string, unknown>> {
  const type = hparams["model_type"];
  if (typeof type !== "string" || !Object.hasOwn(WHEN_ABSENT, type) || READ_AS_SAVED.has(type)) {
    return hparams;
  }
  const aliases = Object.hasOwn(ABSENT_ALIASES, type) ? ABSENT_ALIASES[type]! : {};
  const filled: Record<string, unknown> = {};
  for (const [field, rule] of Object.entries(WHEN_ABSENT[type]!)) {
    if (field === "rope_parameters") {
      if (ropeAbsent(hparams, rule)) filled[field] = rule;
      continue;
    }
    const names = [field, ...(aliases[field] ?? [])];
    const derived = typeof rule === "string";
    // A constant default applies only to a field left out; a derived one also to a null.
    if (names.some((n) => Object.hasOwn(hparams, n) && (!derived || hparams[n] != null))) continue;
    const value = valueOf(rule, hparams);
    if (value !== undefined) filled[field] = value;
  }
  return Object.keys(filled).length === 0 ? hparams : { ...hparams, ...filled };
}

/** A rule's value over `hparams`, or `undefined` when the fields it needs are missing. */
function valueOf(rule: AbsentRule, hparams: Readonly<Record<string, unknown>>): unknown {
  if (typeof rule === "number") return rule;
  if (typeof rule !== "string") return undefined;
  if (rule === "hidden_size / num_attention_heads") {
    const width = hparams["hidden_size"];
    const heads = hparams["num_attention_heads"];
    return Number.isSafeInteger(width) && Number.isSafeInteger(heads) && (heads as number) > 0
      ? Math.floor((width as number) / (heads as number))
      : undefined;
  }
  const copied = hparams[rule];
  return typeof copied === "number" ? copied : undefined;
}

/**
 * Whether the config gives no RoPE parameters at all, nor a field the class
 * would take into its default dict (Phi-3's `partial_rotary_factor`): then
 * the class's whole default dict is what the converter reads.
 */
function ropeAbsent(hparams: Readonly<Record<string, unknown>>, rule: AbsentRule): boolean {
  if (ROPE_KEYS.some((k) => hparams[k] != null)) return false;
  if (typeof rule !== "object") return false;
  return Object.keys(rule).every((k) =>
    k === "rope_type" || k === "rope_theta" || !Object.hasOwn(hparams, k)
  );
}
