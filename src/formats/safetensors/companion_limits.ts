// This module is browser compatible.

/**
 * Checks on the values of Hugging Face companion files (`config.json`,
 * `tokenizer.json`, `tokenizer_config.json`, `generation_config.json`), made
 * before anything is derived from them, the way tensor headers are checked
 * (docs/SECURITY.md, "Companion files"). Anyone can publish a repository, so
 * a count or an id in these files is a claim like any other:
 *
 * - every token id and `vocab_size` is bounded by the checkpoint's own
 *   bytes: the vocabulary is padded to its length (`[PAD<id>]`), so one id
 *   of 3·10^7 in an otherwise tiny folder made every command allocate
 *   gigabytes. No id may reach past the largest dimension of any tensor
 *   (the embedding's rows) that its bytes back — a dimension counts only up
 *   to the tensor's byte length, so a zero-byte `[0, 4294967295]` tensor
 *   raises nothing — or {@linkcode MIN_VOCABULARY_BOUND} for a checkpoint
 *   smaller than a real vocabulary (test models keep a real tokenizer with
 *   tiny weights). The other counts that size something (heads, experts,
 *   widths) have the same bound, and a layer count is at most the number
 *   of tensors (every layer has one): per-layer lists are built from it;
 * - a token id is an integer, not -1, 1e300, `"x"`, 2^53 or `null`;
 * - a token is well-formed UTF-16: a lone surrogate (`"\ud800"` in JSON)
 *   would silently become U+FFFD in a GGUF or APR file;
 * - a numeric config field that is present holds a number of its kind: a
 *   count (`num_hidden_layers`, `vocab_size`…) an integer from 0 to
 *   2^32 − 1, a float (`rope_theta`, `rms_norm_eps`…) finite and positive.
 *   `null` (which transformers writes for unset fields) and per-layer arrays
 *   count as absent.
 *
 * A violation is a {@linkcode ModelFormatError} naming the file and the field.
 *
 * @module
 */

import { ModelFormatError } from "../../errors.ts";

/**
 * Token ids always allowed up to this bound, whatever the checkpoint's
 * shapes: 2^18, just above the largest real vocabularies (Gemma 3: 262,208
 * ids still need an embedding of that many rows, which raises the bound).
 * Padding a vocabulary this long costs ~20 MB.
 */
export const MIN_VOCABULARY_BOUND = 1 << 18;

/**
 * Bytes of all of one model's companion files together (`config.json`,
 * `tokenizer.json`, `tokenizer.model`, templates…): they are read whole and
 * kept as metadata, at several times their size in memory (a 76 MB
 * `tokenizer.json` of 5 million merges peaked at 810 MB). The largest real
 * set (Gemma 3: a 33 MB `tokenizer.json`, a 4.7 MB `tokenizer.model`, a
 * 1.2 MB `tokenizer_config.json`) is under 40 MB.
 */
export const MAX_COMPANION_BYTES = 64 * 1024 * 1024;

/**
 * Characters of all chat templates together (`chat_template.jinja`,
 * `additional_chat_templates/`, the templates of `tokenizer_config.json` and
 * `chat_template.json`): a template is copied into several keys of each
 * output (a 30 MiB one peaked at 750 MB), and real ones are kilobytes
 * (Command R's three: ~30 KB).
 */
export const MAX_CHAT_TEMPLATE_CHARS = 1024 * 1024;

/**
 * One budget for a model's companion data (issue 34 §1, "Memory"): every
 * file's size is taken before it is read, and every template's length as it
 * is found, so no number or size of files can add up past
 * {@linkcode MAX_COMPANION_BYTES} and {@linkcode MAX_CHAT_TEMPLATE_CHARS}.
 *
 * @example Usage
 * ```ts
 * import { CompanionBudget } from "./companion_limits.ts";
 * const budget = new CompanionBudget();
 * budget.takeFile(1000, "config.json");
 * let refused = false;
 * try {
 *   budget.takeTemplate(2 ** 21, "chat_template.jinja");
 * } catch {
 *   refused = true;
 * }
 * console.assert(refused);
 * ```
 */
export class CompanionBudget {
  #bytes = 0;
  #templateChars = 0;

