// This module is browser compatible.

/**
 * Hugging Face companion files (`config.json`, `tokenizer.json`,
 * `tokenizer_config.json`, `generation_config.json`, `chat_template.jinja`,
 * `chat_template.json`,
 * `preprocessor_config.json`)
 * turned into APR metadata (APR_V2.md §3, DESIGN.md §2.4).
 *
 * Choices, so readers of the APR file find what they need:
 *
 * - One spelling per field (APR_V2.md §3 alias trap): `hidden_size`,
 *   `num_layers`, `num_heads`, `num_kv_heads`, `vocab_size`,
 *   `intermediate_size`, `max_position_embeddings`, `rms_norm_eps`, whatever
 *   spelling the config used.
 * - `tokenizer.vocabulary[id]` is the token string of `id`, added tokens
 *   included. Ids no token claims (holes, and rows up to the config's
 *   `vocab_size` when the embedding is padded) get `"[PAD<id>]"`, as llama.cpp's
 *   converter does, so the index always equals the id and the length matches
 *   the embedding rows.
 * - `tokenizer.merges` is always `"a b"` strings; the newer `[a, b]` pair form
 *   is joined with one space.
 * - The chat template is written twice: `chat_template` (aprender's field) and
 *   `tokenizer.chat_template` (the custom key realizar reads). Neither is in an
 *   alias group, so both are safe.
 * - `tokenizer.bos_token_id`/`eos_token_id` are `tokenizer.special_ids`' BOS
 *   and EOS, the converter's (the tokenizer's own special tokens first), so an
 *   APR file holds one pair; where those name none, `generation_config.json`,
 *   else `config.json`, else the tokenizer_config's token string looked up;
 *   when several EOS ids are listed, the first is used.
 * - `hf_config` keeps `config.json` itself: the GGUF keys and generated
 *   tensors of a family (`src/arch/`) are derived from it on export, as
 *   llama.cpp's converter derives them (with what the converter counts from
 *   the tensors filled in: {@linkcode withTensorCounts}).
 * - What llama.cpp's converter derives from the tokenizer, for GGUF export
 *   (`tokenizer.ggml_model`, `tokenizer.pre`/`pre_type`, `tokenizer.token_type`,
 *   SentencePiece scores, `tokenizer.special_ids`, `tokenizer.add_special`,
 *   `tokenizer.add_space_prefix`, named chat templates): see `hf_tokenizer_gguf.ts`.
 * - `sampling`: the sampling defaults of `generation_config.json`, for the
 *   `general.sampling.*` GGUF keys (`arch/hf_sampling.ts`).
 * - The chat template comes from `tokenizer_config.json`, else
 *   `chat_template.jinja`, else `chat_template.json`, as the converter reads it;
 *   of several named ones, `chat_template` holds `default`.
 *
 * @module
 */

import { ModelFormatError } from "../../errors.ts";
import type { ModelMetadata } from "../../tensor.ts";
import { type ModelFiles, readCheckedFile, readCheckedText } from "../../io/model_files.ts";
import {
  ggufTemplateName,
  ggufTokenizerFields,
  specialVocabFields,
  specialVocabOf,
} from "./hf_tokenizer_gguf.ts";
import { samplingFromGenerationConfig } from "../../arch/hf_sampling.ts";
import {
  MAX_SENTENCEPIECE_BYTES,
  parseSentencePieceModel,
  type SentencePieceModel,
} from "../../tokenizer/sentencepiece_model.ts";
import { sentencePieceVocab } from "../../tokenizer/sentencepiece_vocab.ts";
import { t5VocabularyFields, t5VocabularyFromSentencePiece } from "../../tokenizer/t5_vocab.ts";
import {
  llamaHfVocabularyFields,
  transformersSpecialTokens,
} from "../../tokenizer/llama_hf_vocab.ts";
import { MAX_MODEL_CARD_BYTES, readModelCard } from "./model_card.ts";
import { sentenceDensePaths } from "./sentence_dense.ts";
import { rerankerMetadata } from "../../arch/qwen3_reranker.ts";
import { withSavedDefaults } from "../../arch/multimodal.ts";
import { mmprojSupport } from "../../arch/mmproj.ts";
import { addedTokenId } from "../../arch/added_token_id.ts";
import { tokenizeAlike } from "../../tokenizer/pre_tokenizers.ts";
import { architectureOfHf, familyOf, tiedByDefault } from "../../arch/registry.ts";
import { tiktokenAsTokenizerJson, type TiktokenFacts } from "../../tokenizer/tiktoken_vocab.ts";
import type { SentencePieceFacts } from "../../arch/family.ts";
import {
  checkConfigValues,
  type CheckpointBounds,
  checkpointBounds,
  checkTokenizerValues,
  checkWellFormedText,
  CompanionBudget,
  hasSurrogateEscape,
  MIN_VOCABULARY_BOUND,
} from "./companion_limits.ts";

/**
 * Largest config-like companion read (`config.json`, `tokenizer_config.json`,
 * `generation_config.json`, `chat_template.jinja`): real ones are kilobytes;
 * a few MB with a huge `added_tokens_decoder`.
 */
export const MAX_CONFIG_BYTES = 32_000_000;

/** Largest `tokenizer.json` read: the largest real ones (256k-token vocabularies) are ~35 MB. */
export const MAX_TOKENIZER_BYTES = 200_000_000;

