// This module is browser compatible.

/**
 * Image-text-to-text checkpoints (DESIGN.md §2.5a): which family their
 * language model is, and which of their tensors belong to it. llama.cpp's
 * converter writes such a checkpoint's language model as that family's GGUF
 * (the vision tower and projector go to a separate `--mmproj` file), and
 * realizar runs an APR's language model under `model.layers.N.*`; both need
 * the language model's tensors under the text family's Hugging Face names.
 *
 * Two key layouts name the same tensors: the Hub's (what transformers 4
 * saves, and 5 by default: `language_model.model.*`,
 * `language_model.lm_head.*`, `vision_tower.*`, `multi_modal_projector.*`;
 * Qwen2-VL's `model.*`, `visual.*`) and transformers' module paths (saved by
 * 4.52–4.56 and by 5 with `save_original_format=False`:
 * `model.language_model.*`, `model.vision_tower.*`,
 * `model.multi_modal_projector.*`, `model.visual.*`). Both are read the same
 * way, as llama.cpp's converter reads them (`language_model.` removed,
 * vision tensors recognised by name).
 *
 * @module
 */

import { record } from "./kv.ts";

/** A multimodal Hugging Face class aprkit converts the language model of. */
export interface MultimodalClass {
  /** What the entry follows. */
  readonly source: string;
  /**
   * The family of the language model (an aprkit architecture name) for a
   * `config.json`, or `undefined` when its text model is not one aprkit
   * knows here.
   */
  textFamily(config: Readonly<Record<string, unknown>>): string | undefined;
  /** What its tensors outside the language model are, for notes; absent: "the vision tower and projector". */
  readonly towers?: string;
  /** Where its vision GGUF comes from, when aprkit writes none and the general advice does not fit. */
  readonly mmprojElsewhere?: string;
  /** Why a text model {@linkcode MultimodalClass.textFamily} does not claim is refused, when more can be said. */
  readonly unknownText?: string;
  /**
   * The `config.json` with what its class's saved form leaves out filled in,
   * as transformers' config classes and llama.cpp's converter fill it
   * (SmolVLM2's text and vision sizes); absent: nothing is left out.
   */
  withDefaults?(config: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>>;
}

/** LLaVA's text model: llama.cpp's converter files it as `LlamaModel` (llama or Mistral text). */
function llavaText(config: Readonly<Record<string, unknown>>): string | undefined {
  const type = record(config["text_config"])?.["model_type"] ?? "llama";
  return type === "llama" ? "llama" : type === "mistral" ? "mistral" : undefined;
}

/**
 * A text model llama.cpp's converter knows only by `text_config.architectures`
 * (it has no text class for the composite itself): `family` where the text
 * config is `family`'s model_type (or says none) and names one of `classes`.
 */
function namedTextClass(
  family: string,
  classes: readonly string[],
): (config: Readonly<Record<string, unknown>>) => string | undefined {
  return (config) => {
    const text = record(config["text_config"]);
    const arch = Array.isArray(text?.["architectures"]) ? text["architectures"][0] : undefined;
    const type = text?.["model_type"] ?? family;
    return type === family && classes.includes(arch) ? family : undefined;
  };
}

/**
 * SmolVLM2's `config.json` saves only the sizes that differ from the config
 * classes' defaults: its text model without `num_attention_heads` (LlamaConfig's
 * 32, which llama.cpp's `LlamaModel` fills in for `VLlama3ForCausalLM`), its
 * vision tower without `hidden_size`, `num_attention_heads` and
 * `intermediate_size` (SmolVLMVisionConfig's 1152, 16, 3072, which
 * `SmolVLMModel` fills in).
 */
function smolVlmDefaults(config: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...config };
  const text = record(config["text_config"]);
  const arch = Array.isArray(text?.["architectures"]) ? text["architectures"][0] : undefined;
  if (text !== undefined && arch === "VLlama3ForCausalLM" && !("num_attention_heads" in text)) {
    out["text_config"] = { ...text, num_attention_heads: 32 };
  }
  const vision = record(config["vision_config"]);
  if (vision !== undefined && vision["model_type"] === "smolvlm_vision") {
    out["vision_config"] = {
      hidden_size: 1152,
      num_attention_heads: 16,
      intermediate_size: 3072,
      ...vision,
    };
  }
  return out;
}

/**
 * A multimodal checkpoint's `config.json` with what its class's saved form
 * leaves out filled in ({@linkcode MultimodalClass.withDefaults}); any other
 * config as it is.
 *
 * @example Usage
 * ```ts
 * import { withSavedDefaults } from "./multimodal.ts";
 * const config = withSavedDefaults({
 *   architectures: ["SmolVLMForConditionalGeneration"],
 *   text_config: { architectures: ["VLlama3ForCausalLM"], hidden_size: 2048 },
 * });
 * console.assert((config["text_config"] as Record<string, unknown>)["num_attention_heads"] === 32);
 * ```
 *
 * @param config The parsed `config.json`.
 * @returns The config as transformers reads it.
 */
