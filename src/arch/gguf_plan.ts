// This module is browser compatible.

/**
 * What a family's GGUF holds beyond renamed tensors, from a model's APR
 * metadata: the `{arch}.*` keys and the generated tensors, derived from the
 * `config.json` kept at import (`hf_config`) as llama.cpp's converter
 * derives them.
 *
 * @module
 */

import type { ModelMetadata } from "../tensor.ts";
import { configRefusal, configWarnings } from "./config_fields.ts";
import type { Family, GeneratedTensor } from "./family.ts";
import { type KvEntry, KvWriter, type KvWriterOptions, record } from "./kv.ts";
import { familyOf } from "./registry.ts";

/** A family's GGUF keys and generated tensors for one model. */
export interface FamilyGgufPlan {
  /** The family. */
  readonly family: Family;
  /**
   * Keys the converter adds while making tensors, before its metadata
   * (they follow `general.architecture`).
   */
  readonly early: ReadonlyMap<string, KvEntry>;
  /** The `set_gguf_parameters` keys, in order, `general.file_type` among them. */
  readonly keys: ReadonlyMap<string, KvEntry>;
  /** Tensors made from the config, written first. */
  readonly generated: readonly GeneratedTensor[];
}

/**
 * The metadata key under which the GGUF layout (`pipeline/gguf_layout.ts`)
 * passes the values of the tensors a family writes as keys
 * (`GgufSupport.tensorKeys`): tensor name → values, in the model's order.
 * Absent before they are read (the checks made before any output), where the
 * keys are not written.
 */
export const TENSOR_KEY_VALUES = "gguf_tensor_key_values";

/** The values under {@linkcode TENSOR_KEY_VALUES}, or `undefined` when not read. */
function tensorKeyValues(
  metadata: ModelMetadata,
): (readonly [string, readonly number[]])[] | undefined {
  const values = record(metadata[TENSOR_KEY_VALUES]);
  if (values === undefined) return undefined;
  return Object.entries(values).map(([name, v]) => [
    name,
    Array.isArray(v) ? v.filter((x): x is number => typeof x === "number") : [],
  ]);
}

/**
 * The family plan of a model converted from Hugging Face, or `undefined`
 * when the metadata has no `hf_config` or its family has no GGUF support.
 *
 * @param metadata APR metadata.
 * @returns The plan.
 * @throws {RangeError} When `config.json` lacks what the family's converter needs, or
 * the tensors it writes as keys are not all there.
 */
export function familyGgufPlan(metadata: ModelMetadata): FamilyGgufPlan | undefined {
  const family = familyOf(metadata.architecture);
  const config = record(metadata["hf_config"]);
  if (family?.gguf === undefined || config === undefined) return undefined;
  const options = kvOptions(metadata);
  const early = new KvWriter(config, family.ggufArchitecture, options);
  const folder = metadata["hf_folder_name"];
  family.gguf.writeEarlyKv?.(early, typeof folder === "string" ? folder : undefined);
  const generated = family.gguf.generate?.(early) ?? [];
  // The converter adds them as the tensors come, after generating its own.
  const values = tensorKeyValues(metadata);
  if (family.gguf.tensorKeys !== undefined && values !== undefined) {
    family.gguf.tensorKeys.write(early, values);
  }
  const keys = new KvWriter(config, family.ggufArchitecture, options);
  family.gguf.writeKv(keys);
  return { family, early: early.entries(), keys: keys.entries(), generated };
}

/**
 * Why llama.cpp could not run a model's config as its family's GGUF, if it
 * could not: a config field set otherwise than llama.cpp hard-codes
 * (`config_fields.ts`), or the family's own `unsupported`.
 *
 * @param metadata APR metadata.
 * @returns The reason, or `undefined`.
 */
export function familyGgufRefusal(metadata: ModelMetadata): string | undefined {
  const family = familyOf(metadata.architecture);
  const config = record(metadata["hf_config"]);
  if (family?.gguf === undefined || config === undefined) return undefined;
  const w = new KvWriter(config, family.ggufArchitecture, kvOptions(metadata));
  return configRefusal(family.configFields, w) ?? denseRefusal(family, w) ??
    family.gguf.unsupported?.(w) ?? t5Refusal(family, metadata) ??
    vocabularyRefusal(family, metadata) ?? llamaHfRefusal(family, metadata);
}

/**
 * Why a sentence embedder's `Dense` projections cannot be in its family's
 * GGUF: llama.cpp's converter drops them for every family but
 * EmbeddingGemma's, and a file without them does not give the model's
 * sentence vectors.
 */
