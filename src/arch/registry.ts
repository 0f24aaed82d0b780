// This module is browser compatible.

/**
 * The model families aprkit knows, in one map (DESIGN.md §2.5a): a new
 * family is one module under `families/` and one line here. Anything not
 * here is refused for GGUF output, naming this list.
 *
 * @module
 */

import type { Family } from "./family.ts";
import type { ModelMetadata } from "../tensor.ts";
import { BERT } from "./families/bert.ts";
import { XLM_ROBERTA } from "./families/xlm_roberta.ts";
import { COHERE2, COMMAND_R } from "./families/cohere.ts";
import { DEEPSEEK2 } from "./families/deepseek2.ts";
import { ERNIE4_5 } from "./families/ernie4_5.ts";
import { ERNIE4_5_MOE } from "./families/ernie4_5_moe.ts";
import { EXAONE4 } from "./families/exaone4.ts";
import { GEMMA } from "./families/gemma.ts";
import { GEMMA2 } from "./families/gemma2.ts";
import { GEMMA3 } from "./families/gemma3.ts";
import { GEMMA3N } from "./families/gemma3n.ts";
import { GLM4 } from "./families/glm4.ts";
import { GLM4MOE } from "./families/glm4moe.ts";
import { GPT_OSS } from "./families/gpt_oss.ts";
import { GRANITE } from "./families/granite.ts";
import { LLAMA } from "./families/llama.ts";
import { LLAMA4 } from "./families/llama4.ts";
import { MISTRAL } from "./families/mistral.ts";
import { MISTRAL3 } from "./families/mistral3.ts";
import { MIXTRAL } from "./families/mixtral.ts";
import { OLMO2 } from "./families/olmo2.ts";
import { OLMO3 } from "./families/olmo3.ts";
import { PHI3 } from "./families/phi3.ts";
import { QWEN2 } from "./families/qwen2.ts";
import { QWEN2MOE } from "./families/qwen2moe.ts";
import { QWEN2VL } from "./families/qwen2vl.ts";
import { QWEN3 } from "./families/qwen3.ts";
import { QWEN3VL } from "./families/qwen3vl.ts";
import { QWEN3VLMOE } from "./families/qwen3vlmoe.ts";
import { QWEN3MOE } from "./families/qwen3moe.ts";
import { SEED_OSS } from "./families/seed_oss.ts";
import { SMOLLM3 } from "./families/smollm3.ts";
import { STARCODER2 } from "./families/starcoder2.ts";
import { MINISTRAL3 } from "./families/ministral3.ts";
import { MINIMAX_M2 } from "./families/minimax_m2.ts";
import { DOTS1 } from "./families/dots1.ts";
import { QWEN3NEXT } from "./families/qwen3next.ts";
import { GPT2, STARCODER } from "./families/gpt2.ts";
import { FALCON_MAMBA, MAMBA, MAMBA2 } from "./families/mamba.ts";
import { QWEN35, QWEN35MOE } from "./families/qwen35.ts";
import { GLM } from "./families/glm.ts";
import { ARCEE } from "./families/arcee.ts";
import { SOLAR_OPEN } from "./families/solar_open.ts";
import { HUNYUAN_DENSE } from "./families/hunyuan_dense.ts";
import { EXAONE_MOE } from "./families/exaone_moe.ts";
import { AFMOE } from "./families/afmoe.ts";
import { GLM4MOE_LITE } from "./families/glm4moe_lite.ts";
import { COHERE2MOE } from "./families/cohere2moe.ts";
import { GPTNEOX } from "./families/gptneox.ts";
import { PHI2 } from "./families/phi2.ts";
import { STABLELM } from "./families/stablelm.ts";
import { OLMO } from "./families/olmo.ts";
import { BLOOM } from "./families/bloom.ts";
import { FALCON } from "./families/falcon.ts";
import { OLMOE } from "./families/olmoe.ts";
import { GRANITEMOE, GRANITEMOE_SHARED } from "./families/granitemoe.ts";
import { BAMBA, GRANITE_HYBRID } from "./families/granite_hybrid.ts";
import { LFM2, LFM2_MOE } from "./families/lfm2.ts";
import { JAMBA } from "./families/jamba.ts";
import { DEEPSEEK32 } from "./families/deepseek32.ts";
import { GLM_DSA } from "./families/glm_dsa.ts";
import { MELLUM } from "./families/mellum.ts";
import { JAIS2 } from "./families/jais2.ts";
import { LAGUNA } from "./families/laguna.ts";
import { NEMOTRON } from "./families/nemotron.ts";
import { GRANITE_SWA, GRANITEMOE_SWA } from "./families/granite_swa.ts";
import { EUROBERT } from "./families/eurobert.ts";
import { JINA_BERT_V2 } from "./families/jina_bert_v2.ts";
import { GEMMA4 } from "./families/gemma4.ts";
import { multimodalTextFamily } from "./multimodal.ts";
import { MODERNBERT } from "./families/modernbert.ts";
import { NOMIC_BERT } from "./families/nomic_bert.ts";
import { YOUTU } from "./families/youtu.ts";
import { DBRX } from "./families/dbrx.ts";
import { HY_V3 } from "./families/hy_v3.ts";
import { GEMMA_EMBEDDING } from "./families/gemma_embedding.ts";
import { NEMOTRON_H, NEMOTRON_H_MOE } from "./families/nemotron_h.ts";
import { FALCON_H1 } from "./families/falcon_h1.ts";
import { DISTILBERT } from "./families/distilbert.ts";
import { CAMEMBERT, ROBERTA } from "./families/roberta.ts";
import { MINICPM3 } from "./families/minicpm3.ts";
import { MIMO2 } from "./families/mimo2.ts";
import { KIMI_LINEAR } from "./families/kimi_linear.ts";
import { APERTUS } from "./families/apertus.ts";
import { BITNET } from "./families/bitnet.ts";
import { HY_V4 } from "./families/hy_v4.ts";
import { HUNYUAN_MOE } from "./families/hunyuan_moe.ts";
import { QWEN4EXP } from "./families/qwen4exp.ts";
import { HRM_TEXT } from "./families/hrm_text.ts";
import { GEMMA4_ASSISTANT } from "./families/gemma4_assistant.ts";
import { DEEPSEEK4 } from "./families/deepseek4.ts";

