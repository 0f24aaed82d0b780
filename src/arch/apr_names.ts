// This module is browser compatible.

/**
 * Tensor names between a Hugging Face checkpoint and the APR layout
 * realizar's `AprTransformer` looks up (a family's `apr.rename`), both ways.
 *
 * @module
 */

import type { Family } from "./family.ts";

const BLOCK = /^model\.layers\.(\d+)\.(.+)\.(weight|bias)$/;

function matcher(template: string): RegExp {
  const escaped = template.split("{E}").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${escaped.join("(\\d+)")}$`);
}

function rename(
  name: string,
  pairs: readonly (readonly [string, string])[],
  back: boolean,
): string {
  const block = BLOCK.exec(name);
  if (block === null) return name;
  for (const [hf, apr] of pairs) {
    const [from, to] = back ? [apr, hf] : [hf, apr];
    const m = matcher(from).exec(block[2]!);
    if (m !== null) {
      const piece = m[1] === undefined ? to : to.replaceAll("{E}", m[1]);
      return `model.layers.${block[1]}.${piece}.${block[3]}`;
    }
  }
  return name;
}

/**
 * The name realizar looks a Hugging Face tensor up under.
 *
 * @example Usage
 * ```ts
 * import { hfToAprName } from "./apr_names.ts";
 * import { MIXTRAL } from "./families/mixtral.ts";
 * console.assert(
 *   hfToAprName("model.layers.3.block_sparse_moe.experts.7.w2.weight", MIXTRAL) ===
 *     "model.layers.3.mlp.experts.7.down_proj.weight",
 * );
 * ```
 *
 * @param name A Hugging Face tensor name.
 * @param family Its family.
 * @returns realizar's name (the same when the family renames nothing).
 */
export function hfToAprName(name: string, family: Family): string {
  return rename(name, family.apr?.rename ?? [], false);
}

/**
 * The inverse of {@linkcode hfToAprName}: the checkpoint's own name.
 *
 * @param name A tensor name in realizar's layout.
 * @param family Its family.
 * @returns The Hugging Face name.
 */
export function aprToHfName(name: string, family: Family): string {
  return rename(name, family.apr?.rename ?? [], true);
}