function denseRefusal(family: Family, w: KvWriter): string | undefined {
  if (w.dense.length === 0 || family.gguf?.sentenceDense === true) return undefined;
  return `its sentence-transformers ${w.dense.map((d) => d.path).join(", ")} projection ` +
    `follows the pooling, and llama.cpp's ${family.ggufArchitecture} applies none (its ` +
    `converter drops it), so the file would not embed as the model does`;
}

/** Why a family that lists its GGUF vocabularies cannot have this model's. */
function vocabularyRefusal(family: Family, metadata: ModelMetadata): string | undefined {
  const model = metadata["tokenizer.ggml_model"];
  const known = family.ggufVocabularies;
  if (known === undefined || (typeof model === "string" && known.includes(model))) {
    return undefined;
  }
  return `its vocabulary is ${
    typeof model === "string" ? `a ${model} one` : "none aprkit read"
  }; ` +
    `aprkit writes a ${family.name} GGUF only with a ${known.join(" or ")} vocabulary, not ` +
    `matched against llama.cpp's converter for another`;
}

/**
 * Why a family whose converter reads its vocabulary with `LlamaHfVocab`
 * (Gemma 4) cannot have it from this model's tokenizer: it needs a
 * byte-fallback BPE `tokenizer.json`.
 */
function llamaHfRefusal(family: Family, metadata: ModelMetadata): string | undefined {
  const facts = family.llamaHfVocabulary;
  if (facts === undefined || metadata["tokenizer.ggml_model"] === facts.model) return undefined;
  return `its vocabulary cannot be written as llama.cpp's converter writes a ${family.name} ` +
    `one (a "${facts.model}" vocabulary from a byte-fallback BPE tokenizer.json): ` +
    (metadata["tokenizer.vocabulary"] === undefined
      ? "it has no tokenizer.json"
      : "its tokenizer.json is not one");
}

/**
 * Why a family whose converter writes a `t5` vocabulary (XLM-RoBERTa) cannot
 * have it from this model's tokenizer, as found at import.
 */
function t5Refusal(family: Family, metadata: ModelMetadata): string | undefined {
  if (family.t5Vocabulary !== true || metadata["tokenizer.ggml_model"] === "t5") return undefined;
  const why = metadata["tokenizer.t5_refusal"];
  return `its vocabulary cannot be written as llama.cpp's converter writes a ${family.name} ` +
    `one (a t5 vocabulary): ${typeof why === "string" ? why : "it has no tokenizer.json"}`;
}

/**
 * What llama.cpp computes otherwise than transformers only past a context
 * length (a sliding window it ignores, YaRN without truncation): the file is
 * written, and each is said in one warning.
 *
 * @param metadata APR metadata.
 * @returns The warnings (none for a model without `hf_config`).
 */
export function familyGgufWarnings(metadata: ModelMetadata): string[] {
  const family = familyOf(metadata.architecture);
  const config = record(metadata["hf_config"]);
  if (family?.gguf === undefined || config === undefined) return [];
  return configWarnings(
    family.configFields,
    new KvWriter(config, family.ggufArchitecture, kvOptions(metadata)),
  );
}

/**
 * What the family's keys read from the metadata besides `config.json`: the
 * sentence-transformers pooling and `Dense` projections, a reranker's labels,
 * the suppressed token ids.
 *
 * @param metadata APR metadata.
 * @returns The writer's options.
 */
export function kvOptions(metadata: ModelMetadata): KvWriterOptions {
  const pooling = metadata["embedding.pooling"];
  const dense = metadata["embedding.dense"];
  const labels = metadata["rerank.labels"];
  const ids = metadata["rerank.label_token_ids"];
  const template = metadata["rerank.template"];
  const suppress = metadata["suppress_tokens"];
  const rerank = Array.isArray(labels) && labels.every((l) => typeof l === "string") &&
      typeof template === "string"
    ? {
      labels,
      template,
      ...Array.isArray(ids) && ids.every((id) => Number.isSafeInteger(id) && id >= 0)
        ? { ids }
        : {},
    }
    : undefined;
  return {
    ...typeof pooling === "string" ? { pooling } : {},
    ...Array.isArray(dense) ? { dense: dense.filter((d) => record(d) !== undefined) } : {},
    ...rerank !== undefined ? { rerank } : {},
    ...Array.isArray(suppress) && suppress.every((id) => Number.isSafeInteger(id) && id >= 0)
      ? { suppressTokens: suppress }
      : {},
  };
}