  /**
   * Count a file's bytes, before it is read.
   *
   * @param bytes The file's size.
   * @param location The file, for the message.
   * @throws {ModelFormatError} When the files together would pass the budget.
   */
  takeFile(bytes: number, location: string): void {
    this.#bytes += bytes;
    if (this.#bytes > MAX_COMPANION_BYTES) {
      throw new ModelFormatError(
        "JSON",
        location,
        `too large: its ${bytes} bytes bring the model's companion files to ${this.#bytes} bytes, ` +
          `over the ${MAX_COMPANION_BYTES}-byte budget for all of them`,
      );
    }
  }

  /**
   * Count a chat template's characters (a template file's bytes, before it is read).
   *
   * @param chars The template's length.
   * @param location Where it is, for the message.
   * @throws {ModelFormatError} When the templates together would pass their budget.
   */
  takeTemplate(chars: number, location: string): void {
    this.#templateChars += chars;
    if (this.#templateChars > MAX_CHAT_TEMPLATE_CHARS) {
      throw new ModelFormatError(
        "JSON",
        location,
        `too large: a chat template of ${chars} characters brings the model's templates to ` +
          `${this.#templateChars}, over the ${MAX_CHAT_TEMPLATE_CHARS}-character budget for all of them`,
      );
    }
  }
}

/** Largest count a config field may hold: GGUF and APR store them as u32. */
const MAX_COUNT = 0xffff_ffff;

/** Spellings of the hidden width. */
const WIDTH_FIELDS = ["hidden_size", "n_embd", "d_model"];
/** Spellings of the model's layer count. */
const MAIN_LAYER_FIELDS = ["num_hidden_layers", "n_layer", "n_layers", "num_layers"];
/** Spellings of the attention head count. */
const HEAD_FIELDS = ["num_attention_heads", "n_head", "n_heads"];
/** Spellings of the vocabulary length. */
const VOCAB_FIELDS = ["vocab_size", "n_vocab"];
/**
 * Count fields that are lengths of a sequence, not of anything aprkit
 * builds: written as read, so not bounded by the checkpoint.
 */
const CONTEXT_FIELD_LIST = [
  "max_position_embeddings",
  "n_positions",
  "max_seq_len",
  "seq_length",
  "n_ctx",
];
/**
 * Layer counts other than the model's: a vision tower's `depth`, and the
 * multi-token-prediction, leading dense and KV-sharing layers the families
 * add to or mark in per-layer lists.
 */
const PART_LAYER_FIELDS = [
  "depth",
  "num_layers_per_stack",
  "mtp_num_hidden_layers",
  "num_nextn_predict_layers",
  "first_k_dense_replace",
  "num_kv_shared_layers",
  "num_dense_layers",
];

/** Config fields that count something (integers, 0 to 2^32 − 1), every spelling aprkit reads. */
const COUNT_FIELDS: readonly string[] = [
  ...WIDTH_FIELDS,
  "hidden_dim",
  ...MAIN_LAYER_FIELDS,
  ...HEAD_FIELDS,
  "num_heads",
  "num_key_value_heads",
  "n_kv_heads",
  "num_kv_heads",
  ...VOCAB_FIELDS,
  "intermediate_size",
  "n_inner",
  "ffn_dim",
  "intermediate_dim",
  ...CONTEXT_FIELD_LIST,
  "head_dim",
  "num_local_experts",
  "num_experts",
  "n_routed_experts",
  "num_experts_per_tok",
  "moe_intermediate_size",
  "moe_num_experts",
  "moe_k",
  ...PART_LAYER_FIELDS,
];

/** {@linkcode CONTEXT_FIELD_LIST}, looked up. */
const CONTEXT_FIELDS: ReadonlySet<string> = new Set(CONTEXT_FIELD_LIST);

/** Count fields that count layers: the model's and its parts'. */
const LAYER_FIELDS: ReadonlySet<string> = new Set([...MAIN_LAYER_FIELDS, ...PART_LAYER_FIELDS]);

/**
 * Counts that are never 0 in a model with tensors: its layers, width, heads
 * and vocabulary. A 0 was read as "absent" by the shape check and written as
 * is: `num_hidden_layers: 0` made a Llama GGUF of `block_count` 0 holding
 * two blocks' tensors, exit 0.
 */
const NONZERO_FIELDS: ReadonlySet<string> = new Set([
  ...MAIN_LAYER_FIELDS,
  ...WIDTH_FIELDS,
  ...HEAD_FIELDS,
  ...VOCAB_FIELDS,
]);