/** Parsed companion files; each may be absent. */
export interface HfCompanions {
  /** `config.json`. */
  config?: unknown;
  /** `tokenizer.json`. */
  tokenizer?: unknown;
  /**
   * How `tokenizer` was read from the family's tiktoken file, when the
   * folder has no `tokenizer.json` (then gguf-py's `SpecialVocab` names no ids).
   */
  tiktoken?: TiktokenFacts;
  /** `tokenizer_config.json`. */
  tokenizerConfig?: unknown;
  /** `generation_config.json`. */
  generationConfig?: unknown;
  /** `chat_template.jinja`, used when `tokenizer_config.json` has no template. */
  chatTemplate?: string;
  /**
   * `additional_chat_templates/NAME.jinja` beside a `chat_template.jinja`
   * (transformers saves extra templates there), sorted by name.
   */
  additionalChatTemplates?: { name: string; template: string }[];
  /** `chat_template.json` (`{"chat_template": ...}`), used when neither has one. */
  chatTemplateJson?: unknown;
  /**
   * `added_tokens.json` (`{text: id}`), which the converter's SentencePiece
   * vocabulary writes over the pieces.
   */
  addedTokens?: unknown;
  /** `tokenizer.model`, parsed: SentencePiece pieces, as llama.cpp's converter prefers them. */
  sentencePiece?: SentencePieceModel;
  /** `preprocessor_config.json` (an image processor's size, mean and std). */
  preprocessorConfig?: unknown;
  /** `hf_quant_config.json` (NVIDIA ModelOpt's quantization config). */
  hfQuantConfig?: unknown;
  /** `README.md`'s YAML header: the keys llama.cpp's converter reads (`model_card.ts`). */
  modelCard?: Record<string, unknown>;
  /** `README.md`'s text (its first {@linkcode MAX_MODEL_CARD_BYTES}), for what its headings say. */
  readme?: string;
  /** The model folder's name (the converter's `dir_model.name`), when known. */
  folder?: string;
  /** sentence-transformers' `modules.json`: the pipeline after the transformer. */
  sentenceModules?: unknown;
  /** The `config.json` of its first `…Pooling` module (`1_Pooling/config.json`). */
  sentencePooling?: unknown;
  /**
   * Its `…Dense` modules in pipeline order (EmbeddingGemma's `2_Dense`,
   * `3_Dense`): each folder and its `config.json` (features, bias, activation).
   */
  sentenceDense?: { path: string; config: unknown }[];
  /**
   * XLM-RoBERTa's `sentencepiece.bpe.model`, parsed: its converter class
   * builds the vocabulary from it rather than from `tokenizer.json`.
   */
  sentencePieceBpe?: SentencePieceModel;
}

/** Options of {@linkcode readHfCompanions}. */
export interface ReadHfCompanionsOptions {
  /**
   * Folder of the repository holding the model (for models in a subfolder).
   *
   * @default {""}
   */
  directory?: string;
  /**
   * The checkpoint's tensors: their largest dimension backed by bytes bounds
   * every token id, `vocab_size` and sizing count, their number every layer
   * count (see `companion_limits.ts`).
   *
   * @default {undefined} (ids bounded by `MIN_VOCABULARY_BOUND` only, layers by nothing)
   */
  tensors?: readonly { readonly shape: readonly number[]; readonly byteLength: number }[];
}

/** APR `rope_type` of NEOX-style rotation (APR_V2.md §3). */
const ROPE_TYPE_NEOX = 2;
/** APR `rope_type` of rotation by adjacent pairs (NORM). */
const ROPE_TYPE_NORM = 0;

/**
 * Whether a Hugging Face model's output layer is its embedding, as
 * transformers decides: `tie_word_embeddings` when `config.json` sets it,
 * else its config class's default.
 *
 * @param config The parsed `config.json`.
 * @returns The answer, or `undefined` when neither says.
 */
export function tiedWordEmbeddings(config: Record<string, unknown>): boolean | undefined {
  const explicit = config["tie_word_embeddings"];
  if (typeof explicit === "boolean") return explicit;
  const type = config["model_type"];
  return typeof type === "string" ? tiedByDefault(type) : undefined;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}

function firstNumber(source: Record<string, unknown>, keys: readonly string[]): number | undefined {
  for (const key of keys) {
    const v = source[key];
    if (typeof v === "number" && Number.isFinite(v)) return v;
  }
  return undefined;
}

/** A number, or the first of a per-layer list of numbers (HunYuan MoE's `moe_topk`). */
function listHead(value: unknown): number | undefined {
  if (typeof value === "number") return value;
  return Array.isArray(value) && typeof value[0] === "number" ? value[0] : undefined;
}

function firstString(value: unknown): string | undefined {
  return Array.isArray(value) && typeof value[0] === "string" ? value[0] : undefined;
}

