// This module is browser compatible.

/**
 * GGUF metadata ↔ APR metadata (APR_V2.md §3). Reading maps llama.cpp's keys
 * (`{arch}.embedding_length`, `tokenizer.ggml.tokens`…) to APR's vocabulary,
 * writing one spelling per alias group; writing (for GGUF export) is the
 * inverse.
 *
 * The full GGUF metadata, minus the large arrays already carried as
 * `tokenizer.*` keys, is also kept verbatim under the custom key
 * `gguf_metadata`: an object `key → {type, value}` (plus `array_types` for
 * arrays), spelled like gguf-py's dump (`"UINT32"`, `"FLOAT32"`…). The types
 * make the export exact (`10000.0` stays FLOAT32, not UINT32); 64-bit
 * integers beyond 2^53 are kept as decimal strings, since JSON numbers would
 * round them. JSON (APR's metadata encoding) has no `-0`, `NaN` or infinities:
 * a `-0.0` score comes back from an APR file as `0`.
 *
 * @module
 */

import { decodeBase64, encodeBase64 } from "../../runtime/_base64.ts";
import { GGUF_SPLIT_KEY_SET } from "./split_keys.ts";
import type { ModelMetadata } from "../../tensor.ts";
import { type GgufKvEntry, type GgufValue, GgufValueType, ggufValueTypeName } from "./header.ts";
import type { GgufKvInput } from "./writer.ts";
import { UsageError } from "../../errors.ts";
import { mergeRankScores } from "../../tokenizer/merge_rank_scores.ts";
import { phantomTokens } from "../../tokenizer/wordpiece_vocab.ts";
import { PRE_TOKENIZERS } from "../../tokenizer/pre_tokenizers.ts";
import { SAMPLING_TYPES } from "../../arch/hf_sampling.ts";
import { familyGgufPlan } from "../../arch/gguf_plan.ts";
import { aprRopeTypeOfGguf } from "../../arch/gguf_rope.ts";
import { poolingOfGguf } from "../../arch/pooling.ts";
import { FILE_TYPE_KEY } from "../../arch/kv.ts";
import { familyOf, familyOfGguf } from "../../arch/registry.ts";
import { blockCountOf } from "../../arch/nextn.ts";
import { generalMetadataOf, generalPairs, parameterCounts } from "../../arch/hf_model_card.ts";

/** Arrays longer than this are left out of `gguf_metadata` (vocabularies belong in `tokenizer.*`). */
export const GGUF_METADATA_MAX_ARRAY = 64;

/** APR size fields ↔ `{arch}.` GGUF keys (one APR spelling each: APR_V2.md §3 alias trap). */
const ARCH_FIELDS: readonly (readonly [keyof ModelMetadata & string, string, GgufValueType])[] = [
  ["max_position_embeddings", "context_length", GgufValueType.UINT32],
  ["hidden_size", "embedding_length", GgufValueType.UINT32],
  ["num_layers", "block_count", GgufValueType.UINT32],
  ["intermediate_size", "feed_forward_length", GgufValueType.UINT32],
  ["num_heads", "attention.head_count", GgufValueType.UINT32],
  ["num_kv_heads", "attention.head_count_kv", GgufValueType.UINT32],
  ["rope_theta", "rope.freq_base", GgufValueType.FLOAT32],
  ["rms_norm_eps", "attention.layer_norm_rms_epsilon", GgufValueType.FLOAT32],
  ["head_dim", "attention.key_length", GgufValueType.UINT32],
  ["num_experts", "expert_count", GgufValueType.UINT32],
  ["num_experts_per_tok", "expert_used_count", GgufValueType.UINT32],
  ["moe_intermediate_size", "expert_feed_forward_length", GgufValueType.UINT32],
  ["vocab_size", "vocab_size", GgufValueType.UINT32],
];

/** APR string fields ↔ `general.` GGUF keys. */
const GENERAL_FIELDS: readonly (readonly [keyof ModelMetadata & string, string])[] = [
  ["name", "general.name"],
  ["description", "general.description"],
  ["author", "general.author"],
  ["license", "general.license"],
  ["version", "general.version"],
];