/** Config fields that are positive real numbers. */
const POSITIVE_FIELDS: readonly string[] = [
  "rope_theta",
  "rms_norm_eps",
  "layer_norm_eps",
  "layer_norm_epsilon",
  "norm_eps",
];

/** Token-id fields of config.json and generation_config.json (an id or a list of ids). */
const ID_FIELDS: readonly string[] = [
  "bos_token_id",
  "eos_token_id",
  "pad_token_id",
  "unk_token_id",
  "sep_token_id",
  "cls_token_id",
  "mask_token_id",
  "decoder_start_token_id",
];

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}

/** A value as a message shows it: short, and without the file's control characters. */
function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

/**
 * The largest token id a checkpoint can have plus one: the largest dimension
 * of any of its tensors (the embedding's rows) that the tensor's bytes back,
 * at least {@linkcode MIN_VOCABULARY_BOUND}. A dimension counts only up to
 * the tensor's byte length (a row of any dtype takes at least one byte): a
 * shape is a claim, the bytes are there.
 *
 * @example Usage
 * ```ts
 * import { MIN_VOCABULARY_BOUND, vocabularyBound } from "./companion_limits.ts";
 * console.assert(vocabularyBound([{ shape: [300_000, 8], byteLength: 4_800_000 }]) === 300_000);
 * console.assert(vocabularyBound([{ shape: [4, 4], byteLength: 32 }]) === MIN_VOCABULARY_BOUND);
 * console.assert(vocabularyBound([{ shape: [0, 2 ** 32 - 1], byteLength: 0 }]) === MIN_VOCABULARY_BOUND);
 * ```
 *
 * @param tensors The checkpoint's tensors (their shapes and byte lengths).
 * @returns The bound on token ids and vocabulary lengths.
 */
export function vocabularyBound(
  tensors: readonly { readonly shape: readonly number[]; readonly byteLength: number }[],
): number {
  let largest = MIN_VOCABULARY_BOUND;
  for (const t of tensors) {
    for (const d of t.shape) {
      const backed = Math.min(d, t.byteLength);
      if (backed > largest) largest = backed;
    }
  }
  return largest;
}

/** Bounds on what a checkpoint's companion files may claim, from its tensors' bytes. */
export interface CheckpointBounds {
  /** Token ids, `vocab_size` and other sizing counts must be below or at this ({@linkcode vocabularyBound}). */
  readonly ids: number;
  /** Layer counts must be at most this: the number of tensors. */
  readonly layers: number;
}

/**
 * The bounds of a checkpoint's companion values: {@linkcode vocabularyBound}
 * and the tensor count.
 *
 * @example Usage
 * ```ts
 * import { checkpointBounds } from "./companion_limits.ts";
 * console.assert(checkpointBounds([{ shape: [8, 8], byteLength: 256 }]).layers === 1);
 * ```
 *
 * @param tensors The checkpoint's tensors (their shapes and byte lengths).
 * @returns The bounds.
 */
export function checkpointBounds(
  tensors: readonly { readonly shape: readonly number[]; readonly byteLength: number }[],
): CheckpointBounds {
  return { ids: vocabularyBound(tensors), layers: tensors.length };
}

/** What a check needs to know about the file it reads. */
interface Where {
  /** Path or URL of the file, for messages. */
  readonly path: string;
  /** Token ids must be below this. */
  readonly bound: number;
}

function fail(where: Where, reason: string): ModelFormatError {
  return new ModelFormatError("JSON", where.path, reason);
}

/** Whether `id` is a token id below the bound (the fast path of {@linkcode checkId}). */
function isTokenId(id: unknown, bound: number): boolean {
  return typeof id === "number" && Number.isSafeInteger(id) && id >= 0 && id < bound;
}

/** Refuse an id; `field` is a function so the million valid ids of a vocabulary build no strings. */
function checkId(where: Where, field: () => string, id: unknown): void {
  if (isTokenId(id, where.bound)) return;
  if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 0) {
    throw fail(where, `${field()} is ${shown(id)}, not a token id (an integer from 0)`);
  }
  throw fail(
    where,
    `${field()} is ${id}, past the ${where.bound} ids the checkpoint's tensors can hold`,
  );
}

