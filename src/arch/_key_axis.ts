// This module is browser compatible.

/**
 * What the key-sized shape checks share (`key_shapes.ts`,
 * `hyper_connection_shapes.ts`; the count and shape words `gemma4_tower_shapes.ts`
 * uses too): an expected axis and the keys it follows from, and the message
 * naming those keys with the config fields each came from.
 *
 * @module
 */

/** The model's keys: the value of a full key, and where it came from for the message. */
export interface Keys {
  value(key: string): unknown;
  /** The `config.json` fields a key was made from (empty for a GGUF's own key). */
  source(key: string): readonly string[];
}

/** A tensor of the model, read as a kind of its architecture. */
export interface KeyedTensor {
  /** Its name in the file. */
  readonly name: string;
  /** Row-major shape, as the file holds it. */
  readonly shape: readonly number[];
  /** gguf-py's `MODEL_TENSOR` name, or `undefined`. */
  readonly kind: string | undefined;
  /** Its layer, or `undefined`. */
  readonly block: number | undefined;
  /** `.weight`, `.bias` or `""`. */
  readonly suffix: string;
  /** Its shape is the stored one, not the matrix's (kept packed): not checked. */
  readonly packed?: boolean;
  /** The shape as the file stores it, where `shape` is its matrices' (transposed ones). */
  readonly stored?: readonly number[];
  /** The file (shard) holding it, for the message. */
  readonly file?: string;
}

/** What a key-sized tensor is found to be: the tensor (or layer) and why. */
export interface KeyShapeProblem {
  readonly tensor: string;
  readonly file?: string;
  readonly reason: string;
}

/** An expected axis: its size and the keys (after `{arch}.`) it follows from; `undefined`: not checked. */
export type Axis = { readonly n: number; readonly keys: readonly string[] } | undefined;

/** A positive integer, or `undefined`. */
export const count = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v : undefined;

/** An axis of `n` from `keys`, or `undefined` when a size is unknown. */
export function axis(n: number | undefined, ...keys: string[]): Axis {
  return n === undefined || !Number.isFinite(n) ? undefined : { n, keys };
}

/** A shape for the message, `*` for an axis not checked. */
export const fmt = (shape: readonly (number | undefined)[]): string =>
  `[${shape.map((d) => d ?? "*").join(", ")}]`;

/** `{arch}.ssm.conv_kernel 5 from config.json's linear_conv_kernel_dim`, for each key an axis follows from. */
export function said(arch: string, keys: Keys, names: readonly string[]): string {
  return [...new Set(names)].map((k) => {
    const full = `${arch}.${k}`;
    const from = keys.source(full);
    const value = JSON.stringify(keys.value(full));
    return `${full} ${value}${from.length > 0 ? ` from config.json's ${from.join(", ")}` : ""}`;
  }).join("; ");
}