/** Tokenizer custom keys (APR_V2.md §3) ↔ GGUF keys, with their GGUF types. */
const TOKENIZER_ARRAYS: readonly (readonly [string, string, GgufValueType])[] = [
  ["tokenizer.vocabulary", "tokenizer.ggml.tokens", GgufValueType.STRING],
  ["tokenizer.merges", "tokenizer.ggml.merges", GgufValueType.STRING],
  ["tokenizer.scores", "tokenizer.ggml.scores", GgufValueType.FLOAT32],
  // Not read by realizar, but llama.cpp needs it to tell control tokens apart.
  ["tokenizer.token_type", "tokenizer.ggml.token_type", GgufValueType.INT32],
];
const TOKENIZER_IDS: readonly (readonly [string, string])[] = [
  ["tokenizer.bos_token_id", "tokenizer.ggml.bos_token_id"],
  ["tokenizer.eos_token_id", "tokenizer.ggml.eos_token_id"],
];
const SPECIAL_TOKEN_IDS: readonly (readonly [string, string])[] = [
  ["bos_token", "tokenizer.ggml.bos_token_id"],
  ["eos_token", "tokenizer.ggml.eos_token_id"],
  ["unk_token", "tokenizer.ggml.unknown_token_id"],
  ["pad_token", "tokenizer.ggml.padding_token_id"],
];

/**
 * Keys whose value describes the source file, not the model: not carried to
 * an export (`general.file_type` is, but the export's own replaces it).
 */
const NOT_EXPORTED = new Set(["general.alignment", ...GGUF_SPLIT_KEY_SET]);

/** One entry of the `gguf_metadata` custom key. */
export interface GgufMetadataEntry {
  /** gguf-py's type name, e.g. `"UINT32"`. */
  type: string;
  /** For arrays, the element type names. */
  array_types?: string[];
  /** The value; 64-bit integers beyond 2^53 as decimal strings. */
  value: unknown;
}

/**
 * Map GGUF metadata to APR metadata: `general.architecture` and the
 * `{arch}.*` sizes, RoPE style, tokenizer arrays and ids, chat template,
 * `general.*` descriptions, `original_format: "gguf"`, and the verbatim
 * `gguf_metadata` (see the module doc).
 *
 * @example Usage
 * ```ts
 * import { ggufToAprMetadata } from "./metadata.ts";
 * const m = ggufToAprMetadata(new Map([
 *   ["general.architecture", { type: 8, value: "qwen2", offset: 24 }],
 *   ["qwen2.block_count", { type: 4, value: 24, offset: 60 }],
 * ]));
 * console.assert(m.num_layers === 24 && m.rope_type === 2);
 * ```
 *
 * @param kv GGUF metadata, as {@linkcode parseGgufHeader} returns it.
 * @returns APR metadata.
 */
