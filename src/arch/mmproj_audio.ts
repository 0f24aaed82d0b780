// This module is browser compatible.

/**
 * Gemma 4's audio tower in llama.cpp's multimodal GGUF (`--mmproj`), after
 * its converter's `Gemma4VisionAudioModel` (conversion/gemma.py), which
 * writes the conformer (`model.audio_tower.*`) and its projector
 * (`model.embed_audio.*`) into the same file as the vision tower; and the
 * unified class's audio embedder (`Gemma4UnifiedVisionAudioModel`: the
 * projector alone). Also `MmprojModel`'s audio keys, and the lookup of a
 * Hugging Face name in gguf-py's `MMPROJ` tensor table (`_gguf_tables.ts`),
 * which names these tensors (and the unified vision embedder's).
 *
 * @module
 */

import { ggufKindName, hfTensorKind } from "./gguf_tensors.ts";
import { type KvWriter, record } from "./kv.ts";
import type { MmprojPiece } from "./mmproj.ts";

/** `MmprojModel.n_block_keys`: where a tower's depth is read from, in order. */
export const BLOCK_KEYS: readonly string[] = [
  "n_layers",
  "num_hidden_layers",
  "n_layer",
  "num_layers",
  "depth",
  "layers",
  "encoder_layers",
  "vt_num_hidden_layers",
];

/** The suffixes Gemma 4's converter maps names with (its clipped linears' bounds among them). */
const GEMMA4_SUFFIXES: readonly string[] = [
  ".weight",
  ".bias",
  ".input_max",
  ".input_min",
  ".output_max",
  ".output_min",
];

/**
 * A Hugging Face name (as the converter's class has rewritten it) under
 * gguf-py's `MMPROJ` name, as `map_tensor_name` with Gemma 4's suffixes
 * finds it; or nothing.
 */
export function mmprojTableName(name: string): string | undefined {
  const kind = hfTensorKind("clip", name, { suffixes: GEMMA4_SUFFIXES, inSegment: true });
  if (kind === undefined) return undefined;
  const base = ggufKindName(kind.kind, kind.block);
  return base === undefined ? undefined : base + kind.suffix;
}

/** `Gemma4VisionAudioModel.is_audio_tensor`. */
export function isGemma4AudioTensor(name: string): boolean {
  return name.includes("audio_tower") || name.includes("embed_audio");
}

/**
 * torch's `softplus` (threshold 20) of a float32 value, as its float32
 * kernel computes it: `exp` rounded to float32, then `log1p` of that. torch's
 * own `exp`/`log1p` (SLEEF's vectorized ones, glibc's for a short tail) are
 * not correctly rounded: they differ from this in the last bit for ~1–5% of
 * values, and with the machine; this is each step correctly rounded.
 */
export function torchSoftplus(value: number): number {
  if (value > 20) return value;
  return Math.fround(Math.log1p(Math.fround(Math.exp(value))));
}

/**
 * One audio tensor of a Gemma 4 checkpoint (`model.audio_tower.*`,
 * `model.embed_audio.*`) as `Gemma4VisionAudioModel.modify_tensors` writes
 * it: `conformer.*` without `.linear`, scalars as one value, the attention's
 * `per_dim_scale` through softplus, the depthwise kernel `[C, 1, K]` as
 * `[C, K]`; forced to F32 where `tensor_force_quant` names a convolution
 * (`.conv`, or `_conv` and `.weight`). Other tensors: none.
 *
 * @throws {RangeError} When the converter could not write the tensor either
 * (no name in gguf-py's table, a depthwise kernel of another shape).
 */
export function gemma4AudioPieces(name: string, shape: readonly number[]): readonly MmprojPiece[] {
  if (!isGemma4AudioTensor(name)) return [];
  let n = name.replaceAll("model.audio_tower.", "conformer.").replaceAll(".linear.", ".");
  let out = shape.length === 0 ? [1] : shape;
  const softplus = n.endsWith("per_dim_key_scale") || n.endsWith("per_dim_scale");
  if (softplus) n += ".weight";
  if (n.includes("lconv1d.depthwise_conv1d") && n.endsWith(".weight")) {
    if (shape.length !== 3 || shape[1] !== 1) {
      throw new RangeError(
        `Cannot write "${name}" [${shape}] in the vision GGUF: a depthwise kernel is [channels, 1, width]`,
      );
    }
    out = [shape[0]!, shape[2]!];
  }
  const g = mmprojTableName(n);
  if (g === undefined) {
    throw new RangeError(
      `Cannot write "${name}" in the vision GGUF: gguf-py's tensor table has no name for it ` +
        "(llama.cpp's converter stops there too)",
    );
  }
  const conv = name.includes(".conv") || (name.includes("_conv") && name.includes(".weight"));
  return [{
    name: g,
    shape: out,
    ...(softplus ? { map: torchSoftplus } : {}),
    ...(conv ? { type: "F32" as const } : {}),
  }];
}