function firstId(value: unknown): number | undefined {
  if (Array.isArray(value)) value = value[0];
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** A special token in tokenizer_config.json: a string, or `{content: "..."}` (AddedToken). */
function tokenString(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  const content = record(value)?.["content"];
  return typeof content === "string" ? content : undefined;
}

interface Vocabulary {
  tokens: string[];
  scores: number[] | undefined;
  merges: string[] | undefined;
  modelType: string | undefined;
  ids: Map<string, number>;
}

function readVocabulary(tokenizer: unknown, minSize: number | undefined): Vocabulary | undefined {
  const model = record(record(tokenizer)?.["model"]);
  if (model === undefined) return undefined;
  const modelType = typeof model["type"] === "string" ? model["type"] : undefined;
  const byId: (string | undefined)[] = [];
  let scores: number[] | undefined;
  const vocab = model["vocab"];
  if (Array.isArray(vocab)) {
    // Unigram: [[token, score], ...], id = index.
    scores = [];
    for (const [id, entry] of vocab.entries()) {
      if (Array.isArray(entry) && typeof entry[0] === "string") {
        byId[id] = entry[0];
        scores[id] = typeof entry[1] === "number" ? entry[1] : 0;
      }
    }
  } else {
    const map = record(vocab);
    if (map !== undefined) {
      // for…in, not Object.entries: no million [key, value] pairs (issue 20 item 2).
      for (const token in map) {
        const id = map[token];
        if (typeof id === "number" && Number.isSafeInteger(id) && id >= 0) byId[id] = token;
      }
    }
  }
  const added = record(tokenizer)?.["added_tokens"];
  if (Array.isArray(added)) {
    for (const entry of added) {
      const t = record(entry);
      const id = t?.["id"];
      if (
        typeof t?.["content"] === "string" && typeof id === "number" && Number.isSafeInteger(id) &&
        id >= 0
      ) {
        byId[id] = t["content"];
      }
    }
  }
  // Ids past the config's vocab_size have no embedding row: llama.cpp's
  // converter ignores them ("id is out of range"), and so does aprkit
  // (transformers 5's GemmaTokenizer appends a <mask> there).
  if (minSize !== undefined && byId.length > minSize) byId.length = minSize;
  const length = Math.max(byId.length, minSize ?? 0);
  const tokens: string[] = [];
  const ids = new Map<string, number>();
  for (let id = 0; id < length; id++) {
    const token = byId[id] ?? `[PAD${id}]`;
    tokens.push(token);
    if (byId[id] !== undefined && !ids.has(token)) ids.set(token, id);
  }
  if (scores !== undefined) {
    scores.length = Math.min(scores.length, length);
    for (let id = 0; id < length; id++) scores[id] ??= 0;
  }
  let merges: string[] | undefined;
  if (Array.isArray(model["merges"])) {
    merges = [];
    for (const m of model["merges"]) {
      if (typeof m === "string") merges.push(m);
      else if (Array.isArray(m) && m.length === 2) merges.push(`${m[0]} ${m[1]}`);
    }
  }
  return { tokens, scores, merges, modelType, ids };
}

/** Take a `chat_template` value's templates (a string, or `[{name, template}]`) from the budget. */
function takeTemplates(value: unknown, location: string, budget: CompanionBudget): void {
  if (typeof value === "string") budget.takeTemplate(value.length, location);
  if (!Array.isArray(value)) return;
  for (const entry of value) {
    const template = record(entry)?.["template"];
    if (typeof template === "string") budget.takeTemplate(template.length, location);
  }
}

function chatTemplateOf(
  tokenizerConfig: Record<string, unknown>,
  jinja: string | undefined,
  json: unknown,
): string | undefined {
  const fallback = jinja ?? record(json)?.["chat_template"];
  const t = Object.hasOwn(tokenizerConfig, "chat_template")
    ? tokenizerConfig["chat_template"]
    : fallback;
  if (typeof t === "string") return t;
  // Several named templates: [{name, template}]; take "default", else the first.
  if (Array.isArray(t)) {
    const named = t.map(record).filter((x) => typeof x?.["template"] === "string");
    const chosen = named.find((x) => x?.["name"] === "default") ?? named[0];
    if (chosen !== undefined) return chosen["template"] as string;
  }
  return undefined;
}

/**
 * The metadata with its `hf_config` completed from the checkpoint's tensor
 * names, where its family's converter counts from them what the config does
 * not say (`GgufSupport.countedConfig`: Qwen3-Next's multi-token-prediction
 * layers); any other metadata as it is.
 *
 * @param metadata The metadata from {@linkcode aprMetadataFromHf}.
 * @param names The checkpoint's tensor names.
 * @returns The metadata.
 */
export function withTensorCounts(
  metadata: ModelMetadata,
  names: readonly string[],
): ModelMetadata {
  const config = record(metadata["hf_config"]);
  const count = familyOf(metadata.architecture)?.gguf?.countedConfig;
  if (config === undefined || count === undefined) return metadata;
  const counted = count(config, names);
  return counted === config ? metadata : { ...metadata, hf_config: counted };
}

/**
 * Map Hugging Face companion files to APR metadata. Pure: no I/O.
 *
 * @example Usage
 * ```ts
 * import { aprMetadataFromHf } from "./hf_metadata.ts";
 * const m = aprMetadataFromHf({
 *   config: { architectures: ["LlamaForCausalLM"], model_type: "llama", num_hidden_layers: 2 },
 * });
 * console.assert(m.architecture === "llama" && m.num_layers === 2);
 * ```
 *
 * @param files The parsed files; absent ones contribute nothing.
 * @returns Metadata in APR's vocabulary, one spelling per field.
 */
export function aprMetadataFromHf(files: HfCompanions): ModelMetadata {
  // What a multimodal class's saved config leaves out, as transformers fills it in.
  const config = withSavedDefaults(record(files.config) ?? {});
  const tokenizerConfig = record(files.tokenizerConfig) ?? {};
  const generation = record(files.generationConfig) ?? {};
  // Multimodal configs keep the language model's numbers under text_config.
  const text = { ...record(config["text_config"]), ...config };
  const out: ModelMetadata = {};

  const chatTemplate = chatTemplateOf(tokenizerConfig, files.chatTemplate, files.chatTemplateJson);
  if (chatTemplate !== undefined) out.chat_template = chatTemplate;

  const special: NonNullable<ModelMetadata["special_tokens"]> = {};
  for (const key of ["bos_token", "eos_token", "unk_token", "pad_token"] as const) {
    const token = tokenString(tokenizerConfig[key]);
    if (token !== undefined) special[key] = token;
  }

  // transformers 4.57 saves Qwen2.5-VL's class in text_config only; llama.cpp's converter looks there too.
  const hfArchitecture = firstString(config["architectures"]) ??
    firstString(record(config["text_config"])?.["architectures"]);
  const hfModelType = typeof config["model_type"] === "string" ? config["model_type"] : undefined;
  const architecture = architectureOfHf(hfArchitecture, hfModelType, config);
  if (architecture !== undefined) out.architecture = architecture;
  if (hfArchitecture !== undefined) out.hf_architecture = hfArchitecture;
  if (hfModelType !== undefined) out.hf_model_type = hfModelType;

  const set = (key: keyof ModelMetadata, value: number | undefined): void => {
    if (value !== undefined) out[key] = value;
  };
  set("hidden_size", firstNumber(text, ["hidden_size", "n_embd", "d_model", "hidden_dim"]));
  set("num_layers", firstNumber(text, ["num_hidden_layers", "n_layer", "n_layers", "num_layers"]));
  const heads = firstNumber(text, ["num_attention_heads", "n_head", "n_heads", "num_heads"]);
  set("num_heads", heads);
  // Without num_key_value_heads, Llama-style configs mean one KV head per head.
  set(
    "num_kv_heads",
    firstNumber(text, ["num_key_value_heads", "n_kv_heads", "num_kv_heads"]) ?? heads,
  );
  const vocabSize = firstNumber(text, ["vocab_size", "n_vocab"]);
  set("vocab_size", vocabSize);
  set(
    "intermediate_size",
    firstNumber(text, ["intermediate_size", "n_inner", "ffn_dim", "intermediate_dim"]),
  );
  set(
    "max_position_embeddings",
    firstNumber(text, [
      "max_position_embeddings",
      "n_positions",
      "max_seq_len",
      "seq_length",
      "n_ctx",
    ]),
  );
  const ropeParameters = record(text["rope_parameters"]) ?? {};
  set(
    "rope_theta",
    firstNumber(text, ["rope_theta"]) ?? firstNumber(ropeParameters, ["rope_theta"]) ??
      // transformers 5's per-attention-type parameters (Gemma 3): the global layers' base.
      firstNumber(record(ropeParameters["full_attention"]) ?? {}, ["rope_theta"]),
  );
  // A RoPE model in Hugging Face layout rotates pairs (i, i + head_dim/2):
  // transformers' rotate_half, which is NEOX style (APR rope_type 2). GGUF's
  // llama files differ because llama.cpp's converter permutes Q/K rows for
  // its NORM style; imported HF weights are not permuted, so NEOX is right
  // for every architecture here but those whose transformers model rotates
  // adjacent pairs itself (Llama 4: NORM, APR rope_type 0).
  // realizar reads rope_type to choose its rotation: every family aprkit
  // knows uses RoPE but those without (GPT-2's learned positions, BLOOM's
  // ALiBi, the state-space Mamba), so it is written for them even without a rope_theta.
  const family = familyOf(architecture);
  if (
    (out.rope_theta !== undefined || family !== undefined) && family?.noRope !== true &&
    family?.ggufRopeType !== "none"
  ) {
    out.rope_type = family?.hfRopeInterleaved === true ? ROPE_TYPE_NORM : ROPE_TYPE_NEOX;
  }
  set(
    "rms_norm_eps",
    firstNumber(text, ["rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_eps"]),
  );
  set("head_dim", firstNumber(text, ["head_dim"]));
  set(
    "num_experts",
    // moe_num_experts, moe_k: ERNIE 4.5 MoE's names.
    firstNumber(text, ["num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"]),
  );
  // top_k_experts: Gemma 4's; moe_topk: HunYuan MoE's (a per-layer list, all equal).
  set(
    "num_experts_per_tok",
    firstNumber(text, ["num_experts_per_tok", "moe_k", "top_k_experts"]) ??
      listHead(text["moe_topk"]),
  );
  set(
    "moe_intermediate_size",
    firstNumber(text, ["moe_intermediate_size"]) ?? listHead(text["moe_intermediate_size"]),
  );
  // A family that names its widths otherwise (Llama 4), as its GGUF holds them.
  const widths = family?.hfWidthKeys ?? {};
  for (const [field, key] of Object.entries(widths)) {
    const value = firstNumber(text, [key]);
    if (value !== undefined) out[field as keyof typeof widths] = value;
  }

  const vocabulary = readVocabulary(files.tokenizer, vocabSize);
  if (vocabulary !== undefined) {
    if (vocabulary.ids.has("<|im_start|>")) special.im_start_token = "<|im_start|>";
    if (vocabulary.ids.has("<|im_end|>")) special.im_end_token = "<|im_end|>";
  }
  if (Object.keys(special).length > 0) out.special_tokens = special;

  if (vocabulary !== undefined) {
    out["tokenizer.vocabulary"] = vocabulary.tokens;
    if (vocabulary.merges !== undefined) out["tokenizer.merges"] = vocabulary.merges;
    out["tokenizer.vocab_size"] = vocabulary.tokens.length;
  }
  const lookup = (token: string | undefined) =>
    token === undefined ? undefined : vocabulary?.ids.get(token);
  // A multimodal config may hold them in text_config only (gguf-py's SpecialVocab looks there too).
  const textConfig = record(config["text_config"]) ?? {};
  const bos = firstId(generation["bos_token_id"]) ?? firstId(config["bos_token_id"]) ??
    firstId(textConfig["bos_token_id"]) ?? lookup(special.bos_token ?? undefined);
  const eos = firstId(generation["eos_token_id"]) ?? firstId(config["eos_token_id"]) ??
    firstId(textConfig["eos_token_id"]) ?? lookup(special.eos_token ?? undefined);
  if (bos !== undefined) out["tokenizer.bos_token_id"] = bos;
  if (eos !== undefined) out["tokenizer.eos_token_id"] = eos;
  if (vocabulary?.modelType !== undefined) out["tokenizer.model_type"] = vocabulary.modelType;
  if (vocabulary?.scores !== undefined) out["tokenizer.scores"] = vocabulary.scores;
  if (chatTemplate !== undefined) out["tokenizer.chat_template"] = chatTemplate;
  // What llama.cpp's converter would write, for GGUF export.
  if (vocabulary !== undefined) {
    Object.assign(
      out,
      ggufTokenizerFields({
        ...files,
        tokenizerConfig,
        config,
        tokens: vocabulary.tokens,
        ...(vocabulary.merges !== undefined ? { merges: vocabulary.merges } : {}),
      }),
    );
  }
  // The family's own name for a pre-tokenizer llama.cpp runs alike (GLM's glm4).
  const familyPre = familyOf(architecture)?.preTokenizer;
  const pre = out["tokenizer.pre"];
  if (familyPre !== undefined && typeof pre === "string" && tokenizeAlike(pre, familyPre)) {
    out["tokenizer.pre"] = familyPre;
    out["tokenizer.pre_type"] = familyPre;
  }
  // Special tokens the family's converter class looks up by name (GLM's
  // `_set_vocab_glm`), after those the files name, for kinds still unset.
  const byName = familyOf(architecture)?.specialTokensByName;
  if (byName !== undefined && vocabulary !== undefined) {
    const ids = { ...(record(out["tokenizer.special_ids"]) ?? {}) };
    for (const [kind, token] of byName) {
      const id = vocabulary.ids.get(token);
      if (id !== undefined && ids[kind] === undefined) ids[kind] = id;
    }
    if (Object.keys(ids).length > 0) out["tokenizer.special_ids"] = ids;
  }
  // Ids the family's converter class sets from the configs, over the files' (HunYuan's EOS).
  const fromConfig = familyOf(architecture)?.specialIdsFromConfig?.(text, generation);
  if (fromConfig !== undefined && vocabulary !== undefined && Object.keys(fromConfig).length > 0) {
    out["tokenizer.special_ids"] = {
      ...(record(out["tokenizer.special_ids"]) ?? {}),
      ...fromConfig,
    };
  }
  // A tiktoken vocabulary: the converter's name for it, and EOS from its remote tokenizer
  // (Kimi-Linear's `tokenizer.eos_id`, written over SpecialVocab's).
  const tiktoken = files.tiktoken;
  if (tiktoken?.pre !== undefined && vocabulary !== undefined) {
    delete out["tokenizer.pre_unrecognised"];
    out["tokenizer.pre"] = tiktoken.pre;
    out["tokenizer.pre_type"] = tiktoken.pre;
  }
  const tokenizerEos = lookup(tokenString(tokenizerConfig["eos_token"]));
  if (tiktoken?.eosFromTokenizer === true && tokenizerEos !== undefined) {
    out["tokenizer.special_ids"] = {
      ...(record(out["tokenizer.special_ids"]) ?? {}),
      eos: tokenizerEos,
    };
  }
  // add_bos_token as the family's converter class sets it after SpecialVocab's (Nemotron-H).
  const addBos = familyOf(architecture)?.addBosToken;
  if (addBos !== undefined && vocabulary !== undefined) {
    out["tokenizer.add_special"] = { ...(record(out["tokenizer.add_special"]) ?? {}), bos: addBos };
    out["tokenizer.add_bos_token"] = addBos;
  }
  // XLM-RoBERTa's converter class: the Unigram vocabulary as llama.cpp's `t5` one.
  if (familyOf(architecture)?.t5Vocabulary === true && vocabulary !== undefined) {
    Object.assign(out, t5Vocabulary(files, config, tokenizerConfig, vocabulary.tokens, out));
  }
  // Gemma 4's converter class: the byte-fallback BPE vocabulary as LlamaHfVocab reads it.
  const hfVocab = familyOf(architecture)?.llamaHfVocabulary;
  const tokenizerModel = record(record(files.tokenizer)?.["model"]);
  if (
    hfVocab !== undefined && vocabulary !== undefined && vocabulary.modelType === "BPE" &&
    out["tokenizer.ggml_model"] === "llama" && tokenizerModel?.["byte_fallback"] === true
  ) {
    const base = record(tokenizerModel["vocab"]);
    Object.assign(
      out,
      llamaHfVocabularyFields({
        model: hfVocab.model,
        tokens: vocabulary.tokens,
        baseSize: base === undefined ? vocabulary.tokens.length : Object.keys(base).length,
        specialTokens: transformersSpecialTokens(tokenizerConfig),
        userDefined: hfVocab.userDefined,
      }),
    );
    // The converter writes no pre-tokenizer: llama.cpp's gemma4 vocabulary has its own.
    delete out["tokenizer.pre"];
    delete out["tokenizer.pre_type"];
  }
  // RoBERTa's converter class: the token-type count after its byte-level BPE vocabulary (the
  // GGUF writer puts it after a gpt2 vocabulary; a WordPiece one has it already).
  if (
    familyOf(architecture)?.bpeTokenTypeCount === true &&
    out["tokenizer.token_type_count"] === undefined
  ) {
    const types = config["type_vocab_size"] ?? 1;
    if (typeof types === "number") out["tokenizer.token_type_count"] = types;
  }
  // A SentencePiece tokenizer.model: the vocabulary the converter reads from it.
  if (
    files.sentencePiece !== undefined &&
    (vocabulary === undefined || out["tokenizer.ggml_model"] === "llama")
  ) {
    const facts = familyOf(architecture)?.sentencePiece ?? {};
    // The model's flags replace what tokenizer.json's steps implied.
    delete out["tokenizer.add_space_prefix"];
    delete out["tokenizer.remove_extra_whitespaces"];
    Object.assign(
      out,
      sentencePieceFields(files, files.sentencePiece, vocabSize, tokenizerConfig, facts),
    );
  }
  // One BOS/EOS pair, the converter's (gguf-py SpecialVocab: the tokenizer's
  // own special tokens first, config.json's ids only where it names none):
  // realizar reads tokenizer.bos/eos_token_id, GGUF export special_ids.
  const specialIds = record(out["tokenizer.special_ids"]);
  for (const kind of ["bos", "eos"] as const) {
    const id = specialIds?.[kind];
    if (typeof id === "number") out[`tokenizer.${kind}_token_id`] = id;
  }
  // general.sampling.* for GGUF export, as llama.cpp's converter reads them.
  const sampling = samplingFromGenerationConfig(generation);
  if (Object.keys(sampling).length > 0) out["sampling"] = sampling;
  // The ids generation never samples, for the families whose converter writes them
  // (Gemma 4 unified's tokenizer.ggml.suppress_tokens).
  const suppress = generation["suppress_tokens"];
  if (Array.isArray(suppress) && suppress.every((id) => Number.isSafeInteger(id) && id >= 0)) {
    out["suppress_tokens"] = suppress;
  }
  const tied = tiedWordEmbeddings(text);
  if (tied !== undefined) out["tied_embeddings"] = tied;
  Object.assign(out, sentenceEmbedding(files));
  Object.assign(
    out,
    rerankerMetadata(
      { architecture, readme: files.readme, folder: files.folder, config },
      (token) => vocabularyId(files.tokenizer, token),
    ),
  );
  // The whole config, for what a family derives from it on export (GGUF
  // keys, generated tensors: src/arch/) and for writing it back.
  if (Object.keys(config).length > 0) out["hf_config"] = config;
  // The image processor's settings, for a vision GGUF (llama.cpp's --mmproj keys).
  const preprocessor = record(files.preprocessorConfig);
  if (preprocessor !== undefined) out["hf_preprocessor_config"] = preprocessor;
  // The ids of the added tokens a vision GGUF takes embedding rows of (Mistral 3's [IMG_BREAK]).
  const wanted = mmprojSupport(hfArchitecture)?.addedTokens ?? [];
  if (wanted.length > 0) {
    const ids: Record<string, number> = {};
    for (const token of wanted) {
      const id = addedTokenId(tokenizerConfig, files.tokenizer, token);
      if (id !== undefined) ids[token] = id;
    }
    out["hf_mmproj_token_ids"] = ids;
  }
  // The model card's keys, for the general.* GGUF keys (arch/hf_model_card.ts).
  if (files.modelCard !== undefined) out["model_card"] = files.modelCard;
  return out;
}

/**
 * The `t5` vocabulary keys (`t5_vocab.ts`), or `tokenizer.t5_refusal`: why
 * the converter's XLM-RoBERTa vocabulary cannot be written from these files.
 */
function t5Vocabulary(
  files: HfCompanions,
  config: Record<string, unknown>,
  tokenizerConfig: Record<string, unknown>,
  tokens: readonly string[],
  out: ModelMetadata,
): ModelMetadata {
  const types = firstNumber(config, ["type_vocab_size"]) ?? 1;
  if (files.sentencePieceBpe !== undefined) {
    const fields = t5VocabularyFromSentencePiece(
      files.sentencePieceBpe,
      firstNumber(config, ["vocab_size"]),
    );
    if (typeof fields === "string") return { "tokenizer.t5_refusal": fields };
    return { ...fields, "tokenizer.token_type_count": types };
  }
  const tokenizer = record(files.tokenizer) ?? {};
  const added = new Set<number>();
  const specialIds = new Set<number>(
    Object.values(record(out["tokenizer.special_ids"]) ?? {}).filter((v): v is number =>
      typeof v === "number"
    ),
  );
  for (const entry of Array.isArray(tokenizer["added_tokens"]) ? tokenizer["added_tokens"] : []) {
    const t = record(entry);
    if (typeof t?.["id"] !== "number") continue;
    added.add(t["id"]);
    if (t["special"] === true) specialIds.add(t["id"]);
  }
  // The converter: the added `unk_token`'s id, else the model's `unk_id`, else 3.
  const unkToken = tokenizerConfig["unk_token"];
  const unkAdded = typeof unkToken === "string" ? tokens.indexOf(unkToken) : -1;
  const unkId = unkAdded >= 0 && added.has(unkAdded)
    ? unkAdded
    : firstNumber(record(tokenizer["model"]) ?? {}, ["unk_id"]) ?? 3;
  const fields = t5VocabularyFields({
    tokenizer,
    tokenizerConfig,
    tokens,
    added,
    specialIds,
    unkId,
  });
  if (typeof fields === "string") return { "tokenizer.t5_refusal": fields };
  return { ...fields, "tokenizer.token_type_count": types };
}

/**
 * A token's id in `tokenizer.json` (an added token's, else the model
 * vocabulary's), as transformers' `convert_tokens_to_ids` finds it.
 */
function vocabularyId(tokenizer: unknown, token: string): number | undefined {
  const t = record(tokenizer);
  const added = Array.isArray(t?.["added_tokens"]) ? t["added_tokens"] : [];
  for (const a of added) {
    const r = record(a);
    if (r?.["content"] === token && typeof r["id"] === "number") return r["id"];
  }
  const vocab = record(record(t?.["model"])?.["vocab"]);
  const id = vocab !== undefined && Object.hasOwn(vocab, token) ? vocab[token] : undefined;
  return typeof id === "number" ? id : undefined;
}

/**
 * The sentence-transformers modules APR metadata says (the transformer the
 * checkpoint is, `embedding.pooling`, `embedding.dense`,
 * `embedding.normalize`), by the type's last name as the converter tests
 * `Pooling` and `Dense`.
 */
const RECORDED_MODULE = /(Transformer|Pooling|Dense|Normalize)$/;

/**
 * How a sentence-transformers model makes a sentence vector, from its
 * `modules.json`: `embedding.pooling`, the pooling module's mode as the
 * converter's `_try_set_pooling_type` reads it (`mean`, `cls`, `lasttoken`,
 * else the mode it names: `max`, `weightedmean`…), and `embedding.normalize`,
 * whether a `Normalize` module follows, and `embedding.dense`, its `Dense`
 * projections in order (folder, features, bias, activation; the weights are
 * the tensors `<folder>.linear.weight`), and `embedding.unrecorded_modules`,
 * the modules none of these says (a `LayerNorm`, `WordWeights`, `Router`…:
 * `<folder> (<type>)`), for which the model is refused for APR and GGUF.
 * Nothing without `modules.json`.
 */
function sentenceEmbedding(files: HfCompanions): ModelMetadata {
  if (!Array.isArray(files.sentenceModules)) return {};
  const types = files.sentenceModules.map((m) => record(m)?.["type"]);
  const out: ModelMetadata = {
    "embedding.normalize": types.some((t) => typeof t === "string" && t.endsWith("Normalize")),
  };
  const unrecorded = files.sentenceModules.flatMap((m) => {
    const type = record(m)?.["type"];
    return typeof type === "string" && !RECORDED_MODULE.test(type)
      ? [`${record(m)?.["path"] || "(root)"} (${type})`]
      : [];
  });
  if (unrecorded.length > 0) out["embedding.unrecorded_modules"] = unrecorded;
  const dense = (files.sentenceDense ?? []).map(({ path, config }) => {
    const c = record(config) ?? {};
    return {
      path,
      in_features: c["in_features"] ?? null,
      out_features: c["out_features"] ?? null,
      bias: c["bias"] ?? null,
      activation_function: c["activation_function"] ?? null,
    };
  });
  if (dense.length > 0) out["embedding.dense"] = dense;
  const pooling = record(files.sentencePooling);
  if (pooling === undefined) return out;
  const flag = (mode: string) => pooling[`pooling_mode_${mode}`] === true;
  const mode = flag("mean_tokens")
    ? "mean"
    : flag("cls_token")
    ? "cls"
    : flag("lasttoken")
    ? "lasttoken"
    : typeof pooling["pooling_mode"] === "string"
    ? pooling["pooling_mode"]
    : flag("max_tokens")
    ? "max"
    : flag("weightedmean_tokens")
    ? "weightedmean"
    : flag("mean_sqrt_len_tokens")
    ? "mean_sqrt_len_tokens"
    : "none";
  return { "embedding.pooling": mode, ...out };
}

/**
 * The `tokenizer.*` keys of a SentencePiece `tokenizer.model` (replacing
 * those from `tokenizer.json`, as the converter prefers the model): pieces,
 * scores and types as `_create_vocab_sentencepiece` builds them,
 * `add_space_prefix` as the family's converter class sets it, else from
 * `tokenizer_config.json`'s `add_prefix_space` where the class reads it
 * (`LlamaModel`), else
 * false when the model has no `add_dummy_prefix` (llama.cpp's default is
 * true; the converter writes nothing there and llama.cpp would add a space).
 * `remove_extra_whitespaces` is not written: the converter's SentencePiece
 * path never writes it and llama.cpp's SentencePiece tokenizer ignores it.
 */
function sentencePieceFields(
  files: HfCompanions,
  model: SentencePieceModel,
  vocabSize: number | undefined,
  tokenizerConfig: Record<string, unknown>,
  facts: SentencePieceFacts,
): ModelMetadata {
  const added = record(files.tokenizer)?.["added_tokens"];
  const addedTokensJson = record(files.addedTokens);
  const vocab = sentencePieceVocab(model, vocabSize, tokenizerConfig, {
    ...(facts.addedTokensVerbatim === true
      ? { verbatimAddedTokens: Array.isArray(added) ? added : [] }
      : {}),
    ...(addedTokensJson !== undefined ? { addedTokensJson } : {}),
  });
  const special = specialVocabOf(files, files.tokenizer ?? {}, vocab.tokens.length);
  const out: ModelMetadata = {
    "tokenizer.vocabulary": vocab.tokens,
    "tokenizer.vocab_size": vocab.tokens.length,
    "tokenizer.scores": vocab.scores,
    "tokenizer.ggml_model": "llama",
    "tokenizer.pre": "default",
    "tokenizer.pre_type": "default",
    "tokenizer.token_type": vocab.types,
  };
  const configured = tokenizerConfig["add_prefix_space"];
  const addSpacePrefix = facts.addSpacePrefix ??
    (facts.addSpacePrefixFromTokenizerConfig === true && typeof configured === "boolean"
      ? configured
      : facts.addSpacePrefixWhenConfigured === true &&
          Object.hasOwn(tokenizerConfig, "add_prefix_space")
      ? configured === true
      : model.addDummyPrefix
      ? undefined
      : false);
  if (addSpacePrefix !== undefined) out["tokenizer.add_space_prefix"] = addSpacePrefix;
  const byVocabSize = facts.specialIdsByVocabSize?.[vocab.tokens.length] ?? {};
  for (const [kind, id] of Object.entries({ ...facts.specialIds, ...byVocabSize })) {
    if (special.ids[kind] === undefined && id < vocab.tokens.length) special.ids[kind] = id;
  }
  for (const [kind, id] of Object.entries(facts.forcedIds ?? {})) special.ids[kind] = id;
  return { ...out, ...specialVocabFields(special) };
}

async function readCompanion(
  files: ModelFiles,
  listing: ReadonlySet<string>,
  path: string,
  maxBytes: number,
  budget: CompanionBudget,
  template = false,
): Promise<string | undefined> {
  if (!listing.has(path)) return undefined;
  // Checked before reading, so a hostile file cannot exhaust memory.
  return await readCheckedText(files, path, (size) => {
    if (size > maxBytes) {
      throw new ModelFormatError(
        "JSON",
        files.locate(path),
        `too large: ${size} bytes exceeds the ${maxBytes}-byte limit for this file`,
      );
    }
    budget.takeFile(size, files.locate(path));
    // A template file's bytes bound its characters: taken before it is read.
    if (template) budget.takeTemplate(size, files.locate(path));
  });
}

function parseCompanion(
  files: ModelFiles,
  path: string,
  text: string | undefined,
  check: (value: unknown, location: string) => void,
  shape: "object" | "array" = "object",
): unknown {
  if (text === undefined) return undefined;
  // Looked at before parsing, so the text can be dropped while the value is checked.
  const escapes = hasSurrogateEscape(text);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new ModelFormatError(
      "JSON",
      files.locate(path),
      `invalid JSON: ${(cause as Error).message}`,
      {
        cause,
      },
    );
  }
  if (shape === "array" ? !Array.isArray(value) : record(value) === undefined) {
    throw new ModelFormatError("JSON", files.locate(path), `invalid JSON: not an ${shape}`);
  }
  // The specific checks first: they name a token's id, the walk only a key path.
  check(value, files.locate(path));
  if (escapes) checkWellFormedText(value, files.locate(path));
  return value;
}