export function ggufToAprMetadata(kv: ReadonlyMap<string, GgufKvEntry>): ModelMetadata {
  const get = (key: string): GgufValue | undefined => kv.get(key)?.value;
  const str = (key: string): string | undefined => {
    const v = get(key);
    return typeof v === "string" ? v : undefined;
  };
  const num = (key: string): number | undefined => {
    const v = get(key);
    return typeof v === "number" ? v : undefined;
  };
  const m: ModelMetadata = {};
  for (const [field, key] of GENERAL_FIELDS) {
    const v = str(key);
    if (v !== undefined) m[field] = v;
  }
  m.original_format = "gguf";
  const arch = str("general.architecture");
  const tokens = get("tokenizer.ggml.tokens");
  const tokenList = Array.isArray(tokens) && tokens.every((t) => typeof t === "string")
    ? tokens as string[]
    : undefined;
  const template = str("tokenizer.chat_template");
  if (template !== undefined) m.chat_template = template;
  const special: Record<string, string> = {};
  for (const [field, key] of SPECIAL_TOKEN_IDS) {
    const id = num(key);
    const token = id === undefined ? undefined : tokenList?.[id];
    if (token !== undefined) special[field] = token;
  }
  if (Object.keys(special).length > 0) m.special_tokens = special;
  if (arch !== undefined) {
    // The family's name where llama.cpp files it under another (glm as `chatglm`).
    const family = familyOfGguf(arch, false);
    m.architecture = family?.name ?? arch;
    // The family's text class, as a Hugging Face import names it (a
    // multimodal family's GGUF holds no class of its own: none is named).
    const [hfArchitecture] = family?.hfArchitectures ?? [];
    if (hfArchitecture !== undefined) {
      m.hf_architecture = hfArchitecture;
      m.hf_model_type = family!.hfModelTypes[0]!;
    }
    for (const [field, suffix] of ARCH_FIELDS) {
      // Some architectures give per-layer arrays (e.g. head counts): only scalars map.
      const v = num(`${arch}.${suffix}`);
      if (v !== undefined) m[field] = v;
    }
    if (m.vocab_size === undefined && tokenList !== undefined) m.vocab_size = tokenList.length;
    // How to get a sentence vector, as a sentence-transformers import records it (the
    // normalisation is not in the file: llama.cpp's callers choose it).
    const pooling = poolingOfGguf(num(`${arch}.pooling_type`));
    if (pooling !== undefined) m["embedding.pooling"] = pooling;
    const ropeType = aprRopeTypeOfGguf(arch);
    if (ropeType !== undefined && family?.noRope !== true) m.rope_type = ropeType;
  } else if (tokenList !== undefined) {
    m.vocab_size = tokenList.length;
  }
  // Custom keys, after the known fields (APR_V2.md §3 order).
  for (const [aprKey, ggufKey] of TOKENIZER_ARRAYS) {
    const v = get(ggufKey);
    if (Array.isArray(v)) m[aprKey] = v;
  }
  if (tokenList !== undefined) m["tokenizer.vocab_size"] = tokenList.length;
  for (const [aprKey, ggufKey] of TOKENIZER_IDS) {
    const v = num(ggufKey);
    if (v !== undefined) m[aprKey] = v;
  }
  const model = str("tokenizer.ggml.model");
  if (model !== undefined) m["tokenizer.model_type"] = model;
  // aprender's importer's names, which realizar's tokenizer and aprender's GGUF export read.
  const pre = str("tokenizer.ggml.pre");
  if (pre !== undefined) m["tokenizer.pre_type"] = pre;
  const pad = num("tokenizer.ggml.padding_token_id");
  if (pad !== undefined) m["tokenizer.padding_token_id"] = pad;
  const addBos = get("tokenizer.ggml.add_bos_token");
  if (typeof addBos === "boolean") m["tokenizer.add_bos_token"] = addBos;
  // A t5 vocabulary's charsmap (240 kB, too long for gguf_metadata), as a Hugging Face import keeps it.
  const charsmap = get("tokenizer.ggml.precompiled_charsmap");
  if (Array.isArray(charsmap) && charsmap.every((b) => typeof b === "number")) {
    m["tokenizer.precompiled_charsmap"] = encodeBase64(Uint8Array.from(charsmap as number[]));
  }
  if (template !== undefined) m["tokenizer.chat_template"] = template;
  const verbatim: Record<string, GgufMetadataEntry> = {};
  for (const [key, entry] of kv) {
    if (key === "tokenizer.chat_template") continue; // already carried, twice
    // A shard's place in its split set says nothing about the model (split.ts).
    if (GGUF_SPLIT_KEY_SET.has(key)) continue;
    if (Array.isArray(entry.value) && entry.value.length > GGUF_METADATA_MAX_ARRAY) continue;
    const out: GgufMetadataEntry = {
      type: ggufValueTypeName(entry.type),
      value: toJson(entry.value),
    };
    if (entry.arrayTypes !== undefined) out.array_types = entry.arrayTypes.map(ggufValueTypeName);
    verbatim[key] = out;
  }
  m.gguf_metadata = verbatim;
  // The large arrays are left out of gguf_metadata; their places are kept here.
  m.gguf_key_order = [...kv.keys()].filter((key) => !GGUF_SPLIT_KEY_SET.has(key));
  return m;
}

/** Options of {@linkcode aprToGgufKv}: what the exported tensors say about the file. */
export interface AprToGgufOptions {
  /** `general.file_type` (llama.cpp's `LLAMA_FTYPE_*`); absent: not written. */
  fileType?: number;
  /** Parameters of the exported tensors, for `general.size_label` (converted models only). */
  parameterCount?: number;
  /**
   * The exported tensors (GGUF names, shapes), for `general.size_label` as
   * gguf-py counts it (`8x7.2B` for stacked experts); preferred over
   * `parameterCount`.
   */
  tensors?: readonly { readonly name: string; readonly shape: readonly number[] }[];
  /** `general.quantization_version` (2 for every current llama.cpp); absent: not written. */
  quantizationVersion?: number;
}

