// This module is browser compatible.

/**
 * The GGUF keys a family writes, built the way llama.cpp's converter builds
 * them: `set_gguf_parameters` reads `config.json` (`find_hparam`, the
 * normalized `rope_parameters`) and calls `gguf_writer.add_*` in order, a
 * repeated key keeping its first place and its last value. A family's
 * `writeKv` replays its converter class against this writer.
 *
 * @module
 */

import { withConfigDefaults } from "./config_defaults.ts";

/** GGUF value types the families write, in gguf-py's spelling. */
export type KvType = "UINT32" | "INT32" | "UINT64" | "FLOAT32" | "BOOL" | "STRING";

/** One key: a scalar, or an array of one element type. */
export interface KvEntry {
  /** gguf-py's type name (`"ARRAY"` for arrays). */
  readonly type: KvType | "ARRAY";
  /** Element types of an array. */
  readonly array_types?: readonly KvType[];
  /**
   * The value. A `UINT64` past 2^53 is given as its decimal string (JSON
   * has no 64-bit integers; the GGUF writer reads it back exactly).
   */
  readonly value: number | string | boolean | readonly (number | string | boolean)[];
}

/** Where `general.file_type` goes among the family's keys. */
export const FILE_TYPE_KEY = "general.file_type";

/** What a family's keys may need besides `config.json`. */
export interface KvWriterOptions {
  /**
   * The sentence-transformers pooling mode (`mean`, `cls`, `lasttoken`…),
   * as `modules.json` and its pooling module's `config.json` give it
   * (APR `embedding.pooling`); absent when the folder has none.
   */
  pooling?: string;
  /**
   * The sentence-transformers `Dense` projections after pooling, in order
   * (APR `embedding.dense`); absent when the folder has none.
   */
  dense?: readonly SentenceDense[];
  /** A reranker's labels, their token ids and prompt (APR `rerank.*`); absent for other models. */
  rerank?: Reranker;
  /**
   * The token ids `generation_config.json` suppresses (APR `suppress_tokens`);
   * absent when it names none.
   */
  suppressTokens?: readonly number[];
}

/** How a causal LM scores a (query, document) pair (Qwen3-Reranker). */
export interface Reranker {
  /** The answer tokens scored, in order (`yes`, `no`). */
  readonly labels: readonly string[];
  /** Their token ids; absent when the vocabulary lacks one. */
  readonly ids?: readonly number[];
  /** The prompt, with `{query}` and `{document}`. */
  readonly template: string;
}

/** One sentence-transformers `Dense` module, as `<folder>/config.json` describes it. */
export interface SentenceDense {
  /** Its folder (`2_Dense`); its weight is the tensor `<folder>.linear.weight`. */
  readonly path: string;
  /** Its input width, or `null` when the config does not say. */
  readonly in_features: unknown;
  /** Its output width, or `null`. */
  readonly out_features: unknown;
  /** Whether it adds a bias (`null`: not said). */
  readonly bias: unknown;
  /** Its activation's class (`torch.nn.modules.linear.Identity`), or `null`. */
  readonly activation_function: unknown;
}

/** The JSON object of a `config.json`, with the converter's lookups. */
export class KvWriter {
  /** `config.json`, with a multimodal model's `text_config` moved to the top (as the converter does). */
  readonly hparams: Readonly<Record<string, unknown>>;
  /** The converter's `rope_parameters`: `rope_parameters` or `rope_scaling`, with the top-level RoPE keys mirrored in. */
  readonly rope: Readonly<Record<string, unknown>>;
  /** The GGUF architecture the keys are prefixed with. */
  readonly arch: string;
  /** The sentence-transformers pooling mode, when the model has one. */
  readonly pooling: string | undefined;
  /** The sentence-transformers `Dense` projections, in order (empty without). */
  readonly dense: readonly SentenceDense[];
  /** The reranker's labels and prompt, when the model is one. */
  readonly rerank: Reranker | undefined;
  /** The token ids `generation_config.json` suppresses, when it names some. */
  readonly suppressTokens: readonly number[] | undefined;
  /**
   * `config.json`'s own `architectures[0]` (a multimodal class's, not its
   * `text_config`'s): the class the converter picks its writer by.
   */
  get hfClass(): string | undefined {
    return this.#hfClass;
  }
  #hfClass: string | undefined;
  readonly #entries = new Map<string, KvEntry>();
  readonly #options: KvWriterOptions;
  /** The config fields found since the last key was added: that key's sources. */
  #read: string[] = [];
  /** Every config field found so far. */
  readonly #everRead = new Set<string>();
  /** Whether the next key's sources are exactly those read ({@linkcode computedFrom}). */
  #computed = false;
  /** Each key's config fields, for messages ({@linkcode sourceOf}). */
  readonly #sources = new Map<string, readonly string[]>();