/** Every family, by aprkit architecture name. */
export const FAMILIES: ReadonlyMap<string, Family> = new Map(
  [
    LLAMA,
    MISTRAL,
    MIXTRAL,
    MISTRAL3,
    LLAMA4,
    QWEN2,
    QWEN2VL,
    QWEN2MOE,
    QWEN3,
    QWEN3VL,
    QWEN3MOE,
    QWEN3VLMOE,
    PHI3,
    GEMMA,
    GEMMA2,
    GEMMA3,
    GEMMA3N,
    GRANITE,
    OLMO2,
    STARCODER2,
    GPT_OSS,
    DEEPSEEK2,
    COMMAND_R,
    COHERE2,
    EXAONE4,
    SMOLLM3,
    SEED_OSS,
    OLMO3,
    ERNIE4_5,
    ERNIE4_5_MOE,
    GLM4,
    GLM4MOE,
    BERT,
    MINISTRAL3,
    MINIMAX_M2,
    DOTS1,
    QWEN3NEXT,
    GPT2,
    STARCODER,
    MAMBA,
    MAMBA2,
    FALCON_MAMBA,
    QWEN35,
    QWEN35MOE,
    GLM,
    ARCEE,
    SOLAR_OPEN,
    HUNYUAN_DENSE,
    XLM_ROBERTA,
    EXAONE_MOE,
    AFMOE,
    GLM4MOE_LITE,
    COHERE2MOE,
    GPTNEOX,
    PHI2,
    STABLELM,
    OLMO,
    BLOOM,
    FALCON,
    OLMOE,
    GRANITEMOE,
    GRANITEMOE_SHARED,
    GRANITE_HYBRID,
    BAMBA,
    LFM2,
    JAMBA,
    DEEPSEEK32,
    GLM_DSA,
    MODERNBERT,
    NOMIC_BERT,
    MELLUM,
    JAIS2,
    LAGUNA,
    NEMOTRON,
    GRANITE_SWA,
    GRANITEMOE_SWA,
    YOUTU,
    DBRX,
    HY_V3,
    EUROBERT,
    JINA_BERT_V2,
    GEMMA_EMBEDDING,
    GEMMA4,
    NEMOTRON_H,
    NEMOTRON_H_MOE,
    FALCON_H1,
    LFM2_MOE,
    DISTILBERT,
    ROBERTA,
    CAMEMBERT,
    MINICPM3,
    MIMO2,
    KIMI_LINEAR,
    APERTUS,
    BITNET,
    HY_V4,
    HUNYUAN_MOE,
    QWEN4EXP,
    HRM_TEXT,
    GEMMA4_ASSISTANT,
    DEEPSEEK4,
  ].map((f) => [f.name, f]),
);

/**
 * Hugging Face classes aprkit names but does not convert to GGUF (their
 * APR import keeps the Hugging Face tensors as they are), with the
 * architecture name aprender and realizar use.
 */
const OTHER_ARCHITECTURES: Readonly<Record<string, string>> = {};

/**
 * transformers' `tie_word_embeddings` default of the config classes of
 * `model_type`s outside {@linkcode FAMILIES}.
 */
const OTHER_TIED_DEFAULTS: Readonly<Record<string, boolean>> = {
  gptj: false,
};