/** `{arch}.` keys in the order llama.cpp's converter writes them, with their APR fields. */
const EXPORT_ARCH_ORDER: readonly string[] = [
  "block_count",
  "context_length",
  "embedding_length",
  "feed_forward_length",
  "attention.head_count",
  "attention.head_count_kv",
  "rope.freq_base",
  "attention.layer_norm_rms_epsilon",
  "expert_count",
  "expert_used_count",
  "expert_feed_forward_length",
  "attention.key_length",
];

/** gguf-py's names of the special token id keys. */
const SPECIAL_ID_KEYS: Readonly<Record<string, string>> = {
  bos: "tokenizer.ggml.bos_token_id",
  eos: "tokenizer.ggml.eos_token_id",
  unk: "tokenizer.ggml.unknown_token_id",
  sep: "tokenizer.ggml.seperator_token_id",
  pad: "tokenizer.ggml.padding_token_id",
  // No `cls`: gguf-py's writer has no `add_cls_token_id`, so SpecialVocab skips it.
  mask: "tokenizer.ggml.mask_token_id",
  eot: "tokenizer.ggml.eot_token_id",
  eom: "tokenizer.ggml.eom_token_id",
  prefix: "tokenizer.ggml.prefix_token_id",
  suffix: "tokenizer.ggml.suffix_token_id",
  middle: "tokenizer.ggml.middle_token_id",
  fim_pre: "tokenizer.ggml.fim_pre_token_id",
  fim_suf: "tokenizer.ggml.fim_suf_token_id",
  fim_mid: "tokenizer.ggml.fim_mid_token_id",
  fim_pad: "tokenizer.ggml.fim_pad_token_id",
  fim_rep: "tokenizer.ggml.fim_rep_token_id",
  fim_sep: "tokenizer.ggml.fim_sep_token_id",
};

/** Hugging Face tokenizer model types → ggml tokenizer models. */
const GGML_TOKENIZER: Readonly<Record<string, string>> = {
  BPE: "gpt2",
  Unigram: "llama",
  WordPiece: "bert",
};

/**
 * Map APR metadata back to GGUF metadata, for export: the inverse of
 * {@linkcode ggufToAprMetadata}. Starts from `gguf_metadata` when present
 * (exact types and order, minus `general.alignment`, which describes the old
 * file; `general.file_type` is replaced when given), then writes every APR field over it, so
 * fields edited in APR win. A model from elsewhere (no `gguf_metadata`) gets
 * the keys llama.cpp's converter writes: `general.type`, `general.size_label`,
 * `{arch}.attention.value_length`, and for `LlamaModel`'s families (`llamaKeys`)
 * `{arch}.vocab_size` and `{arch}.rope.dimension_count`; tokenizer keys as the converter derives them
 * (`tokenizer.ggml_model`, `tokenizer.pre`, token types, special ids).
 * `general.file_type` and `general.quantization_version` are written when given.
 *
 * @example Usage
 * ```ts
 * import { aprToGgufKv } from "./metadata.ts";
 * const kv = aprToGgufKv({ architecture: "llama", hidden_size: 4096, rope_theta: 10000 });
 * console.assert(kv.get("llama.embedding_length")?.value === 4096);
 * console.assert(kv.get("llama.rope.freq_base")?.type === 6);
 * ```
 *
 * @param metadata APR metadata.
 * @param options File type and parameter count of the exported tensors.
 * @returns GGUF metadata pairs in order, ready for {@linkcode encodeGgufHeader}.
 * @throws {TypeError} When `gguf_metadata` is malformed.
 */