  /**
   * @param config The parsed `config.json`.
   * @param arch `general.architecture`.
   * @param options What else the keys are derived from.
   */
  /** Configs {@linkcode over} derives: transformers' defaults are not filled in again. */
  static readonly #asSeen = new WeakSet<object>();

  constructor(
    config: Readonly<Record<string, unknown>>,
    arch: string,
    options: KvWriterOptions = {},
  ) {
    this.#options = options;
    this.pooling = options.pooling;
    this.dense = options.dense ?? [];
    this.rerank = options.rerank;
    this.suppressTokens = options.suppressTokens;
    const classes = config["architectures"];
    this.#hfClass = Array.isArray(classes) && typeof classes[0] === "string"
      ? classes[0]
      : undefined;
    const text = record(config["text_config"]);
    const merged = text === undefined ? config : { ...config, ...text };
    // A derived writer's hparams are the converter's already: a field its
    // subclass popped (Granite's head_dim) must stay out, not be filled again.
    this.hparams = KvWriter.#asSeen.has(config) ? merged : withConfigDefaults(merged);
    this.arch = arch;
    this.rope = normalizedRope(this.hparams);
  }

  /** The first of `keys` the config has (`find_hparam(keys, optional=True)`). */
  find(...keys: string[]): unknown {
    for (const key of keys) {
      if (!Object.hasOwn(this.hparams, key)) continue;
      if (!this.#read.includes(key)) this.#read.push(key);
      this.#everRead.add(key);
      return this.hparams[key];
    }
    return undefined;
  }

  /**
   * Record the fields the config has among `fields` as sources of the next
   * key: a value computed from fields read earlier (`4 × hidden_size`).
   *
   * @param fields The fields.
   */
  cite(...fields: string[]): void {
    for (const f of fields) this.find(f);
  }

  /**
   * Record the fields the config has among `fields` as the only sources of
   * the next key: a value computed from them that another field may hold
   * by chance (Qwen4-Exp's PLE head width, 16 like its `head_dim`), which
   * {@linkcode cite} would name instead.
   *
   * @param fields The fields.
   */
  computedFrom(...fields: string[]): void {
    this.#read = [];
    this.cite(...fields);
    this.#computed = true;
  }

  /**
   * A field of a nested section (DBRX's `attn_config.kv_n_heads`, Gemma 4's
   * `per_layer_config.2.head_dim`), recorded as its dotted path for the
   * key it makes.
   *
   * @param path The sections, then the field.
   */
  findIn(...path: string[]): unknown {
    let o: Record<string, unknown> | undefined = this.hparams;
    for (const section of path.slice(0, -1)) o = record(o?.[section]);
    const key = path[path.length - 1]!;
    if (o === undefined || !Object.hasOwn(o, key)) return undefined;
    const name = path.join(".");
    if (!this.#read.includes(name)) this.#read.push(name);
    this.#everRead.add(name);
    return o[key];
  }

  /**
   * The config fields a key was made from: those found since the key before
   * it was added (`conv_kernel` for `mamba.ssm.conv_kernel`); empty for a
   * default or a value the family computed first. For messages only.
   *
   * @param key The full GGUF key.
   */
  sourceOf(key: string): readonly string[] {
    return this.#sources.get(key) ?? [];
  }

  /**
   * Record the fields read for `key` and start over: the one holding the
   * key's value, if one does (`linear_conv_kernel_dim` for `ssm.conv_kernel`,
   * not the layer count read before it; else one read earlier that does),
   * else all read since the key before.
   */
  #sourced(key: string, value: unknown): string {
    if (this.#computed) {
      this.#computed = false;
      if (this.#read.length > 0) this.#sources.set(key, this.#read);
      this.#read = [];
      return key;
    }
    const holding = (fields: readonly string[]) => fields.filter((f) => this.#field(f) === value);
    // A value read earlier and kept (DeepSeek-V2's kv_lora_rank) is found among all reads.
    const exact = holding(this.#read).length > 0
      ? holding(this.#read)
      : holding([...this.#everRead]);
    const read = exact.length > 0 ? exact : this.#read;
    if (read.length > 0) this.#sources.set(key, read);
    this.#read = [];
    return key;
  }

  /** A recorded field's value: `section.field` for one {@linkcode findIn} read. */
  #field(name: string): unknown {
    if (Object.hasOwn(this.hparams, name)) return this.hparams[name];
    const path = name.split(".");
    let o: Record<string, unknown> | undefined = this.hparams;
    for (const section of path.slice(0, -1)) o = record(o?.[section]);
    return o?.[path[path.length - 1]!];
  }

  /** A number the config must have (the converter raises without it). */
  need(...keys: string[]): number {
    const v = this.find(...keys);
    if (typeof v !== "number" || !Number.isFinite(v)) {
      throw new RangeError(`config.json has no number for ${keys.join(" / ")}`);
    }
    return v;
  }

  /** A number the config may have. */
  num(...keys: string[]): number | undefined {
    const v = this.find(...keys);
    return typeof v === "number" && Number.isFinite(v) ? v : undefined;
  }

  /** The RoPE parameters of full attention (`rope_parameters.full_attention`, else all of them). */
  get fullRope(): Readonly<Record<string, unknown>> {
    return record(this.rope["full_attention"]) ?? this.rope;
  }

  /** Add `{arch}.<suffix>` (or a full `general.*`/`tokenizer.*` key) with a type. */
  set(suffix: string, type: KvType, value: unknown): void {
    if (value === undefined || value === null) return;
    const ok = type === "STRING"
      ? typeof value === "string"
      : type === "BOOL"
      ? typeof value === "boolean"
      : typeof value === "number" && Number.isFinite(value);
    if (!ok) throw new RangeError(`config.json: ${suffix} is not a ${type.toLowerCase()}`);
    this.#entries.set(this.#sourced(this.#key(suffix), value), {
      type,
      value: value as number | string | boolean,
    });
  }

  /** Add `{arch}.<suffix>` as an array of `type`. */
  setArray(suffix: string, type: KvType, values: readonly (number | string | boolean)[]): void {
    this.#entries.set(this.#sourced(this.#key(suffix), values), {
      type: "ARRAY",
      array_types: [type],
      value: values,
    });
  }

  /** Add a finished entry under its full key (from another writer). */
  put(key: string, entry: KvEntry): void {
    this.#entries.set(key, entry);
  }

  /**
   * A writer over `hparams` in place of this config, with this writer's
   * architecture and options: the converter's subclasses change their
   * hparams before a parent class reads them.
   */
  over(hparams: Readonly<Record<string, unknown>>): KvWriter {
    KvWriter.#asSeen.add(hparams);
    const derived = new KvWriter(hparams, this.arch, this.#options);
    // Still the class config.json names, whatever `text_config` the hparams merged in.
    derived.#hfClass = this.#hfClass;
    return derived;
  }

  /**
   * Add, in order, the keys `write` makes over `hparams` (see {@linkcode over}):
   * a subclass's `set_gguf_parameters` calling its parent's on changed hparams.
   */
  writeOver(hparams: Readonly<Record<string, unknown>>, write: (w: KvWriter) => void): void {
    const parent = this.over(hparams);
    write(parent);
    for (const [key, entry] of parent.#entries) this.#entries.set(key, entry);
    for (const [key, fields] of parent.#sources) this.#sources.set(key, fields);
  }

  /** `{arch}.<suffix>` as UINT32. */
  u32(suffix: string, value: unknown): void {
    this.set(suffix, "UINT32", value);
  }

  /** `{arch}.<suffix>` as FLOAT32. */
  f32(suffix: string, value: unknown): void {
    this.set(suffix, "FLOAT32", value);
  }

  /** Mark where `general.file_type` goes (`add_file_type`); the writer fills in the value. */
  fileType(): void {
    this.#entries.set(FILE_TYPE_KEY, { type: "UINT32", value: 0 });
  }

  /** The keys written, in order. */
  entries(): Map<string, KvEntry> {
    return new Map(this.#entries);
  }

  #key(suffix: string): string {
    return suffix.startsWith("general.") || suffix.startsWith("tokenizer.")
      ? suffix
      : `${this.arch}.${suffix}`;
  }
}

function normalizedRope(hparams: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const rope: Record<string, unknown> = {
    ...(record(hparams["rope_parameters"]) ?? record(hparams["rope_scaling"]) ?? {}),
  };
  const find = (keys: string[]) => {
    for (const k of keys) if (Object.hasOwn(hparams, k)) return hparams[k];
    return undefined;
  };
  if (!("full_attention" in rope) && !("sliding_attention" in rope)) {
    const theta = find([
      "global_rope_theta",
      "rope_global_theta",
      "rope_theta_global",
      "rope_theta",
      "rotary_emb_base",
    ]);
    const local = find([
      "local_rope_theta",
      "rope_local_theta",
      "rope_theta_local",
      "swa_rope_theta",
      "rope_local_base_freq",
    ]);
    const partial = find(["partial_rotary_factor", "rope_pct", "rope_percent"]);
    const original = find(["original_max_position_embeddings"]);
    if (local !== undefined && local !== null) rope["sliding_attention"] = { rope_theta: local };
    if (!("rope_theta" in rope) && theta !== undefined && theta !== null) {
      rope["rope_theta"] = theta;
    }
    if (!("rope_type" in rope) && rope["type"] !== undefined) rope["rope_type"] = rope["type"];
    if (!("partial_rotary_factor" in rope) && partial !== undefined && partial !== null) {
      rope["partial_rotary_factor"] = partial;
    }
    if (
      !("original_max_position_embeddings" in rope) && original !== undefined && original !== null
    ) {
      rope["original_max_position_embeddings"] = original;
    }
  }
  return rope;
}

/** A JSON object, or `undefined`. */
export function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}