export function withSavedDefaults(
  config: Readonly<Record<string, unknown>>,
): Readonly<Record<string, unknown>> {
  const arch = Array.isArray(config["architectures"]) ? config["architectures"][0] : undefined;
  return isMultimodalClass(arch)
    ? MULTIMODAL_CLASSES[arch as string]!.withDefaults?.(config) ?? config
    : config;
}

/**
 * SmolVLM's and Idefics3's text model: `VLlama3ForCausalLM` or
 * `LlamaForCausalLM` (the converter's `LlamaModel`).
 */
const idefics3Text = namedTextClass("llama", ["VLlama3ForCausalLM", "LlamaForCausalLM"]);

const IDEFICS3_UNKNOWN_TEXT =
  "its config.json's text_config names no Llama text model (model_type llama, architectures " +
  "VLlama3ForCausalLM or LlamaForCausalLM), which llama.cpp's converter takes its text model from";

/** LFM2-VL's text model: `Lfm2ForCausalLM` (the converter's `LFM2Model`). */
const lfm2VlText = namedTextClass("lfm2", ["Lfm2ForCausalLM", "LFM2ForCausalLM"]);

/** Multimodal classes by `architectures[0]`. */
export const MULTIMODAL_CLASSES: Readonly<Record<string, MultimodalClass>> = {
  Gemma3ForConditionalGeneration: {
    source: "llama.cpp conversion/gemma.py Gemma3Model (text), Gemma3VisionModel (mmproj)",
    textFamily: () => "gemma3",
  },
  Gemma3nForConditionalGeneration: {
    source:
      "llama.cpp conversion/gemma.py Gemma3NModel (text); its vision and audio GGUF not written",
    textFamily: () => "gemma3n",
    towers: "the vision and audio towers and their embedders",
    mmprojElsewhere: "llama.cpp's convert_hf_to_gguf.py --mmproj makes its vision and audio GGUF",
  },
  Mistral3ForConditionalGeneration: {
    source: "llama.cpp conversion/mistral3.py Ministral3Model (text), llava.py (mmproj)",
    // Mistral Small 3.x has a `mistral` text model; Ministral 3, a `ministral3`
    // one (its YaRN and attention temperature): both GGUF `mistral3`.
    textFamily: (config) => {
      const type = record(config["text_config"])?.["model_type"] ?? "mistral";
      return type === "mistral" ? "mistral3" : type === "ministral3" ? "ministral3" : undefined;
    },
  },
  Qwen2VLForConditionalGeneration: {
    source: "llama.cpp conversion/qwenvl.py Qwen2VLModel (text), Qwen2VLVisionModel (mmproj)",
    textFamily: () => "qwen2vl",
  },
  Qwen2_5_VLForConditionalGeneration: {
    source: "llama.cpp conversion/qwenvl.py Qwen2VLModel (text), Qwen2VLVisionModel (mmproj)",
    textFamily: () => "qwen2vl",
  },
  Llama4ForConditionalGeneration: {
    source:
      "llama.cpp conversion/llama.py Llama4Model (text), llama4.py Llama4VisionModel (mmproj)",
    textFamily: () => "llama4",
  },
  Qwen3VLForConditionalGeneration: {
    source: "llama.cpp conversion/qwen3vl.py Qwen3VLTextModel (text), Qwen3VLVisionModel (mmproj)",
    textFamily: () => "qwen3vl",
  },
  Qwen3VLMoeForConditionalGeneration: {
    source:
      "llama.cpp conversion/qwen3vl.py Qwen3VLMoeTextModel (text), Qwen3VLVisionModel (mmproj)",
    textFamily: () => "qwen3vlmoe",
  },
  LlavaForConditionalGeneration: {
    source: "llama.cpp conversion/llama.py LlamaModel (text), llava.py (mmproj)",
    textFamily: llavaText,
  },
  Gemma4ForConditionalGeneration: {
    source: "llama.cpp conversion/gemma.py Gemma4Model (text), Gemma4VisionAudioModel (mmproj: " +
      "vision and audio)",
    textFamily: () => "gemma4",
    towers: "the vision and audio towers and their embedders",
  },
  Gemma4UnifiedForConditionalGeneration: {
    source: "llama.cpp conversion/gemma.py Gemma4UnifiedModel (text), " +
      "Gemma4UnifiedVisionAudioModel (mmproj: vision and audio)",
    textFamily: () => "gemma4",
    towers: "the vision and audio embedders",
  },
  Qwen3_5ForConditionalGeneration: {
    source:
      "llama.cpp conversion/qwen.py Qwen3_5TextModel (text), qwen3vl.py Qwen3VLVisionModel (mmproj)",
    textFamily: () => "qwen35",
  },
  Qwen3_5MoeForConditionalGeneration: {
    source:
      "llama.cpp conversion/qwen.py Qwen3_5MoeTextModel (text), qwen3vl.py Qwen3VLVisionModel (mmproj)",
    textFamily: () => "qwen35moe",
  },
  Qwen4ExpForConditionalGeneration: {
    source:
      "llama.cpp conversion/qwen4exp.py Qwen4ExpTextModel (text), Qwen4ExpVisionModel (mmproj)",
    textFamily: () => "qwen4exp",
  },
  SmolVLMForConditionalGeneration: {
    source: "llama.cpp conversion/llama.py LlamaModel (text), smolvlm.py SmolVLMModel (mmproj)",
    textFamily: idefics3Text,
    unknownText: IDEFICS3_UNKNOWN_TEXT,
    withDefaults: smolVlmDefaults,
  },
  Idefics3ForConditionalGeneration: {
    source: "llama.cpp conversion/llama.py LlamaModel (text), smolvlm.py SmolVLMModel (mmproj)",
    textFamily: idefics3Text,
    unknownText: IDEFICS3_UNKNOWN_TEXT,
    withDefaults: smolVlmDefaults,
  },
  Lfm2VlForConditionalGeneration: {
    source: "llama.cpp conversion/lfm2.py LFM2Model (text), LFM2VLModel (mmproj)",
    textFamily: lfm2VlText,
    unknownText: "its config.json's text_config names no LFM2 text model (model_type lfm2, " +
      "architectures Lfm2ForCausalLM), which llama.cpp's converter takes its text model from",
  },
  Glm4vForConditionalGeneration: {
    source: "llama.cpp conversion/glm.py Glm4Model (text), qwen3vl.py Glm4VVisionModel (mmproj)",
    textFamily: () => "glm4",
  },
  Glm4vMoeForConditionalGeneration: {
    source: "llama.cpp conversion/glm.py Glm4MoeModel (text), qwen3vl.py Glm4VVisionModel (mmproj)",
    textFamily: () => "glm4moe",
  },
};

