// This module is browser compatible.

/**
 * Headless checkpoints: a family's base class without its language-model
 * head (`Qwen3Model`, `Qwen2Model`, `LlamaModel`, `MistralModel`,
 * `Gemma3TextModel`), saved so by sentence embedders (Qwen3-Embedding,
 * gte-Qwen2, e5-mistral, EmbeddingGemma). `model_type` names the family, so
 * the model would be taken for its causal LM; llama.cpp's converter
 * registers these classes as embedding models instead (non-causal or
 * last-token pooling, no output layer), and a causal-LM GGUF of one is a
 * file llama.cpp refuses to load.
 *
 * @module
 */

import type { ModelMetadata } from "../tensor.ts";
import { familyOf } from "./registry.ts";

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
  return `${hfClass} is ${family.name}'s model without its language-model head, as sentence ` +
    `embedders save it (e.g. Qwen3-Embedding, gte-Qwen2, e5-mistral); llama.cpp's converter ` +
    `writes such a model as an embedding model, which aprkit does not write yet (a ${family.name} ` +
    `causal-LM GGUF of it would be refused by llama.cpp)`;
}