/**
 * `audio_config` as the converter's class reads it: `feat_in` from
 * `input_feat_size` (128 without), the feed-forward 4 × `hidden_size`
 * (`Gemma4VisionAudioModel`); the unified class's width `audio_embed_dim`
 * and no blocks (`Gemma4UnifiedVisionAudioModel`). Without an audio config
 * (an absent, null or empty one): none, and the file has no audio tower.
 *
 * @throws {RangeError} For the unified class without one (its converter asserts one).
 */
export function gemma4AudioHparams(
  config: Readonly<Record<string, unknown>>,
  unified: boolean,
): Record<string, unknown> | undefined {
  const audio = record(config["audio_config"]);
  if (audio === undefined || Object.keys(audio).length === 0) {
    if (unified) throw new RangeError("config.json has no audio_config");
    return undefined;
  }
  const a: Record<string, unknown> = { ...audio, feat_in: audio["input_feat_size"] ?? 128 };
  const hidden = audio["hidden_size"];
  if (typeof hidden === "number") a["intermediate_size"] = hidden * 4;
  if (unified) {
    Object.assign(a, {
      hidden_size: audio["audio_embed_dim"],
      intermediate_size: 0,
      num_layers: 0,
      num_attention_heads: 0,
    });
  }
  return a;
}

/**
 * What llama.cpp's `gemma4a` encoder (tools/mtmd/models/gemma4a.cpp)
 * hard-codes and no key carries (the converter writes none): transformers'
 * `Gemma4AudioConfig` defaults, as the published E2B and E4B have them.
 */
const GEMMA4A_ASSUMES: Readonly<Record<string, number | string>> = {
  attention_chunk_size: 12,
  attention_context_left: 13,
  attention_context_right: 0,
  attention_logit_cap: 50,
  residual_weight: 0.5,
  rms_norm_eps: 1e-6,
  hidden_act: "silu",
  // The light convolution's left padding is 4 frames: another kernel gives a
  // sequence of another length (3 aborts it, GGML_ASSERT(ggml_can_repeat)).
  conv_kernel_size: 5,
};

/**
 * transformers clamps the conformer's activations to ± `gradient_clipping`
 * (around each feed-forward, attention and light convolution and at each
 * layer's end); llama.cpp's `gemma4a` clamps nothing. The published 1e10
 * never binds; a value that does changes transformers' output (the
 * gemma4-audio fixture's tower, tests/testdata/families/
 * measure_gemma4_audio_clipping.py: no difference at 1e6 or 10, 1.46 at 1,
 * 2.50 at 0.5). Whether one binds depends on the input, so a value below
 * the published one is refused.
 */
const GEMMA4A_LEAST_CLIPPING = 1e10;

/**
 * transformers fills masked attention logits with
 * `attention_invalid_logits_value` (published −1e9); llama.cpp's `gemma4a`
 * masks with −∞. The logits are capped at ±50 (`attention_logit_cap`), and
 * float32's `exp` is 0 below −104, so at or below −154 a masked position
 * weighs exactly nothing in both; above it, it may weigh in transformers.
 */
const GEMMA4A_MOST_INVALID_LOGIT = -154;

/**
 * What llama.cpp's `gemma4ua` (models/gemma4ua.cpp, clip.cpp) hard-codes for
 * the unified class's encoder-free audio: 640-sample frames (40 ms at 16 kHz,
 * `audio_embed_dim`) and the norm's epsilon.
 */
const GEMMA4UA_ASSUMES: Readonly<Record<string, number | string>> = {
  audio_embed_dim: 640,
  rms_norm_eps: 1e-6,
};