/**
 * Read a repository's companion files, those present, and map them to APR
 * metadata with {@linkcode aprMetadataFromHf}.
 *
 * @param files The repository.
 * @param options The folder of the model inside the repository.
 * @returns The metadata (empty when no companion exists).
 * @throws {ModelFormatError} When a companion is over its size cap, not UTF-8,
 * or not a JSON object.
 */
export async function readHfCompanions(
  files: ModelFiles,
  options: ReadHfCompanionsOptions = {},
): Promise<ModelMetadata> {
  return aprMetadataFromHf(await readHfCompanionFiles(files, options));
}

/**
 * Read and parse a repository's companion files, those present.
 *
 * @param files The repository.
 * @param options The folder of the model inside the repository.
 * @returns The parsed files.
 * @throws {ModelFormatError} When a companion is over its size cap, not UTF-8,
 * or not a JSON object.
 */
export async function readHfCompanionFiles(
  files: ModelFiles,
  options: ReadHfCompanionsOptions = {},
): Promise<HfCompanions> {
  const prefix = options.directory ? `${options.directory.replace(/\/+$/, "")}/` : "";
  const listing = new Set(await files.list());
  // Every count and id is checked against the checkpoint before anything is
  // padded or allocated from it (companion_limits.ts).
  const bounds: CheckpointBounds = options.tensors === undefined
    ? { ids: MIN_VOCABULARY_BOUND, layers: Number.MAX_SAFE_INTEGER }
    : checkpointBounds(options.tensors);
  const bound = bounds.ids;
  // One budget for every companion file and template of the model.
  const budget = new CompanionBudget();
  const json = async (
    name: string,
    maxBytes: number,
    check: (value: unknown, location: string) => void = () => {},
    shape: "object" | "array" = "object",
  ): Promise<unknown> =>
    parseCompanion(
      files,
      prefix + name,
      await readCompanion(files, listing, prefix + name, maxBytes, budget),
      check,
      shape,
    );
  const templates = (value: unknown, location: string) =>
    takeTemplates(record(value)?.["chat_template"], location, budget);
  const configValues = (value: unknown, location: string) =>
    checkConfigValues(value, location, bounds);
  const companions: HfCompanions = {};
  const config = await json("config.json", MAX_CONFIG_BYTES, configValues);
  if (config !== undefined) companions.config = config;
  const tokenizer = await json(
    "tokenizer.json",
    MAX_TOKENIZER_BYTES,
    (value, location) => checkTokenizerValues(value, location, bound),
  );
  const tokenizerConfig = await json("tokenizer_config.json", MAX_CONFIG_BYTES, templates);
  if (tokenizerConfig !== undefined) companions.tokenizerConfig = tokenizerConfig;
  if (tokenizer !== undefined) companions.tokenizer = tokenizer;
  else {
    const tiktoken = await readTiktoken(files, listing, prefix, config, tokenizerConfig, budget);
    if (tiktoken !== undefined) {
      checkTokenizerValues(tiktoken.tokenizer, files.locate(prefix + "tokenizer.json"), bound);
      companions.tokenizer = tiktoken.tokenizer;
      companions.tiktoken = tiktoken.facts;
    }
  }
  const generationConfig = await json("generation_config.json", MAX_CONFIG_BYTES, configValues);
  if (generationConfig !== undefined) companions.generationConfig = generationConfig;
  const preprocessorConfig = await json("preprocessor_config.json", MAX_CONFIG_BYTES, configValues);
  if (preprocessorConfig !== undefined) companions.preprocessorConfig = preprocessorConfig;
  const hfQuantConfig = await json("hf_quant_config.json", MAX_CONFIG_BYTES);
  if (hfQuantConfig !== undefined) companions.hfQuantConfig = hfQuantConfig;
  const chatTemplate = await readCompanion(
    files,
    listing,
    prefix + "chat_template.jinja",
    MAX_CONFIG_BYTES,
    budget,
    true,
  );
  if (chatTemplate !== undefined) {
    companions.chatTemplate = chatTemplate;
    const extra = await readAdditionalChatTemplates(files, listing, prefix, budget);
    if (extra.length > 0) companions.additionalChatTemplates = extra;
  }
  const addedTokens = await json("added_tokens.json", MAX_CONFIG_BYTES);
  if (addedTokens !== undefined) companions.addedTokens = addedTokens;
  const chatTemplateJson = await json("chat_template.json", MAX_CONFIG_BYTES, templates);
  if (chatTemplateJson !== undefined) companions.chatTemplateJson = chatTemplateJson;
  const modules = await json("modules.json", MAX_CONFIG_BYTES, undefined, "array");
  if (Array.isArray(modules)) {
    companions.sentenceModules = modules;
    // The converter reads the first module whose type ends with "Pooling".
    const pooling = modules.map(record).find((m) =>
      typeof m?.["type"] === "string" && m["type"].endsWith("Pooling")
    );
    const path = pooling?.["path"];
    if (typeof path === "string") {
      const config = await json(`${path.replace(/\/+$/, "")}/config.json`, MAX_CONFIG_BYTES);
      if (config !== undefined) companions.sentencePooling = config;
    }
    const dense = [];
    for (const path of sentenceDensePaths(modules)) {
      dense.push({ path, config: await json(`${path}/config.json`, MAX_CONFIG_BYTES) });
    }
    if (dense.length > 0) companions.sentenceDense = dense;
  }
  const bpeModel = await readSentencePiece(
    files,
    listing,
    prefix + "sentencepiece.bpe.model",
    budget,
  );
  if (bpeModel !== undefined) companions.sentencePieceBpe = bpeModel;
  const sentencePiece = await readSentencePiece(files, listing, prefix + "tokenizer.model", budget);
  if (sentencePiece !== undefined) companions.sentencePiece = sentencePiece;
  const readme = await readModelCardFile(files, listing, prefix + "README.md");
  if (readme?.card !== undefined) companions.modelCard = readme.card;
  if (readme !== undefined) companions.readme = readme.text;
  const folder = (prefix === "" ? files.name : prefix).replace(/[/\\]+$/, "").split(/[/\\]/).pop();
  if (folder) companions.folder = folder;
  return companions;
}