function checkToken(where: Where, field: () => string, token: string): void {
  if (!token.isWellFormed()) {
    throw fail(where, `${field()} holds a lone UTF-16 surrogate, which no file format can store`);
  }
}

/**
 * Check the numeric fields of `config.json` (and its `text_config`) or
 * `generation_config.json`.
 *
 * @example Usage
 * ```ts
 * import { checkConfigValues } from "./companion_limits.ts";
 * let refused = false;
 * try {
 *   checkConfigValues({ num_hidden_layers: -1 }, "config.json", { ids: 32000, layers: 100 });
 * } catch {
 *   refused = true;
 * }
 * console.assert(refused);
 * ```
 *
 * @param config The parsed file.
 * @param path Its path or URL, for messages.
 * @param bounds What the checkpoint's bytes allow ({@linkcode checkpointBounds}).
 * @throws {ModelFormatError} Naming the file and the first bad field.
 */
export function checkConfigValues(config: unknown, path: string, bounds: CheckpointBounds): void {
  const top = record(config);
  if (top === undefined) return;
  const bound = bounds.ids;
  const where = { path, bound };
  const sections: [string, Record<string, unknown>][] = [["", top]];
  for (const sub of ["text_config", "vision_config", "audio_config"]) {
    const section = record(top[sub]);
    if (section !== undefined) sections.push([`${sub}.`, section]);
  }
  checkCountLikeValues(top, where, bounds);
  for (const [prefix, section] of sections) {
    for (const key of COUNT_FIELDS) {
      const v = section[key];
      if (v === undefined || v === null || Array.isArray(v)) continue;
      if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > MAX_COUNT) {
        throw fail(where, `"${prefix}${key}" is ${shown(v)}, not a count (an integer from 0)`);
      }
      if (v === 0 && NONZERO_FIELDS.has(key)) {
        throw fail(where, `"${prefix}${key}" is 0: a model with tensors has at least 1`);
      }
      // Lists and padding are built from these: each must be backed by bytes.
      if (LAYER_FIELDS.has(key) && v > bounds.layers) {
        throw fail(
          where,
          `"${prefix}${key}" is ${v}, more layers than the checkpoint's ${bounds.layers} tensors can hold`,
        );
      }
      if (!CONTEXT_FIELDS.has(key) && !LAYER_FIELDS.has(key) && v > bound) {
        throw fail(
          where,
          `"${prefix}${key}" is ${v}, more than the ${bound} rows the checkpoint's tensors have`,
        );
      }
    }
    for (const key of POSITIVE_FIELDS) {
      const v = section[key];
      if (v === undefined || v === null) continue;
      if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
        throw fail(where, `"${prefix}${key}" is ${shown(v)}, not a positive number`);
      }
    }
    const rope = record(section["rope_parameters"])?.["rope_theta"];
    if (
      rope !== undefined && rope !== null &&
      !(typeof rope === "number" && rope > 0 && Number.isFinite(rope))
    ) {
      throw fail(
        where,
        `"${prefix}rope_parameters.rope_theta" is ${shown(rope)}, not a positive number`,
      );
    }
    for (const key of ID_FIELDS) {
      const v = section[key];
      if (v === undefined || v === null) continue;
      const ids = Array.isArray(v) ? v : [v];
      if (ids.length > bound) throw fail(where, `"${prefix}${key}" lists ${ids.length} ids`);
      ids.forEach((id, i) =>
        checkId(where, () => Array.isArray(v) ? `"${prefix}${key}"[${i}]` : `"${prefix}${key}"`, id)
      );
    }
  }
}

/**
 * Names of config fields that size something, whatever the family calls
 * them and however deep (`global_head_dim`, `linear_num_value_heads`,
 * `moe_num_shared_experts`, `heads_per_ngram`, `per_layer_config.3.head_dim`,
 * `kv_lora_rank`, `mamba_d_conv`, `conv_L_cache`, `mamba_n_groups`,
 * `H_cycles`, `hc_mult`, `vocab_size_per_layer_input`, `block_multiple_of`,
 * `intermediate_size_mlp`): families build
 * lists, rotary tables and strings from them, so each is bounded like the
 * named counts. A `max_*` field is a limit, not a size. Every integer field
 * of the families' config classes (tests/testdata/arch/config_fields.json)
 * is either one of these or named as no size in
 * tests/cli/config_attack_test.ts.
 */
