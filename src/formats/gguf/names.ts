// This module is browser compatible.

/**
 * Tensor names between GGUF and Hugging Face spellings: the family layer's
 * tables (`src/arch/names.ts`), offered where the GGUF format's users have
 * always found them, by architecture name (the layer's `Family` type stays
 * internal).
 *
 * @module
 */

import {
  ggufToHfName as archGgufToHfName,
  hfToGgufName as archHfToGgufName,
} from "../../arch/names.ts";

export { GGUF_HF_NAMED_ARCHITECTURES as GGUF_LLAMA_LIKE_ARCHITECTURES } from "../../arch/names.ts";

/**
 * Map a GGUF tensor name to its Hugging Face name.
 * Never throws. A name without a mapping is returned unchanged.
 *
 * @example Usage
 * ```ts
 * import { ggufToHfName } from "./names.ts";
 * console.assert(ggufToHfName("blk.3.ffn_down.weight") === "model.layers.3.mlp.down_proj.weight");
 * ```
 *
 * @param name A GGUF tensor name.
 * @param architecture The family's architecture name (`"phi3"`); llama's names when absent or unknown.
 * @returns The Hugging Face name, or `name` unchanged when it is not in the table.
 */
export function ggufToHfName(name: string, architecture?: string): string {
  return archGgufToHfName(name, architecture);
}

/**
 * Map a Hugging Face tensor name to its GGUF name: the inverse of
 * {@linkcode ggufToHfName}.
 * Never throws. A name without a mapping is returned unchanged.
 *
 * @example Usage
 * ```ts
 * import { hfToGgufName } from "./names.ts";
 * console.assert(hfToGgufName("lm_head.weight") === "output.weight");
 * ```
 *
 * @param name A Hugging Face tensor name.
 * @param architecture The family's architecture name; llama's names when absent or unknown.
 * @returns The GGUF name, or `name` unchanged when it is not in the table.
 */
export function hfToGgufName(name: string, architecture?: string): string {
  return archHfToGgufName(name, architecture);
}