/** The special tokens `tokenizer_config.json`'s `added_tokens_decoder` names, by id. */
function addedTokenNames(tokenizerConfig: unknown): Map<number, string> {
  const names = new Map<number, string>();
  const decoder = record(record(tokenizerConfig)?.["added_tokens_decoder"]) ?? {};
  for (const id in decoder) {
    const content = record(decoder[id])?.["content"];
    if (/^\d+$/.test(id) && typeof content === "string") names.set(Number(id), content);
  }
  return names;
}

/**
 * The `tokenizer.json` a family's published tiktoken file stands for
 * (Hunyuan-A13B's `hy.tiktoken`, Kimi's `tiktoken.model`), when the folder
 * has that file, and the facts it was read with.
 */
async function readTiktoken(
  files: ModelFiles,
  listing: ReadonlySet<string>,
  prefix: string,
  config: unknown,
  tokenizerConfig: unknown,
  budget: CompanionBudget,
): Promise<{ tokenizer: Record<string, unknown>; facts: TiktokenFacts } | undefined> {
  const c = record(config) ?? {};
  const hfArchitecture = firstString(c["architectures"]);
  const modelType = typeof c["model_type"] === "string" ? c["model_type"] : undefined;
  const facts = familyOf(architectureOfHf(hfArchitecture, modelType, c))?.tiktoken;
  if (facts === undefined) return undefined;
  const text = await readCompanion(
    files,
    listing,
    prefix + facts.file,
    MAX_TOKENIZER_BYTES,
    budget,
  );
  if (text === undefined) return undefined;
  const location = files.locate(prefix + facts.file);
  try {
    const names = addedTokenNames(tokenizerConfig);
    return { tokenizer: tiktokenAsTokenizerJson(text, facts, location, names), facts };
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    throw new ModelFormatError("JSON", location, error.message.replace(`${location}: `, ""));
  }
}

