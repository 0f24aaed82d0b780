// This module is browser compatible.

/**
 * APR v2 metadata JSON (APR_V2.md §3): the exact key order and null policy of
 * aprender's writer, one spelling per alias group (realizar drops all metadata
 * when it sees two), and a tolerant but type-checking parser.
 *
 * @module
 */

import { ModelFormatError } from "../../errors.ts";
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from "../../io/json_depth.ts";
import type { ModelMetadata } from "../../tensor.ts";

/**
 * Largest metadata JSON read: real files carry tokenizers of a few tens of MB
 * (a 256k vocabulary with merges is ~30 MB); a larger block is refused before
 * allocating, since decoding and parsing it takes several times its size
 * (docs/SECURITY.md). Writers refuse to write more, so every file aprkit
 * writes can be read back.
 */
export const APR_MAX_METADATA_SIZE = 128 * 1024 * 1024;

type Kind = "string" | "uint" | "number" | "quantization" | "sharding" | "special_tokens";

/** Known keys in the order aprender writes them (APR_V2.md §3), with their JSON types. */
const KNOWN: ReadonlyArray<readonly [string, Kind]> = [
  ["model_type", "string"],
  ["name", "string"],
  ["description", "string"],
  ["author", "string"],
  ["license", "string"],
  ["data_source", "string"],
  ["data_license", "string"],
  ["version", "string"],
  ["source", "string"],
  ["original_format", "string"],
  ["created_at", "string"],
  ["total_size", "uint"],
  ["param_count", "uint"],
  ["quantization", "quantization"],
  ["sharding", "sharding"],
  ["chat_template", "string"],
  ["chat_format", "string"],
  ["special_tokens", "special_tokens"],
  ["architecture", "string"],
  ["hf_architecture", "string"],
  ["hf_model_type", "string"],
  ["hidden_size", "uint"],
  ["num_layers", "uint"],
  ["num_heads", "uint"],
  ["num_kv_heads", "uint"],
  ["vocab_size", "uint"],
  ["intermediate_size", "uint"],
  ["max_position_embeddings", "uint"],
  ["rope_theta", "number"],
  ["rope_type", "uint"],
  ["rms_norm_eps", "number"],
  ["head_dim", "uint"],
  ["num_experts", "uint"],
  ["num_experts_per_tok", "uint"],
  ["moe_intermediate_size", "uint"],
];
const KNOWN_KIND = new Map<string, Kind>(KNOWN);

/** Keys aprender writes as `null` when absent; every other absent key is omitted. */
const ALWAYS_NULL = new Set(["license", "data_source", "data_license"]);

/**
 * Alias groups realizar reads as one field (APR_V2.md §3 "alias trap"): the
 * canonical (written) spelling first.
 */
export const APR_METADATA_ALIASES: Readonly<Record<string, readonly string[]>> = {
  hidden_size: ["hidden_dim", "d_model", "n_embd"],
  num_layers: ["n_layers", "num_hidden_layers", "n_layer"],
  num_heads: ["n_heads", "num_attention_heads", "n_head"],
  num_kv_heads: ["n_kv_heads", "num_key_value_heads"],
  vocab_size: ["n_vocab"],
  intermediate_size: ["ffn_dim", "intermediate_dim", "n_inner"],
  max_position_embeddings: ["max_seq_len", "context_length", "n_ctx"],
  rms_norm_eps: ["layer_norm_eps", "norm_eps"],
};
const ALIAS_TO_CANONICAL = new Map<string, string>(
  Object.entries(APR_METADATA_ALIASES).flatMap(([c, as]) => as.map((a) => [a, c] as const)),
);

const SPECIAL_TOKEN_KEYS = [
  "bos_token",
  "eos_token",
  "unk_token",
  "pad_token",
  "im_start_token",
  "im_end_token",
] as const;

/**
 * Fold alias spellings into their canonical field: an alias fills the
 * canonical field when that is absent (undefined or null), and is dropped
 * either way, so the result has at most one spelling per group.
 *
 * @param metadata Metadata that may hold alias keys.
 * @returns A new object, key order kept, aliases folded.
 */
