// This module is browser compatible.

/**
 * Keys as config fields that nobody writes imply them
 * (`GgufSupport.impliedKeys` in `family.ts`): a product of fields, each a
 * positive integer, with the fields and their values for the message.
 *
 * @module
 */

import type { ImpliedKey } from "./family.ts";

const count = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v : undefined;

/**
 * `{arch}.<key>` as the product of `fields`, or `undefined` when one is no count.
 *
 * @example Usage
 * ```ts
 * import { impliedProduct } from "./implied_keys.ts";
 * const k = impliedProduct({ expand: 3, hidden_size: 64 }, "ssm.inner_size", "expand", "hidden_size");
 * console.assert(k?.value === 192 && k.from === "expand 3 × hidden_size 64");
 * ```
 *
 * @param h The config (`text_config` merged in).
 * @param key The key after `{arch}.`.
 * @param fields The fields multiplied.
 * @returns The implied key, or `undefined`.
 */
export function impliedProduct(
  h: Readonly<Record<string, unknown>>,
  key: string,
  ...fields: string[]
): ImpliedKey | undefined {
  const values = fields.map((f) => count(h[f]));
  if (values.some((v) => v === undefined)) return undefined;
  return {
    key,
    value: values.reduce((a, b) => a! * b!, 1)!,
    from: fields.map((f, i) => `${f} ${values[i]}`).join(" × "),
  };
}

/**
 * The implied keys of `rules` that the config has every field of.
 *
 * @example Usage
 * ```ts
 * import { impliedKeys } from "./implied_keys.ts";
 * const keys = impliedKeys({ num_heads: 8 }, [["ssm.time_step_rank", "num_heads"], ["ssm.inner_size", "expand", "hidden_size"]]);
 * console.assert(keys.length === 1);
 * ```
 *
 * @param h The config.
 * @param rules Each a key and the fields whose product it is.
 * @returns The keys.
 */
export function impliedKeys(
  h: Readonly<Record<string, unknown>>,
  rules: readonly (readonly [string, ...string[]])[],
): ImpliedKey[] {
  return rules.flatMap(([key, ...fields]) => impliedProduct(h, key, ...fields) ?? []);
}