export function aprToGgufKv(
  metadata: ModelMetadata,
  options: AprToGgufOptions = {},
): Map<string, GgufKvInput> {
  const kv = new Map<string, GgufKvInput>();
  const verbatim = metadata.gguf_metadata;
  const converted = verbatim === undefined || verbatim === null;
  const aprArch = typeof metadata.architecture === "string"
    ? metadata.architecture
    : readVerbatimArch(verbatim);
  // A model converted from Hugging Face: its family's keys, as its converter class writes them.
  const plan = converted ? familyGgufPlan(metadata) : undefined;
  const arch = plan?.family.ggufArchitecture ??
    (aprArch === undefined ? undefined : familyOf(aprArch)?.ggufArchitecture ?? aprArch);
  if (arch !== undefined) {
    kv.set("general.architecture", { type: GgufValueType.STRING, value: arch });
  }
  for (const [key, entry] of plan?.early ?? []) kv.set(key, fromVerbatim(key, entry));
  if (!converted) {
    if (typeof verbatim !== "object" || Array.isArray(verbatim)) {
      throw new TypeError("Cannot export GGUF metadata: gguf_metadata is not an object");
    }
    for (const [key, entry] of Object.entries(verbatim as Record<string, unknown>)) {
      if (NOT_EXPORTED.has(key) || key === "general.architecture") continue;
      kv.set(key, fromVerbatim(key, entry));
    }
  }
  const set = (key: string, type: GgufValueType, value: unknown): void => {
    if (value === undefined || value === null) return;
    if (type === GgufValueType.STRING && typeof value !== "string") return;
    if (type === GgufValueType.BOOL && typeof value !== "boolean") return;
    if (
      type !== GgufValueType.STRING && type !== GgufValueType.BOOL && typeof value !== "number"
    ) return;
    kv.set(key, { type, value: value as GgufValue });
  };
  if (converted) set("general.type", GgufValueType.STRING, "model");
  if (converted) writeSampling(metadata["sampling"], set);
  if (converted) {
    for (const [key, entry] of convertedGeneral(metadata, options)) {
      kv.set(key, fromVerbatim(key, entry));
    }
  } else {
    for (const [field, key] of GENERAL_FIELDS) set(key, GgufValueType.STRING, metadata[field]);
  }
  if (plan !== undefined) {
    for (const [key, entry] of plan.keys) {
      if (key === FILE_TYPE_KEY) set(key, GgufValueType.UINT32, options.fileType);
      else kv.set(key, fromVerbatim(key, entry));
    }
  } else if (arch !== undefined) {
    const fields = new Map(ARCH_FIELDS.map(([field, suffix, type]) => [suffix, { field, type }]));
    const order = [...EXPORT_ARCH_ORDER, ...fields.keys()];
    for (const suffix of new Set(order)) {
      const { field, type } = fields.get(suffix)!;
      // vocab_size is implied by the token list; LlamaModel's families write it, below.
      if (field === "vocab_size") continue;
      set(
        `${arch}.${suffix}`,
        type,
        // The MTP blocks a read-back into Hugging Face's layout left out of num_layers.
        suffix === "block_count" ? blockCountOf(metadata) : metadata[field],
      );
      if (converted && suffix === "attention.key_length") {
        set(`${arch}.attention.value_length`, GgufValueType.UINT32, metadata.head_dim);
      }
    }
  }
  if (plan === undefined) set("general.file_type", GgufValueType.UINT32, options.fileType);
  if (arch !== undefined && plan === undefined) {
    const tokens = metadata["tokenizer.vocabulary"];
    const vocab = metadata.vocab_size ?? (Array.isArray(tokens) ? tokens.length : undefined);
    // A model from elsewhere (no config.json kept): the keys its family's converter adds.
    const llamaKeys = converted && familyOf(aprArch)?.gguf?.llamaKeys === true;
    if (kv.has(`${arch}.vocab_size`) || llamaKeys) {
      set(`${arch}.vocab_size`, GgufValueType.UINT32, vocab);
    }
    if (llamaKeys) {
      const heads = metadata.num_heads;
      const headDim = metadata.head_dim ??
        (typeof metadata.hidden_size === "number" && typeof heads === "number" && heads > 0
          ? metadata.hidden_size / heads
          : undefined);
      set(`${arch}.rope.dimension_count`, GgufValueType.UINT32, headDim);
    }
  }
  // llama.cpp's converter (since c392e50) writes the quantization version before the tokenizer.
  set("general.quantization_version", GgufValueType.UINT32, options.quantizationVersion);
  writeTokenizer(metadata, set, kv, converted);
  writeChatTemplates(metadata, set, kv);
  const trailing = plan?.family.llamaHfVocabulary;
  if (trailing !== undefined && metadata["tokenizer.ggml_model"] === trailing.model) {
    // Gemma4Model.set_vocab: after SpecialVocab's keys (its chat template among them).
    kv.delete("tokenizer.ggml.add_space_prefix");
    set("tokenizer.ggml.add_space_prefix", GgufValueType.BOOL, trailing.addSpacePrefix);
    set("tokenizer.ggml.add_bos_token", GgufValueType.BOOL, trailing.addBosToken);
  }
  // gguf-py's SpecialVocab writes the normaliser's flags after the chat templates.
  set(
    "tokenizer.ggml.normalizer.lowercase",
    GgufValueType.BOOL,
    metadata["tokenizer.normalizer_lowercase"],
  );
  set(
    "tokenizer.ggml.normalizer.strip_accents",
    GgufValueType.BOOL,
    metadata["tokenizer.normalizer_strip_accents"],
  );
  return converted ? kv : inSourceOrder(kv, metadata.gguf_key_order);
}

