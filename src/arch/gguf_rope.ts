// This module is browser compatible.

/**
 * APR `rope_type` of a GGUF file, from its `general.architecture`: how
 * llama.cpp rotates it (`llama_model_rope_type()`, src/llama-model.cpp),
 * which for aprkit's families each family module says (`ggufRopeType`) and
 * for the other architectures llama.cpp names the table below holds. A GGUF
 * keeps the Q/K rows llama.cpp rotates, so NORM is APR's 0 and the rest 2.
 *
 * @module
 */

import type { GgufRopeType } from "./family.ts";
import { familiesOfGguf } from "./registry.ts";

/**
 * `llama_model_rope_type()` of the GGUF architectures no family of aprkit
 * writes (llama.cpp de3ff81), for GGUF sources of them.
 */
export const OTHER_GGUF_ROPE_TYPES: Readonly<Record<string, GgufRopeType>> = {
  deci: "norm",
  baichuan: "norm",
  internlm2: "norm",
  minicpm: "norm",
  xverse: "norm",
  arctic: "norm",
  deepseek: "norm",
  chameleon: "norm",
  grok: "neox",
  qwen: "neox",
  phimoe: "neox",
  plamo: "neox",
  orion: "neox",
  openelm: "neox",
  codeshell: "neox",
  exaone: "neox",
};

/**
 * APR's two values (APR_V2.md §3): 0 NORM; 2 NEOX, which M-RoPE is for text;
 * none for a model without RoPE.
 */
const APR_ROPE_TYPE: Readonly<Record<GgufRopeType, number | undefined>> = {
  norm: 0,
  neox: 2,
  mrope: 2,
  imrope: 2,
  none: undefined,
};

/**
 * llama.cpp's RoPE type of a GGUF architecture: its families' (which agree),
 * else the table's.
 *
 * @param ggufArchitecture `general.architecture`.
 * @returns The type, or `undefined` for an architecture aprkit does not know.
 */
export function ggufRopeType(ggufArchitecture: string): GgufRopeType | undefined {
  return familiesOfGguf(ggufArchitecture)[0]?.ggufRopeType ??
    (Object.hasOwn(OTHER_GGUF_ROPE_TYPES, ggufArchitecture)
      ? OTHER_GGUF_ROPE_TYPES[ggufArchitecture]
      : undefined);
}

/**
 * APR `rope_type` of a GGUF architecture's tensors as they are in the file.
 *
 * @example Usage
 * ```ts
 * import { aprRopeTypeOfGguf } from "./gguf_rope.ts";
 * console.assert(aprRopeTypeOfGguf("llama") === 0 && aprRopeTypeOfGguf("qwen2vl") === 2);
 * ```
 *
 * @param ggufArchitecture `general.architecture`.
 * @returns 0 (NORM) or 2 (NEOX), or `undefined` for an architecture aprkit does not know
 * or one without RoPE.
 */
export function aprRopeTypeOfGguf(ggufArchitecture: string): number | undefined {
  const type = ggufRopeType(ggufArchitecture);
  return type === undefined ? undefined : APR_ROPE_TYPE[type];
}
