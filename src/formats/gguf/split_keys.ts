// This module is browser compatible.

/**
 * The metadata keys of a split GGUF set's shards (llama.cpp's
 * `LLM_KV_SPLIT_*`): they describe a file of the set, not the model, so
 * metadata conversions drop them and split output writes its own.
 *
 * @module
 */

/** The keys `gguf-split` writes into every shard (llama.cpp's `LLM_KV_SPLIT_*`). */
export const GGUF_SPLIT_KEYS = {
  /** The shard's 0-based index (u16). */
  no: "split.no",
  /** How many shards the set has (u16). */
  count: "split.count",
  /** How many tensors the whole set holds (i32). */
  tensorsCount: "split.tensors.count",
} as const;

/** Every split key, for filtering. */
export const GGUF_SPLIT_KEY_SET: ReadonlySet<string> = new Set(Object.values(GGUF_SPLIT_KEYS));