const BY_HF_ARCHITECTURE: ReadonlyMap<string, Family> = new Map(
  [...FAMILIES.values()].flatMap((f) => f.hfArchitectures.map((a) => [a, f] as const)),
);
const BY_MODEL_TYPE: ReadonlyMap<string, Family> = new Map(
  [...FAMILIES.values()].flatMap((f) => f.hfModelTypes.map((t) => [t, f] as const)),
);

// Not Map.groupBy: Node 20, which the bundle supports, lacks it.
const BY_GGUF_ARCHITECTURE: ReadonlyMap<string, readonly Family[]> = (() => {
  const map = new Map<string, Family[]>();
  for (const f of FAMILIES.values()) {
    map.set(f.ggufArchitecture, [...(map.get(f.ggufArchitecture) ?? []), f]);
  }
  return map;
})();

/**
 * The families llama.cpp files under one GGUF `general.architecture`
 * (`llama`: Llama, Mistral and Mixtral), in registry order.
 *
 * @param ggufArchitecture E.g. `"llama"`.
 * @returns The families; empty when aprkit knows none.
 */
export function familiesOfGguf(ggufArchitecture: string): readonly Family[] {
  return BY_GGUF_ARCHITECTURE.get(ggufArchitecture) ?? [];
}

/**
 * The family of a GGUF file. Where llama.cpp files several families under
 * one architecture, stacked experts (`*_exps` tensors) tell the one with
 * experts (Mixtral under `llama`), then, given the file, the family that
 * claims it (`Family.ggufClaims`: DistilBERT or XLM-RoBERTa under `bert`);
 * otherwise the family named like the architecture (Llama), or the only one
 * filed under it (glm under `chatglm`).
 *
 * @param ggufArchitecture `general.architecture`.
 * @param hasExperts Whether the file holds stacked experts.
 * @param file The file's tensor names and APR metadata, for the families that claim files.
 * @returns The family, or `undefined` when aprkit knows none.
 */
export function familyOfGguf(
  ggufArchitecture: unknown,
  hasExperts: boolean,
  file?: { readonly names: ReadonlySet<string>; readonly metadata: ModelMetadata },
): Family | undefined {
  if (typeof ggufArchitecture !== "string") return undefined;
  const families = familiesOfGguf(ggufArchitecture);
  const withExperts = hasExperts ? families.find((f) => f.experts !== undefined) : undefined;
  const claimed = file === undefined
    ? undefined
    : families.find((f) => f.ggufClaims?.(file.names, file.metadata) === true);
  // The only family under an architecture named otherwise (GLM-4-9B's `chatglm`).
  return withExperts ?? claimed ?? familyOf(ggufArchitecture) ??
    (families.length === 1 ? families[0] : undefined);
}

/**
 * The family of an aprkit architecture name (APR `architecture`).
 *
 * @param architecture E.g. `"qwen2"`.
 * @returns The family, or `undefined` when aprkit does not know it.
 */
export function familyOf(architecture: unknown): Family | undefined {
  return typeof architecture === "string" ? FAMILIES.get(architecture) : undefined;
}

/**
 * The architecture name of a Hugging Face model: its family's (for a
 * multimodal class, its language model's: `multimodal.ts`), else the name
 * aprender uses for a class aprkit knows only by name, else the lowercased
 * `model_type`.
 *
 * @param hfArchitecture `architectures[0]` of `config.json`.
 * @param modelType `model_type` of `config.json`.
 * @param config The whole `config.json` (a multimodal class's text model is in `text_config`).
 * @returns The name, or `undefined` when the config says neither.
 */
export function architectureOfHf(
  hfArchitecture: string | undefined,
  modelType: string | undefined,
  config: Readonly<Record<string, unknown>> = {},
): string | undefined {
  if (hfArchitecture !== undefined) {
    const text = multimodalTextFamily(hfArchitecture, config);
    if (text !== undefined) return text;
    const family = BY_HF_ARCHITECTURE.get(hfArchitecture);
    if (family !== undefined) return family.variantOf?.(config) ?? family.name;
    if (Object.hasOwn(OTHER_ARCHITECTURES, hfArchitecture)) {
      return OTHER_ARCHITECTURES[hfArchitecture];
    }
  }
  return modelType?.toLowerCase();
}

/**
 * transformers' default for `tie_word_embeddings` of a `model_type`.
 *
 * @param modelType `model_type` of `config.json`.
 * @returns The default, or `undefined` for a type aprkit does not know.
 */
export function tiedByDefault(modelType: string): boolean | undefined {
  const family = BY_MODEL_TYPE.get(modelType);
  if (family !== undefined) return family.tiedByDefault;
  return Object.hasOwn(OTHER_TIED_DEFAULTS, modelType) ? OTHER_TIED_DEFAULTS[modelType] : undefined;
}

/** The families aprkit writes as GGUF, by name, for messages. */
export function ggufFamilyList(): string {
  return [...FAMILIES.values()].filter((f) => f.gguf !== undefined).map((f) => f.name).join(", ");
}