/**
 * A GGUF source's keys back in its order (`gguf_key_order`, kept at import):
 * the tokenizer arrays, carried outside `gguf_metadata`, would otherwise
 * come after the keys that followed them. Keys the source lacked keep their
 * order, after its keys.
 */
function inSourceOrder(kv: Map<string, GgufKvInput>, order: unknown): Map<string, GgufKvInput> {
  if (!Array.isArray(order)) return kv;
  const out = new Map<string, GgufKvInput>();
  for (const key of order) {
    const entry = typeof key === "string" ? kv.get(key) : undefined;
    if (entry !== undefined) out.set(key as string, entry);
  }
  for (const [key, entry] of kv) if (!out.has(key)) out.set(key, entry);
  return out;
}

/** The tokenizer keys, in the order llama.cpp's converter writes them. */
function writeTokenizer(
  metadata: ModelMetadata,
  set: (key: string, type: GgufValueType, value: unknown) => void,
  kv: Map<string, GgufKvInput>,
  converted: boolean,
): void {
  const hfModel = metadata["tokenizer.model_type"];
  const model = metadata["tokenizer.ggml_model"] ??
    (typeof hfModel === "string" ? GGML_TOKENIZER[hfModel] ?? hfModel : undefined);
  // `BertModel.set_vocab` writes the token-type count before the vocabulary;
  // `_xlmroberta_set_vocab` (a `t5` one) after it, with the normaliser's keys;
  // `RobertaModel.set_vocab` (a `gpt2` one) after everything else.
  const t5 = model === "t5";
  const countLast = model === "gpt2";
  const typeCount = () =>
    set(
      "tokenizer.ggml.token_type_count",
      GgufValueType.UINT32,
      metadata["tokenizer.token_type_count"],
    );
  const spaceFlags = () => {
    set(
      "tokenizer.ggml.add_space_prefix",
      GgufValueType.BOOL,
      metadata["tokenizer.add_space_prefix"],
    );
    if (t5) typeCount();
    set(
      "tokenizer.ggml.remove_extra_whitespaces",
      GgufValueType.BOOL,
      metadata["tokenizer.remove_extra_whitespaces"],
    );
    const charsmap = metadata["tokenizer.precompiled_charsmap"];
    if (t5 && typeof charsmap === "string") {
      kv.set("tokenizer.ggml.precompiled_charsmap", {
        type: GgufValueType.ARRAY,
        value: [...decodeBase64(charsmap)],
        arrayTypes: [GgufValueType.UINT8],
      });
    }
  };
  if (!t5 && !countLast) typeCount();
  set("tokenizer.ggml.model", GgufValueType.STRING, model);
  const pre = metadata["tokenizer.pre"] ?? metadata["tokenizer.pre_type"];
  if (pre === undefined && model === "gpt2" && converted && !kv.has("tokenizer.ggml.pre")) {
    refuseUnknownPreTokenizer(metadata);
  }
  set("tokenizer.ggml.pre", GgufValueType.STRING, pre);
  // The converter's order: tokens, scores, token types, then merges.
  const arrays = [0, 2, 3, 1].map((i) => TOKENIZER_ARRAYS[i]!);
  for (const [aprKey, ggufKey, type] of arrays) {
    let v = metadata[aprKey];
    if (aprKey === "tokenizer.scores" && !Array.isArray(v)) v = defaultScores(metadata, model);
    // A SentencePiece-style vocabulary from tokenizer.json: the converter writes no merges.
    if (aprKey === "tokenizer.merges" && model === "llama" && converted) continue;
    // A WordPiece vocabulary from tokenizer.json: in the converter's phantom-space form.
    if (aprKey === "tokenizer.vocabulary" && model === "bert" && converted && Array.isArray(v)) {
      const types = metadata["tokenizer.token_type"];
      v = phantomTokens(v as string[], Array.isArray(types) ? types as number[] : []);
    }
    if (Array.isArray(v)) {
      kv.set(ggufKey, { type: GgufValueType.ARRAY, value: v, arrayTypes: [type] });
    }
  }
  if (t5) spaceFlags();
  const specialIds = metadata["tokenizer.special_ids"];
  if (specialIds !== null && typeof specialIds === "object" && !Array.isArray(specialIds)) {
    for (const [kind, id] of Object.entries(specialIds)) {
      const key = SPECIAL_ID_KEYS[kind];
      if (key !== undefined) set(key, GgufValueType.UINT32, id);
    }
  } else {
    for (const [aprKey, ggufKey] of TOKENIZER_IDS) {
      set(ggufKey, GgufValueType.UINT32, metadata[aprKey]);
    }
    set(
      "tokenizer.ggml.padding_token_id",
      GgufValueType.UINT32,
      metadata["tokenizer.padding_token_id"],
    );
  }
  const addSpecial = metadata["tokenizer.add_special"];
  if (addSpecial !== null && typeof addSpecial === "object" && !Array.isArray(addSpecial)) {
    for (const [kind, add] of Object.entries(addSpecial)) {
      set(`tokenizer.ggml.add_${kind}_token`, GgufValueType.BOOL, add);
    }
  } else {
    set("tokenizer.ggml.add_bos_token", GgufValueType.BOOL, metadata["tokenizer.add_bos_token"]);
  }
  if (!t5) spaceFlags();
  if (countLast) typeCount();
}