export function normalizeAprMetadata(metadata: Readonly<ModelMetadata>): ModelMetadata {
  const out: ModelMetadata = {};
  for (const [key, value] of Object.entries(metadata)) {
    const canonical = ALIAS_TO_CANONICAL.get(key);
    if (canonical === undefined) {
      // A null canonical field never overwrites a value an alias filled in.
      if (value !== undefined && !(value === null && out[key] !== undefined)) out[key] = value;
    } else if (
      value !== undefined && value !== null &&
      (metadata[canonical] === undefined || metadata[canonical] === null) &&
      (out[canonical] === undefined || out[canonical] === null)
    ) {
      out[canonical] = value;
    }
  }
  return out;
}

/**
 * Encode metadata as aprender does: compact JSON, known keys in APR_V2.md §3
 * order, then custom keys in insertion order; absent known keys omitted except
 * `license`, `data_source`, `data_license` (written `null`); `model_type`,
 * `total_size` and `param_count` always written; one spelling per alias group.
 *
 * @example Usage
 * ```ts
 * import { encodeAprMetadata } from "./metadata.ts";
 * const json = new TextDecoder().decode(encodeAprMetadata({ n_embd: 64, name: "m" }));
 * console.assert(json === '{"model_type":"","name":"m","license":null,"data_source":null,"data_license":null,"total_size":0,"param_count":0,"hidden_size":64}');
 * ```
 *
 * @param metadata The metadata.
 * @returns UTF-8 JSON bytes.
 * @throws {TypeError} When a known field has the wrong type, or a custom value is not JSON.
 */
export function encodeAprMetadata(metadata: Readonly<ModelMetadata>): Uint8Array {
  const m = normalizeAprMetadata(metadata);
  checkKnownTypes(m, (key, reason) => {
    throw new TypeError(`Cannot encode APR metadata: "${key}" ${reason}`);
  });
  const parts: string[] = [];
  let length = 2;
  // A source's text (a chat template of control characters triples or more
  // as JSON escapes) must not reach V8's string limit: measured as it grows.
  const add = (key: string, part: string): void => {
    length += part.length + 1;
    if (length > APR_MAX_METADATA_SIZE) {
      throw tooLarge(`the JSON (${length} bytes up to "${key}")`);
    }
    parts.push(part);
  };
  const stringify = (key: string, value: unknown): string | undefined => {
    try {
      return JSON.stringify(value);
    } catch (cause) {
      if (cause instanceof RangeError) throw tooLarge(`the value of "${key}" as JSON`, cause);
      throw cause;
    }
  };
  const put = (key: string, value: unknown): void => {
    add(key, `${JSON.stringify(key)}:${stringify(key, value)}`);
  };
  for (const [key, kind] of KNOWN) {
    const value = m[key];
    if (key === "model_type") put(key, value ?? "");
    else if (key === "total_size" || key === "param_count") put(key, value ?? 0);
    else if (ALWAYS_NULL.has(key)) put(key, value ?? null);
    else if (value === undefined || value === null) continue;
    else if (kind === "quantization") {
      const q = value as NonNullable<ModelMetadata["quantization"]>;
      put(key, {
        quant_type: q.quant_type,
        bits: q.bits,
        block_size: q.block_size ?? null,
        symmetric: q.symmetric,
      });
    } else if (kind === "sharding") {
      const s = value as NonNullable<ModelMetadata["sharding"]>;
      put(key, {
        shard_count: s.shard_count,
        shard_index: s.shard_index,
        total_size: s.total_size,
        pattern: s.pattern ?? null,
      });
    } else if (kind === "special_tokens") {
      const s = value as Record<string, unknown>;
      put(key, Object.fromEntries(SPECIAL_TOKEN_KEYS.map((k) => [k, s[k] ?? null])));
    } else put(key, value);
  }
  for (const [key, value] of Object.entries(m)) {
    if (KNOWN_KIND.has(key) || value === undefined) continue;
    let json: string | undefined;
    try {
      json = stringify(key, value);
    } catch (cause) {
      if (cause instanceof RangeError) throw cause;
      throw new TypeError(`Cannot encode APR metadata: custom key "${key}" is not JSON`, {
        cause,
      });
    }
    if (json === undefined) {
      throw new TypeError(`Cannot encode APR metadata: custom key "${key}" is not JSON`);
    }
    add(key, `${JSON.stringify(key)}:${json}`);
  }
  const bytes = new TextEncoder().encode(`{${parts.join(",")}}`);
  if (bytes.length > APR_MAX_METADATA_SIZE) throw tooLarge(`the JSON (${bytes.length} bytes)`);
  return bytes;
}