const COUNT_LIKE =
  /(^|_)(dim|size|heads|layers|experts|rank|groups?|kernel|conv|state|ssm|expand|cycles|count|mult|inputs?|iters|topk|k|cache|period|interval|step|multiple_of|parts)$|^num_|^n_|^heads_|^hc_|^d_|^intermediate_size/i;

/**
 * Whether a config field's name is a count's ({@linkcode COUNT_LIKE}), as
 * {@linkcode checkConfigValues} bounds it at any depth.
 *
 * @example Usage
 * ```ts
 * import { isCountLikeField } from "./companion_limits.ts";
 * console.assert(isCountLikeField("kv_lora_rank") && !isCountLikeField("max_position_embeddings"));
 * ```
 *
 * @param key The field's name (its last segment).
 * @returns Whether it is bounded as a count.
 */
export function isCountLikeField(key: string): boolean {
  return COUNT_LIKE.test(key) && !key.startsWith("max_") && !CONTEXT_FIELDS.has(key);
}

/**
 * Refuse an integer of a count-like field ({@linkcode COUNT_LIKE}), at any
 * depth of `config.json`, that the checkpoint's bytes cannot back: more
 * layers than tensors, or a size past {@linkcode CheckpointBounds.ids}.
 * Fractions and negatives are left to the named fields' checks (the
 * families' own floats, `mscale_all_dim`, match the names).
 * `per_layer_config.3.head_dim: 2147483000` in Gemma 4 made a rotary
 * table of 10^9 entries: 8 GB and 187 s before the file was written;
 * Qwen4-exp's `heads_per_ngram: 2147483000` searched for 2^31 primes (no end
 * in 30 minutes).
 */
function checkCountLikeValues(
  top: Record<string, unknown>,
  where: Where,
  bounds: CheckpointBounds,
): void {
  // Iterative, so a deep value cannot overflow the stack; lists are not sizes.
  const pending: [string, Record<string, unknown>][] = [["", top]];
  while (pending.length > 0) {
    const [at, object] = pending.pop()!;
    for (const [key, v] of Object.entries(object)) {
      // As a message shows it: without the file's control characters.
      const name = `${at}${JSON.stringify(key).slice(1, -1).slice(0, 60)}`;
      const inner = record(v);
      if (inner !== undefined) {
        pending.push([`${name}.`, inner]);
        continue;
      }
      if (typeof v !== "number" || !Number.isInteger(v) || !isCountLikeField(key)) continue;
      if (key.endsWith("layers") && v > bounds.layers) {
        throw fail(
          where,
          `"${name}" is ${v}, more layers than the checkpoint's ${bounds.layers} tensors can hold`,
        );
      }
      if (v > bounds.ids) {
        throw fail(
          where,
          `"${name}" is ${v}, more than the ${bounds.ids} rows the checkpoint's tensors have`,
        );
      }
    }
  }
}

/**
 * Check the vocabulary, added tokens and merges of `tokenizer.json`: ids
 * are integers below `bound`, tokens are well-formed text, a Unigram
 * vocabulary has at most `bound` entries.
 *
 * @example Usage
 * ```ts
 * import { checkTokenizerValues } from "./companion_limits.ts";
 * let refused = false;
 * try {
 *   checkTokenizerValues({ added_tokens: [{ id: 2 ** 31, content: "<x>" }] }, "tokenizer.json", 1000);
 * } catch {
 *   refused = true;
 * }
 * console.assert(refused);
 * ```
 *
 * @param tokenizer The parsed file.
 * @param path Its path or URL, for messages.
 * @param bound Token ids must be below this.
 * @throws {ModelFormatError} Naming the file and the first bad entry.
 */