/**
 * The `general.*` pairs llama.cpp's converter writes for a Hugging Face
 * model (`arch/hf_model_card.ts`), from the model card and names kept at
 * import; the APR file's own name, author, version, description and licence
 * win (they were derived alike, unless edited since).
 */
function convertedGeneral(metadata: ModelMetadata, options: AprToGgufOptions) {
  // Without the tensors, a model with experts cannot be labelled as gguf-py does (8x7.2B).
  const total = metadata.num_experts == null ? options.parameterCount ?? 0 : 0;
  const counts = options.tensors !== undefined
    ? parameterCounts(options.tensors)
    : { total, shared: total, expert: 0, expertCount: 0 };
  const general = generalMetadataOf(metadata, metadata["hf_folder_name"], counts);
  for (const [field] of GENERAL_FIELDS) {
    const value = metadata[field];
    if (typeof value === "string") (general as Record<string, unknown>)[field] = value;
  }
  return generalPairs(general);
}

/** `general.sampling.*` from the APR `sampling` key, in its order (the converter's). */
function writeSampling(
  sampling: unknown,
  set: (key: string, type: GgufValueType, value: unknown) => void,
): void {
  if (sampling === null || typeof sampling !== "object" || Array.isArray(sampling)) return;
  for (const [suffix, value] of Object.entries(sampling as Record<string, unknown>)) {
    const kind = SAMPLING_TYPES.get(suffix);
    if (kind === undefined) continue;
    const type = kind === "string"
      ? GgufValueType.STRING
      : kind === "int"
      ? GgufValueType.INT32
      : GgufValueType.FLOAT32;
    set(`general.sampling.${suffix}`, type, value);
  }
}

/** A byte-level BPE tokenizer whose pre-tokenizer llama.cpp does not implement: refused. */
function refuseUnknownPreTokenizer(metadata: ModelMetadata): never {
  const found = metadata["tokenizer.pre_unrecognised"];
  // A family whose published tokenizer llama.cpp splits with custom code: its converter's name.
  const custom = familyOf(metadata.architecture)?.customPreTokenizer;
  const hint = custom === undefined
    ? ""
    : `; the converter's name for the published ${String(metadata.architecture)} tokenizer is ` +
      `"${custom}" (llama.cpp splits it with custom code; aprkit recognises it only in the ` +
      `published tokenizer.json's steps): preTokenizer: "${custom}" writes that name for it`;
  throw new UsageError(
    `Cannot write GGUF: tokenizer.json's pre-tokenizer (${
      typeof found === "string" ? found : "none recorded"
    }) is none that llama.cpp implements (known: ${
      PRE_TOKENIZERS.filter((e) => e.preTokenizer !== undefined).map((e) => e.name).join(", ")
    }); llama.cpp would split text differently from transformers. preTokenizer: "default" ` +
      `writes "default" anyway${hint}`,
  );
}

/**
 * The chat templates, as gguf-py's `add_chat_template` writes them: each
 * named one but `default` as `tokenizer.chat_template.NAME`, their names in
 * `tokenizer.chat_templates`, then `default` as `tokenizer.chat_template`.
 */
