// This module is browser compatible.

/**
 * Headless checkpoints: a family's base class without its language-model
 * head (`LlamaModel`, `MistralModel`, `Gemma3TextModel`), saved so by
 * sentence embedders (e5-mistral, EmbeddingGemma). `model_type` names the
 * family, so the model would be taken for its causal LM. The families whose
 * headless class aprkit writes as an embedding model, as llama.cpp's
 * converter does (`Qwen3Model`, `Qwen2Model`: their pooling as
 * `{arch}.pooling_type`, no output layer; `Gemma3TextModel`, EmbeddingGemma,
 * its own family `gemma-embedding`), list it in `hfArchitectures`;
 * the others are refused, since a causal-LM GGUF of them is not what a
 * sentence embedder's user asked for. The converter writes `LlamaModel`
 * without its pooling and has no `MistralModel` class.
 *
 * @module
 */

import type { ModelMetadata } from "../tensor.ts";
import { familyOf } from "./registry.ts";

/**
 * What llama.cpp's converter does with a headless class aprkit refuses
 * (conversion/llama.py registers `LlamaModel` and never calls
 * `_try_set_pooling_type` for it; nothing registers `MistralModel`).
 */
const CONVERTER_OF_HEADLESS: Readonly<Record<string, string>> = {
  LlamaModel: "llama.cpp's converter writes it as a llama GGUF with no pooling_type",
  MistralModel: "llama.cpp's converter has no MistralModel class",
};

/**
 * Why a Hugging Face model cannot be written as its family's GGUF because
 * its class is the family's headless base model, or `undefined`.
 *
 * @param metadata The model's metadata (`hf_architecture`, `architecture`).
 * @returns The reason, one sentence, or `undefined`.
 */
export function headlessModelRefusal(metadata: ModelMetadata): string | undefined {
  const hfClass = metadata.hf_architecture;
  const family = familyOf(metadata.architecture);
  if (typeof hfClass !== "string" || family === undefined) return undefined;
  if (family.hfArchitectures.includes(hfClass)) return undefined;
  // `…ForCausalLM`, `…LMHeadModel`, `…ForConditionalGeneration` carry a head.
  if (!/Model$/.test(hfClass) || /LMHeadModel$/.test(hfClass)) return undefined;
  const converter = Object.hasOwn(CONVERTER_OF_HEADLESS, hfClass)
    ? `${CONVERTER_OF_HEADLESS[hfClass]}; `
    : "";
  return `${hfClass} is ${family.name}'s model without its language-model head, as sentence ` +
    `embedders save it (e.g. e5-mistral); ${converter}aprkit writes only Qwen3Model, Qwen2Model ` +
    `and Gemma3TextModel of these as embedding models for llama.cpp, and a ${family.name} ` +
    `causal-LM GGUF of it would not embed as sentence-transformers does`;
}