export function checkTokenizerValues(tokenizer: unknown, path: string, bound: number): void {
  const top = record(tokenizer);
  if (top === undefined) return;
  const where = { path, bound };
  const model = record(top["model"]);
  const vocab = model?.["vocab"];
  if (Array.isArray(vocab)) {
    if (vocab.length > bound) {
      throw fail(
        where,
        `"model.vocab" has ${vocab.length} entries, past the ${bound} ids the checkpoint's tensors can hold`,
      );
    }
    vocab.forEach((entry, id) => {
      if (!Array.isArray(entry) || typeof entry[0] !== "string") {
        throw fail(where, `"model.vocab"[${id}] is ${shown(entry)}, not a [token, score] pair`);
      }
      checkToken(where, () => `"model.vocab"[${id}]`, entry[0]);
      if (entry[1] !== undefined && (typeof entry[1] !== "number" || !Number.isFinite(entry[1]))) {
        throw fail(where, `"model.vocab"[${id}] has score ${shown(entry[1])}, not a finite number`);
      }
    });
  } else if (record(vocab) !== undefined) {
    // for…in, not Object.entries: a million [key, value] pairs cost ~100 MB.
    const map = vocab as Record<string, unknown>;
    for (const token in map) {
      const id = map[token];
      if (!isTokenId(id, bound)) checkId(where, () => `"model.vocab" entry ${shown(token)}`, id);
      if (!token.isWellFormed()) {
        checkToken(where, () => `"model.vocab" entry of id ${id}`, token);
      }
    }
  }
  const added = top["added_tokens"];
  if (Array.isArray(added)) {
    added.forEach((entry, i) => {
      const t = record(entry);
      if (t === undefined || typeof t["content"] !== "string") {
        throw fail(where, `"added_tokens"[${i}] is ${shown(entry)}, not {id, content}`);
      }
      checkId(where, () => `"added_tokens"[${i}].id`, t["id"]);
      checkToken(where, () => `"added_tokens"[${i}] (id ${t["id"]})`, t["content"]);
    });
  }
  const merges = model?.["merges"];
  if (Array.isArray(merges)) {
    merges.forEach((m, i) => {
      const parts = typeof m === "string" ? [m] : Array.isArray(m) ? m : [];
      for (const p of parts) {
        if (typeof p === "string") checkToken(where, () => `"model.merges"[${i}]`, p);
      }
    });
  }
}

/**
 * Whether a companion file's text holds a JSON escape of a UTF-16 surrogate
 * (`\uD800`…): only those can make a lone surrogate, the bytes having been
 * decoded as strict UTF-8. Without one, {@linkcode checkWellFormedText} need
 * not walk the value.
 *
 * @example Usage
 * ```ts
 * import { hasSurrogateEscape } from "./companion_limits.ts";
 * console.assert(hasSurrogateEscape('{"a": "\\ud800"}') && !hasSurrogateEscape('{"a": "b"}'));
 * ```
 *
 * @param text The file's text.
 * @returns True when the walk is needed.
 */
export function hasSurrogateEscape(text: string): boolean {
  return /\\u[dD][89a-fA-F]/.test(text);
}

/**
 * Refuse a lone UTF-16 surrogate anywhere in a companion file's strings
 * (keys included). Call it when {@linkcode hasSurrogateEscape} says so.
 *
 * @example Usage
 * ```ts
 * import { checkWellFormedText } from "./companion_limits.ts";
 * let refused = false;
 * try {
 *   checkWellFormedText(JSON.parse('{"bos_token": "\\ud800"}'), "tokenizer_config.json");
 * } catch {
 *   refused = true;
 * }
 * console.assert(refused);
 * ```
 *
 * @param value The parsed value.
 * @param path Its path or URL, for messages.
 * @throws {ModelFormatError} Naming the file and where the string is.
 */
export function checkWellFormedText(value: unknown, path: string): void {
  // Iterative, so a deep value cannot overflow the stack.
  const pending: [string, unknown][] = [["", value]];
  while (pending.length > 0) {
    const [at, v] = pending.pop()!;
    if (typeof v === "string") {
      if (!v.isWellFormed()) {
        throw new ModelFormatError(
          "JSON",
          path,
          `${at || "the value"} holds a lone UTF-16 surrogate, which no file format can store`,
        );
      }
    } else if (Array.isArray(v)) {
      v.forEach((item, i) => pending.push([`${at}[${i}]`, item]));
    } else if (v !== null && typeof v === "object") {
      for (const [key, item] of Object.entries(v)) {
        const name = `${at}${at ? "." : ""}${JSON.stringify(key).slice(0, 42)}`;
        if (!key.isWellFormed()) {
          throw new ModelFormatError(
            "JSON",
            path,
            `a key in ${
              at || "the top level"
            } holds a lone UTF-16 surrogate, which no file format can store`,
          );
        }
        pending.push([name, item]);
      }
    }
  }
}