function writeChatTemplates(
  metadata: ModelMetadata,
  set: (key: string, type: GgufValueType, value: unknown) => void,
  kv: Map<string, GgufKvInput>,
): void {
  const named = metadata["tokenizer.chat_templates"];
  if (named !== null && typeof named === "object" && !Array.isArray(named)) {
    const names: string[] = [];
    for (const [name, template] of Object.entries(named as Record<string, unknown>)) {
      if (name === "default" || typeof template !== "string") continue;
      set(`tokenizer.chat_template.${name}`, GgufValueType.STRING, template);
      names.push(name);
    }
    if (names.length > 0) {
      kv.set("tokenizer.chat_templates", {
        type: GgufValueType.ARRAY,
        value: names,
        arrayTypes: [GgufValueType.STRING],
      });
    }
  }
  const template = metadata.chat_template ?? metadata["tokenizer.chat_template"];
  set("tokenizer.chat_template", GgufValueType.STRING, template);
}

/**
 * Scores for a tokenizer that has none. A SentencePiece-style BPE
 * `tokenizer.json` (byte fallback, exported as a `llama` tokenizer) has only
 * merges: score = −(rank of the merge that makes the token), so llama.cpp
 * merges in transformers' order (`mergeRankScores`; llama.cpp's converter
 * writes −1000 for every token, which merges in the wrong order). Without
 * merges, −1000 as the converter. (Unigram vocabularies carry their own
 * scores, kept at import as `tokenizer.scores`.)
 */
function defaultScores(metadata: ModelMetadata, model: unknown): number[] | undefined {
  const tokens = metadata["tokenizer.vocabulary"];
  if (model !== "llama" || metadata["tokenizer.model_type"] !== "BPE" || !Array.isArray(tokens)) {
    return undefined;
  }
  const merges = metadata["tokenizer.merges"];
  if (Array.isArray(merges) && merges.every((m) => typeof m === "string")) {
    return mergeRankScores(tokens, merges);
  }
  return new Array<number>(tokens.length).fill(LLAMA_HF_VOCAB_SCORE);
}

/** `LlamaHfVocab.get_token_score`'s constant. */
const LLAMA_HF_VOCAB_SCORE = -1000;

function readVerbatimArch(verbatim: unknown): string | undefined {
  if (typeof verbatim !== "object" || verbatim === null) return undefined;
  const entry = (verbatim as Record<string, unknown>)["general.architecture"];
  const value = (entry as { value?: unknown } | undefined)?.value;
  return typeof value === "string" ? value : undefined;
}

const TYPE_IDS: ReadonlyMap<string, GgufValueType> = new Map(
  Object.entries(GgufValueType).map(([name, id]) => [name, id]),
);

function fromVerbatim(key: string, entry: unknown): GgufKvInput {
  const e = entry as Partial<GgufMetadataEntry> | null;
  const type = typeof e?.type === "string" ? TYPE_IDS.get(e.type) : undefined;
  if (e === null || type === undefined || !("value" in e)) {
    throw new TypeError(`Cannot export GGUF metadata: gguf_metadata["${key}"] is malformed`);
  }
  const arrayTypes = (e.array_types ?? []).map((name) => {
    const t = TYPE_IDS.get(name);
    if (t === undefined) {
      throw new TypeError(`Cannot export GGUF metadata: gguf_metadata["${key}"] has type ${name}`);
    }
    return t;
  });
  const value = fromJson(e.value, [type, ...arrayTypes]);
  return type === GgufValueType.ARRAY ? { type, value, arrayTypes } : { type, value };
}

function toJson(v: GgufValue): unknown {
  if (typeof v === "bigint") return v.toString();
  if (Array.isArray(v)) return v.map(toJson);
  return v;
}

/** Undo {@linkcode toJson}: 64-bit integers written as strings become bigints again. */
function fromJson(v: unknown, types: readonly GgufValueType[]): GgufValue {
  const [type, ...rest] = types;
  if (Array.isArray(v)) return v.map((x) => fromJson(x, rest));
  if (
    typeof v === "string" && (type === GgufValueType.UINT64 || type === GgufValueType.INT64) &&
    /^-?\d+$/.test(v)
  ) {
    return BigInt(v);
  }
  return v as GgufValue;
}