function tooLarge(what: string, cause?: unknown): RangeError {
  return new RangeError(
    `Cannot encode APR metadata: ${what} is over the ${APR_MAX_METADATA_SIZE}-byte limit APR readers accept`,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * Parse metadata JSON: accepts aprender's current style, older all-`null`
 * style, alias spellings (folded to the canonical field) and unknown keys;
 * rejects invalid UTF-8/JSON, a non-object, and known fields of the wrong type.
 *
 * @example Usage
 * ```ts
 * import { parseAprMetadata } from "./metadata.ts";
 * const m = parseAprMetadata(new TextEncoder().encode('{"model_type":"llama","n_embd":64}'));
 * console.assert(m.hidden_size === 64);
 * ```
 *
 * @param bytes The unpadded JSON bytes.
 * @param path File name, for messages.
 * @param offset Byte offset of the JSON in the file, for messages.
 * @returns The metadata.
 * @throws {ModelFormatError} When the JSON is invalid or a known field has the wrong type.
 */
export function parseAprMetadata(bytes: Uint8Array, path = "<memory>", offset = 64): ModelMetadata {
  let value: unknown;
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    value = JSON.parse(text);
  } catch (cause) {
    throw new ModelFormatError(
      "APR",
      path,
      `metadata is not valid JSON: ${(cause as Error).message}`,
      { offset, cause },
    );
  }
  if (jsonNestsDeeperThan(text)) {
    throw new ModelFormatError(
      "APR",
      path,
      `metadata nests deeper than ${MAX_JSON_DEPTH} levels`,
      { offset },
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ModelFormatError("APR", path, "metadata is not a JSON object", { offset });
  }
  const m = normalizeAprMetadata(value as ModelMetadata);
  checkKnownTypes(m, (key, reason) => {
    throw new ModelFormatError("APR", path, `metadata field "${key}" ${reason}`, { offset });
  });
  return m;
}

function checkKnownTypes(m: ModelMetadata, fail: (key: string, reason: string) => never): void {
  for (const [key, kind] of KNOWN) {
    const value = m[key];
    if (value === undefined || value === null) continue;
    checkKind(key, kind, value, fail);
  }
}

function isUint(v: unknown): boolean {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

function checkKind(
  key: string,
  kind: Kind,
  value: unknown,
  fail: (key: string, reason: string) => never,
): void {
  const obj = (): Record<string, unknown> => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      fail(key, "must be an object or null");
    }
    return value as Record<string, unknown>;
  };
  switch (kind) {
    case "string":
      if (typeof value !== "string") fail(key, "must be a string or null");
      return;
    case "uint":
      if (!isUint(value)) fail(key, "must be a non-negative integer or null");
      return;
    case "number":
      if (typeof value !== "number" || !Number.isFinite(value)) {
        fail(key, "must be a finite number or null");
      }
      return;
    case "quantization": {
      const q = obj();
      if (typeof q.quant_type !== "string") fail(key, "needs a string quant_type");
      if (!isUint(q.bits)) fail(key, "needs an integer bits");
      if (q.block_size !== undefined && q.block_size !== null && !isUint(q.block_size)) {
        fail(key, "needs an integer or null block_size");
      }
      if (typeof q.symmetric !== "boolean") fail(key, "needs a boolean symmetric");
      return;
    }
    case "sharding": {
      const s = obj();
      for (const f of ["shard_count", "shard_index", "total_size"]) {
        if (!isUint(s[f])) fail(key, `needs an integer ${f}`);
      }
      if (s.pattern !== undefined && s.pattern !== null && typeof s.pattern !== "string") {
        fail(key, "needs a string or null pattern");
      }
      return;
    }
    case "special_tokens": {
      const s = obj();
      for (const f of SPECIAL_TOKEN_KEYS) {
        if (s[f] !== undefined && s[f] !== null && typeof s[f] !== "string") {
          fail(key, `needs a string or null ${f}`);
        }
      }
      return;
    }
  }
}