/**
 * `additional_chat_templates/*.jinja` (that folder's own files, as gguf-py's
 * glob reads them), sorted by name: the converter takes the folder's
 * listing order, which the file system decides.
 */
async function readAdditionalChatTemplates(
  files: ModelFiles,
  listing: ReadonlySet<string>,
  prefix: string,
  budget: CompanionBudget,
): Promise<{ name: string; template: string }[]> {
  const folder = `${prefix}additional_chat_templates/`;
  const paths = [...listing].filter((p) =>
    p.startsWith(folder) && p.endsWith(".jinja") && !p.slice(folder.length).includes("/")
  ).sort();
  // Two files gguf-py would key alike ("tool use", "tool_use"; "default" is
  // chat_template.jinja's): it keeps whichever the listing gives last, with
  // a warning; refused instead, since either choice drops a template.
  const keyed = new Map<string, string>([["default", `${prefix}chat_template.jinja`]]);
  for (const path of paths) {
    const key = ggufTemplateName(path.slice(folder.length, -".jinja".length));
    const other = keyed.get(key);
    if (other !== undefined) {
      throw new ModelFormatError(
        "chat template",
        files.locate(path),
        `its template name becomes "${key}" in GGUF, as "${
          other.slice(other.lastIndexOf("/") + 1)
        }"'s does (gguf-py keys templates by name, each character other than A-Z, a-z, 0-9 as "_"), so one would be dropped; rename one of them`,
      );
    }
    keyed.set(key, path);
  }
  const out: { name: string; template: string }[] = [];
  for (const path of paths) {
    const template = await readCompanion(files, listing, path, MAX_CONFIG_BYTES, budget, true);
    if (template !== undefined) {
      out.push({ name: path.slice(folder.length, -".jinja".length), template });
    }
  }
  return out;
}