/**
 * Refuse an audio tower llama.cpp would compute otherwise than transformers:
 * a field of {@linkcode GEMMA4A_ASSUMES} (the unified class's:
 * {@linkcode GEMMA4UA_ASSUMES}) with another value (absent: the default),
 * a `gradient_clipping` that may bind ({@linkcode GEMMA4A_LEAST_CLIPPING}),
 * an `attention_invalid_logits_value` that may weigh masked positions
 * ({@linkcode GEMMA4A_MOST_INVALID_LOGIT}).
 *
 * @throws {RangeError} Naming the field, its value and the one llama.cpp assumes.
 */
export function assertGemma4AudioAsLlamaCpp(
  audio: Readonly<Record<string, unknown>>,
  projector: string,
): void {
  const assumes = projector === "gemma4ua" ? GEMMA4UA_ASSUMES : GEMMA4A_ASSUMES;
  const clipping = audio["gradient_clipping"];
  if (
    projector === "gemma4a" && clipping !== undefined && clipping !== null &&
    !(typeof clipping === "number" && clipping >= GEMMA4A_LEAST_CLIPPING)
  ) {
    throw new RangeError(
      `config.json: audio_config.gradient_clipping is ${JSON.stringify(clipping)}; transformers ` +
        `clamps the audio encoder's activations to it, llama.cpp's gemma4a clamps nothing ` +
        "(the published 1e10 never binds)",
    );
  }
  const invalid = audio["attention_invalid_logits_value"];
  if (
    projector === "gemma4a" && invalid !== undefined && invalid !== null &&
    !(typeof invalid === "number" && invalid <= GEMMA4A_MOST_INVALID_LOGIT)
  ) {
    throw new RangeError(
      `config.json: audio_config.attention_invalid_logits_value is ${JSON.stringify(invalid)}; ` +
        `transformers gives masked attention positions that logit, llama.cpp's gemma4a −∞ ` +
        `(alike only at or below ${GEMMA4A_MOST_INVALID_LOGIT}: logits capped at 50, exp ` +
        "underflowing below −104)",
    );
  }
  for (const [key, assumed] of Object.entries(assumes)) {
    const v = audio[key];
    if (v === undefined || v === null || v === assumed) continue;
    throw new RangeError(
      `config.json: audio_config.${key} is ${JSON.stringify(v)}; llama.cpp's ${projector} ` +
        `audio encoder assumes ${assumed} (no key carries it)`,
    );
  }
}

/** A number of `audio_config` the converter needs (it raises without it). */
function needAudio(audio: Readonly<Record<string, unknown>>, keys: readonly string[]): number {
  const key = keys.find((k) => Object.hasOwn(audio, k));
  const v = key === undefined ? undefined : audio[key];
  if (typeof v !== "number" || !Number.isFinite(v)) {
    throw new RangeError(`config.json: audio_config has no number for ${keys.join(" / ")}`);
  }
  return v;
}

/**
 * `MmprojModel.set_gguf_parameters`'s audio keys (after the vision ones):
 * the encoder flag, the text width it projects to, the tower's shape.
 *
 * @throws {RangeError} When `audio_config` lacks one.
 */
export function writeAudioEncoderKv(
  w: KvWriter,
  audio: Readonly<Record<string, unknown>>,
  textWidth: unknown,
): void {
  w.set("has_audio_encoder", "BOOL", true);
  w.u32("audio.projection_dim", textWidth);
  w.u32("audio.embedding_length", needAudio(audio, ["hidden_size"]));
  w.u32("audio.feed_forward_length", needAudio(audio, ["intermediate_size"]));
  w.u32("audio.block_count", needAudio(audio, BLOCK_KEYS));
  w.u32("audio.attention.head_count", needAudio(audio, ["num_attention_heads"]));
}

/** `Gemma4VisionAudioModel.set_gguf_parameters`'s audio keys (after the vision projector's). */
export function writeGemma4AudioKv(
  w: KvWriter,
  audio: Readonly<Record<string, unknown>>,
  projector: string,
): void {
  w.set("audio.projector_type", "STRING", projector);
  w.u32("audio.num_mel_bins", audio["feat_in"]);
  const eps = audio["layer_norm_eps"];
  w.f32("audio.attention.layer_norm_epsilon", typeof eps === "number" ? eps : 1e-6);
}