/**
 * Whether a Hugging Face class is one of {@linkcode MULTIMODAL_CLASSES}.
 *
 * @param hfArchitecture `architectures[0]` of `config.json`.
 * @returns The answer.
 */
export function isMultimodalClass(hfArchitecture: unknown): boolean {
  return typeof hfArchitecture === "string" && Object.hasOwn(MULTIMODAL_CLASSES, hfArchitecture);
}

/**
 * The family of a multimodal checkpoint's language model.
 *
 * @param hfArchitecture `architectures[0]` of `config.json`.
 * @param config The parsed `config.json`.
 * @returns The aprkit architecture name, or `undefined` for another class or an unknown text model.
 */
export function multimodalTextFamily(
  hfArchitecture: string,
  config: Readonly<Record<string, unknown>>,
): string | undefined {
  return isMultimodalClass(hfArchitecture)
    ? MULTIMODAL_CLASSES[hfArchitecture]!.textFamily(config)
    : undefined;
}

/**
 * Why a multimodal checkpoint whose text model aprkit does not claim is
 * refused, where its class says more than "not supported".
 *
 * @param hfArchitecture `architectures[0]` of `config.json`.
 * @returns The reason, or `undefined`.
 */
export function multimodalTextRefusal(hfArchitecture: unknown): string | undefined {
  return isMultimodalClass(hfArchitecture)
    ? MULTIMODAL_CLASSES[hfArchitecture as string]!.unknownText
    : undefined;
}

// The converter's TextModel.filter_tensors, for the classes above: vision
// tower, projector and their pieces, in either layout (Gemma 3n: also its
// audio tower and both towers' embedders; SmolVLM and Idefics3: the connector;
// Gemma 4 unified: its transformer-less vision embedder).
const VISION =
  /(^|\.)(vision_tower|visual|vision_model|multi_modal_projector|image_newline|audio_tower|embed_vision|embed_audio|vision_embedder|connector)(\.|$)/;

/**
 * A multimodal checkpoint's tensor under its language model's Hugging Face
 * name (`language_model.model.layers.0.…` and `model.language_model.layers.0.…`
 * → `model.layers.0.…`, `language_model.lm_head.weight` → `lm_head.weight`),
 * or `undefined` for a tensor of the vision tower or projector.
 *
 * @example Usage
 * ```ts
 * import { languageModelName } from "./multimodal.ts";
 * console.assert(languageModelName("language_model.model.norm.weight") === "model.norm.weight");
 * console.assert(languageModelName("model.language_model.layers.0.mlp.up_proj.weight") === "model.layers.0.mlp.up_proj.weight");
 * console.assert(languageModelName("model.vision_tower.encoder.layers.0.mlp.fc1.weight") === undefined);
 * console.assert(languageModelName("model.text_model.norm.weight") === "model.norm.weight");
 * ```
 *
 * @param name A tensor name of the checkpoint.
 * @returns The language model's name, or `undefined` for a vision tensor.
 */
export function languageModelName(name: string): string | undefined {
  if (VISION.test(name)) return undefined;
  // SmolVLM's and Idefics3's `model.text_model.*`, as LlamaModel.filter_tensors reads them.
  return name.replace("language_model.", "").replace("text_model.", "");
}