/**
 * `README.md`'s YAML header, if the repository has a card: only its first
 * `MAX_MODEL_CARD_BYTES` are read, decoded as Python reads the file (a
 * byte-order mark is kept, so such a card has no header for the converter
 * either).
 */
async function readModelCardFile(
  files: ModelFiles,
  listing: ReadonlySet<string>,
  path: string,
): Promise<{ card: Record<string, unknown> | undefined; text: string } | undefined> {
  if (!listing.has(path)) return undefined;
  const source = await files.open(path);
  try {
    const length = Math.min(source.size, MAX_MODEL_CARD_BYTES);
    const bytes = await source.read(0, length);
    const complete = length === source.size;
    let text: string;
    try {
      // A cut file may end inside a character: only whole ones are decoded.
      text = new TextDecoder("utf-8", { fatal: complete, ignoreBOM: true }).decode(bytes);
    } catch (cause) {
      throw new ModelFormatError("model card", files.locate(path), "not valid UTF-8", { cause });
    }
    return { card: readModelCard(text, complete, files.locate(path)), text };
  } finally {
    await source.close();
  }
}

/** Read and parse `tokenizer.model`, if the repository has one (size checked before reading). */
async function readSentencePiece(
  files: ModelFiles,
  listing: ReadonlySet<string>,
  path: string,
  budget: CompanionBudget,
): Promise<SentencePieceModel | undefined> {
  if (!listing.has(path)) return undefined;
  const bytes = await readCheckedFile(files, path, (size) => {
    if (size > MAX_SENTENCEPIECE_BYTES) {
      throw new ModelFormatError(
        "model",
        files.locate(path),
        `too large: ${size} bytes exceeds the ${MAX_SENTENCEPIECE_BYTES}-byte limit for tokenizer.model`,
      );
    }
    budget.takeFile(size, files.locate(path));
  });
  try {
    return parseSentencePieceModel(bytes);
  } catch (cause) {
    throw new ModelFormatError(
      "model",
      files.locate(path),
      `not a SentencePiece model: ${(cause as Error).message}`,
      { cause },
    );
  }
}
